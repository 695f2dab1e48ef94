#!/usr/bin/env bash
# Converge the lab with playbooks/site.yml and prove four things:
#   1. `--check` predicts the real run task by task: on every node the same tasks, in the same order, with the same
#      status (ok, changed, skipped, failed), from each task's result (callbacks/task_results.py), not the recap's counts;
#   2. the real run succeeds everywhere;
#   3. on a fresh lab (KUBESCALE_LAB_FRESH=1, as `make test` gives it), the first run changes what it must
#      (tests/integration/first_run_changes.yml): the SSD moves, the Events wiring, the scheduler, the kubelet file;
#   4. a second run changes nothing (changed=0 on every node). With KUBESCALE_SITE_SECOND_RUN=0 (make lab-test) that
#      run is left to test_kubeadm_lifecycle.py, which runs next: its site run, after the real kubeadm upgraded every
#      node, must change nothing on every node. It is a second run on the same converged nodes, after kubeadm
#      re-rendered what it manages, so a task that is not idempotent fails it just as it would fail this one.
set -euo pipefail
cd "$(dirname "$0")/../.."
logs="$(mktemp -d)"
poller=""
api_poller=""
# shellcheck disable=SC2086
trap '[ -z "$poller" ] || { stop_polls; kill $poller 2>/dev/null; }; rm -rf "$logs"' EXIT
recap() { sed -n '/PLAY RECAP/,$p' "$1" | grep -E ' : ok=' | sed 's/ *$//'; }

export ANSIBLE_CALLBACK_PLUGINS="$PWD/tests/integration/callbacks" ANSIBLE_CALLBACKS_ENABLED=task_results
echo "site: check mode (--check --diff)"
KUBESCALE_TASK_RESULTS="$logs/check.jsonl" ansible-playbook playbooks/site.yml --check --diff > "$logs/check" || { tail -n 60 "$logs/check" >&2; exit 1; }
# While the real run moves etcd onto the SSD member by member, each cluster must answer linearizable reads (a quorum)
# the whole time: poll it through every endpoint from a member's node - the main etcd (systemd members) and the
# kubeadm one (static pods, TLS with kubeadm's healthcheck client certificate).
endpoints() {
  python3 -c 'import yaml,sys; c=yaml.safe_load(open(sys.argv[1]))["all"]["children"]; h=(c.get(sys.argv[2]) or {}).get("hosts") or {}; print(",".join("%s://%s:2379" % (sys.argv[3], v["lab_ip"]) for v in h.values()))' inventories/lab/hosts.yml "$1" "$2"
}
etcd_endpoints="$(endpoints etcd http)"
kubeadm_endpoints="$(endpoints etcd_kubeadm https)"
pki=/etc/kubernetes/pki/etcd
poll_stops=()
poll() {  # poll NAME NODE ENDPOINTS [etcdctl TLS args]
  local name="$1" node="$2" eps="$3" stop="/run/kubescale-site-poll-$1.stop"
  shift 3
  poll_stops+=("$node:$stop")
  # the reads in a loop on the node, in one `docker exec` for the whole run (tests/integration/etcd_reads.sh)
  docker exec -i "$node" bash -s -- "$name" "$eps" "$stop" "$@" < tests/integration/etcd_reads.sh >> "$logs/poll" &
  pollers+=($!)
}
stop_polls() {
  local s
  for s in "${poll_stops[@]}"; do docker exec "${s%%:*}" touch "${s#*:}" 2>/dev/null || true; done
  poll_stops=()
}
pollers=()
if [ -n "$etcd_endpoints" ]; then poll main kslab-etcd-1 "$etcd_endpoints"; fi
if [ -n "$kubeadm_endpoints" ]; then
  poll kubeadm kslab-etcd-kubeadm-1 "$kubeadm_endpoints" --cacert=$pki/ca.crt --cert=$pki/healthcheck-client.crt \
    --key=$pki/healthcheck-client.key
fi
# Reads through the controlPlaneEndpoint (the lab's HAProxy in front of every kube-apiserver; their objects live in the
# external etcd while that moves), a new connection each, with admin.conf's credentials. With two or more control plane
# nodes the rollout restarts one API server at a time and waits for its /readyz, and each takes itself out of the load
# balancer before it stops (--shutdown-delay-duration): not one read may fail. A single API server's restarts are
# counted and shown.
kubectl_bin="$(bash lab/k8s/build.sh 2>/dev/null | tail -1)/bin/kubectl"
admin_conf=lab/.state/pki/k8s/admin.conf
if [ -f "$admin_conf" ]; then
  # one process for the whole run, the reads in it (tests/integration/api_reads.py)
  PYTHONPATH=.collections python3 tests/integration/api_reads.py "$admin_conf" >> "$logs/api" &
  api_poller=$!
  pollers+=($!)
fi
poller="${pollers[*]}"
echo "site: first run"
KUBESCALE_TASK_RESULTS="$logs/first.jsonl" ansible-playbook playbooks/site.yml > "$logs/first" || { tail -n 60 "$logs/first" >&2; exit 1; }
if [ -n "$poller" ]; then
  # the etcd reads end at their stop files (their last lines kept), the API's here
  stop_polls
  [ -z "$api_poller" ] || kill "$api_poller"
  # shellcheck disable=SC2086
  wait $poller 2>/dev/null || true
  poller=""
  if grep -Eq '^[a-z]+ failed ' "$logs/poll"; then
    echo "site: etcd lost its quorum during the run: $(grep -Ec '^[a-z]+ failed ' "$logs/poll") failed reads" >&2
    grep -E '^[a-z]+ (failed|retried) ' "$logs/poll" | head >&2
    exit 1
  fi
  if [ -f "$logs/api" ]; then
    fails="$(grep "^api failed" "$logs/api" | cut -d' ' -f3 || true)"
    nfail="$(echo "$fails" | grep -c . || true)"
    cps="$(endpoints kube_control_plane https | tr ',' '\n' | grep -c . || true)"
    echo "site: the controlPlaneEndpoint answered $(grep -c "^api ok" "$logs/api") of $(wc -l < "$logs/api") reads" \
      "polled during the run; $nfail failed${fails:+ ($(echo "$fails" | head -1)-$(echo "$fails" | tail -1))}" \
      "($cps control plane nodes)"
    if [ "$cps" -ge 2 ] && [ "$nfail" -gt 0 ]; then
      echo "site: reads through the controlPlaneEndpoint failed while $cps API servers rolled one at a time" >&2
      exit 1
    fi
  fi
  for c in main kubeadm; do
    if grep -q "^$c " "$logs/poll"; then
      retried="$(grep -c "^$c retried" "$logs/poll" || true)"
      eps="$etcd_endpoints"; [ "$c" = main ] || eps="$kubeadm_endpoints"
      members="$(tr ',' '\n' <<<"$eps" | grep -c .)"
      # each member stops once for its move (twice at most, when the role puts it back): one read asked twice per stop
      if [ "$retried" -gt $((2 * members)) ]; then
        echo "site: etcd ($c): $retried reads reached a stopping member, more than two per member" >&2
        exit 1
      fi
      echo "site: etcd ($c) answered all $(grep -c "^$c ok" "$logs/poll") linearizable reads polled during the run" \
        "($retried asked twice: they reached a member as it stopped)"
      grep "^$c retried" "$logs/poll" | head -n 6 || true
    fi
  done
fi
recap "$logs/first"
echo "site: the first run's slowest tasks (seconds until the last host answered, added up over a rolling play's batches)"
python3 tests/integration/task_results.py slowest "$logs/first.jsonl" 12
python3 tests/integration/task_results.py compare "$logs/check.jsonl" "$logs/first.jsonl"
if [ "${KUBESCALE_LAB_FRESH:-0}" = 1 ]; then
  ansible-inventory --list > "$logs/inventory.json"
  python3 tests/integration/task_results.py expect "$logs/first.jsonl" tests/integration/first_run_changes.yml \
    "$logs/inventory.json"
fi
if [ "${KUBESCALE_SITE_SECOND_RUN:-1}" = 0 ]; then
  echo "site: the second run is test_kubeadm_lifecycle.py's, after kubeadm's upgrade (changed=0 on every node)"
else
  echo "site: second run (must report changed=0 on every node)"
  KUBESCALE_TASK_RESULTS="$logs/second.jsonl" ansible-playbook playbooks/site.yml > "$logs/second" || { tail -n 60 "$logs/second" >&2; exit 1; }
  recap "$logs/second"
  bad="$(recap "$logs/second" | grep -Ev 'changed=0 .*unreachable=0 +failed=0' || true)"
  if [ -n "$bad" ]; then
    echo "site: second run was not idempotent:" >&2
    echo "$bad" >&2
    grep -E '^(changed|failed|fatal)' "$logs/second" >&2 || true
    exit 1
  fi
  echo "site: second run changed=0 on all $(recap "$logs/second" | wc -l) nodes"
fi
if [ -f "$admin_conf" ]; then
  for _ in $(seq 1 90); do
    [ "$("$kubectl_bin" --kubeconfig "$admin_conf" --request-timeout=3s get --raw /readyz 2>/dev/null)" = ok ] && break
    sleep 2
  done
  [ "$("$kubectl_bin" --kubeconfig "$admin_conf" --request-timeout=3s get --raw /readyz 2>&1)" = ok ] ||
    { echo "site: kube-apiserver is not ready after the runs" >&2; exit 1; }
  echo "site: kube-apiserver answers /readyz after the runs"
fi
