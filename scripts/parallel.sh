#!/usr/bin/env bash
# Run named commands side by side, each line of output prefixed with its name, and fail when any of them fails.
#   scripts/parallel.sh "molecule=make molecule" "lab-test=make lab-test"
# The molecule scenarios and the lab use their own containers, networks and loop devices, so they can share the
# machine: make test runs them this way (about 15 minutes each, side by side instead of one after the other).
set -uo pipefail
logs="$(mktemp -d)"
pids=()
names=()
# shellcheck disable=SC2317  # called by the trap
cleanup() { for p in "${pids[@]}"; do kill -- "-$p" 2>/dev/null || true; done; rm -rf "$logs"; }
trap cleanup EXIT INT TERM
set -m  # each job in its own process group, so a failure elsewhere can stop all of it
for spec in "$@"; do
  name="${spec%%=*}"
  cmd="${spec#*=}"
  (
    start=$SECONDS
    # stdin from /dev/null: ansible refuses a non-blocking stdin, which a background job may inherit
    # each line prefixed with the stream's name and its seconds since the start, to see where a stream's time goes
    bash -c "$cmd" < /dev/null 2>&1 | tee "$logs/$name.log" |
      while IFS= read -r line; do printf '[%s %ds] %s\n' "$name" "$((SECONDS - start))" "$line"; done
    rc=${PIPESTATUS[0]}
    echo "$rc $((SECONDS - start))" > "$logs/$name.rc"
    exit "$rc"
  ) &
  pids+=($!)
  names+=("$name")
done
set +m
failed=0
failures=()
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || true
  read -r rc secs < "$logs/${names[$i]}.rc" || { rc=1; secs='?'; }
  if [ "$rc" = 0 ]; then
    echo "parallel: ${names[$i]} passed in ${secs}s"
  else
    echo "parallel: ${names[$i]} FAILED (exit $rc) after ${secs}s" >&2
    failed=1
    failures+=("${names[$i]}")
  fi
done
pids=()
# A failed stream's own reasons, again, last: its lines are far up, among the other streams' output, and a CI page
# often shows only the end of the log. pytest's summary lines (FAILED/ERROR with the message) and the stream's last
# lines; a nested parallel.sh has already put its own reasons at its end.
for name in "${failures[@]}"; do
  echo "parallel: why ${name} failed:" >&2
  { grep -E '^(FAILED|ERROR) |^E   ' "$logs/$name.log" | tail -n 40; tail -n 15 "$logs/$name.log"; } \
    | sed "s/^/[$name] /" >&2
done
exit "$failed"
