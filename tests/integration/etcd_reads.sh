#!/usr/bin/env bash
# Linearizable reads of /kubescale-test/1 through every endpoint, two a second, until the stop file appears (or two
# hours pass, should whoever started it die without creating it). site_twice.sh runs it on a member's node, in one
# `docker exec` for the whole run (an exec a read cost the machine more CPU than the read):
#   docker exec -i NODE bash -s -- NAME ENDPOINTS STOP_FILE [etcdctl TLS args] < tests/integration/etcd_reads.sh
# Each read prints "NAME ok", or "NAME failed TIME: error"; one asked a second time prints "NAME retried TIME: error"
# first.
name="$1" eps="$2" stop="$3"
shift 3
rm -f "$stop"
get() { etcdctl --endpoints="$eps" "$@" --command-timeout=5s get /kubescale-test/1 --print-value-only 2>&1 || true; }
while [ ! -e "$stop" ] && [ "$SECONDS" -lt 7200 ]; do
  out="$(get "$@")"
  # A read that reached a member in the instant it stops (a TLS one answers with grpc-go's empty 200, see
  # tests/integration/test_etcd.py, Poller), or that ran out of its 5 s while this 2-core machine, saturated by
  # make test, handed the stopping leader's role on: asked once more at once, counted apart (at most two per
  # member's move, site_twice.sh) and its error kept; a second failure in a row is a failure.
  if [ "$out" != value-1 ]; then
    echo "$name retried $(date +%T): $(tr '\n' ' ' <<<"$out" | cut -c1-200)"
    sleep 0.2
    out="$(get "$@")"
  fi
  if [ "$out" = value-1 ]; then echo "$name ok"; else echo "$name failed $(date +%T): $(tr '\n' ' ' <<<"$out" | cut -c1-200)"; fi
  sleep 0.5
done
