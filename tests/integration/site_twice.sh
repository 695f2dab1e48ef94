#!/usr/bin/env bash
# Converge the lab with playbooks/site.yml and prove three things:
#   1. `--check` predicts the real run: the same ok/changed/skipped counts on every node;
#   2. the real run succeeds everywhere;
#   3. a second run changes nothing (changed=0 on every node).
set -euo pipefail
cd "$(dirname "$0")/../.."
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
recap() { sed -n '/PLAY RECAP/,$p' "$1" | grep -E ' : ok=' | sed 's/ *$//'; }
# One line per host and task result ("host<TAB>status<TAB>task"), sorted: what differs between two runs.
results() {
  awk '/^TASK \[/ { t = $0; sub(/^TASK \[/, "", t); sub(/\] \**$/, "", t) }
       /^(ok|changed|skipping|fatal|failed): \[/ {
         st = $1; sub(/:$/, "", st); h = $2; gsub(/[\[\]]/, "", h); print h "\t" st "\t" t }' "$1" | sort
}

echo "site: check mode (--check --diff)"
ansible-playbook playbooks/site.yml --check --diff > "$logs/check" || { tail -n 60 "$logs/check" >&2; exit 1; }
echo "site: first run"
ansible-playbook playbooks/site.yml > "$logs/first" || { tail -n 60 "$logs/first" >&2; exit 1; }
recap "$logs/first"
if [ "$(recap "$logs/check")" != "$(recap "$logs/first")" ]; then
  echo "site: --check did not predict the real run:" >&2
  diff <(recap "$logs/check") <(recap "$logs/first") >&2 || true
  echo "site: task results that differ (< check, > real run):" >&2
  diff <(results "$logs/check") <(results "$logs/first") >&2 || true
  exit 1
fi
echo "site: --check predicted the real run exactly"
echo "site: second run (must report changed=0 on every node)"
ansible-playbook playbooks/site.yml > "$logs/second" || { tail -n 60 "$logs/second" >&2; exit 1; }
recap "$logs/second"
bad="$(recap "$logs/second" | grep -Ev 'changed=0 .*unreachable=0 +failed=0' || true)"
if [ -n "$bad" ]; then
  echo "site: second run was not idempotent:" >&2
  echo "$bad" >&2
  grep -E '^(changed|failed|fatal)' "$logs/second" >&2 || true
  exit 1
fi
echo "site: second run changed=0 on all $(recap "$logs/second" | wc -l) nodes"
