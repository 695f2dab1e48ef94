#!/usr/bin/env bash
# Run a command in a CPU cgroup of its own, at a relative weight (cgroup v1 cpu.shares; 1024 is the default):
#   scripts/cpu_share.sh checks 512 make lint unit
# make test runs its checks stream at half weight beside the lab: when both want the CPU, the lab's containers (docker's
# cgroup, 1024) and the lab's controller (the session's group, 1024) get more of it, and the checks, which finish well
# before the lab's tests, take what the lab leaves. Where no cgroup can be made (no root, no cpu controller), the
# command runs at the default weight and a line says so.
set -uo pipefail
name="$1" shares="$2"
shift 2
v1=/sys/fs/cgroup/cpu
v2=/sys/fs/cgroup
if [ -w "$v1/cgroup.procs" ]; then
  dir="$v1/kubescale-$name" file=cpu.shares value="$shares" root="$v1"
elif grep -qw cpu "$v2/cgroup.controllers" 2>/dev/null && [ -w "$v2/cgroup.procs" ]; then
  # cgroup v2: cpu.weight 1-10000, 100 the default
  dir="$v2/kubescale-$name" file=cpu.weight value="$(( shares * 100 / 1024 > 0 ? shares * 100 / 1024 : 1 ))" root="$v2"
  grep -qw cpu "$v2/cgroup.subtree_control" || echo +cpu > "$v2/cgroup.subtree_control" 2>/dev/null || true
else
  dir=""
fi
if [ -n "$dir" ] && mkdir -p "$dir" 2>/dev/null && echo "$value" > "$dir/$file" 2>/dev/null \
    && echo $$ > "$dir/cgroup.procs" 2>/dev/null; then
  "$@"
  rc=$?
  echo $$ > "$root/cgroup.procs" 2>/dev/null || true
  rmdir "$dir" 2>/dev/null || true  # left behind while a process of the command's still runs; harmless
  exit "$rc"
fi
echo "cpu_share: no CPU cgroup can be made here; $name runs at the default weight" >&2
exec "$@"
