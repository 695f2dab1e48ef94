#!/usr/bin/env bash
# Converge the lab with playbooks/site.yml, then run it again: the second run must change nothing.
set -euo pipefail
cd "$(dirname "$0")/../.."
log1="$(mktemp)"; log2="$(mktemp)"
trap 'rm -f "$log1" "$log2"' EXIT
echo "site: first run"
ansible-playbook playbooks/site.yml | tee "$log1" | sed -n '/PLAY RECAP/,$p'
echo "site: second run (must report changed=0 on every node)"
ansible-playbook playbooks/site.yml > "$log2"
recap="$(sed -n '/PLAY RECAP/,$p' "$log2" | grep -E 'ok=')"
echo "$recap"
hosts="$(echo "$recap" | awk '{print $1}' | sort -u | wc -l)"
bad="$(echo "$recap" | grep -Ev 'changed=0 .*unreachable=0 +failed=0' || true)"
if [ -n "$bad" ]; then
  echo "site: second run was not idempotent:" >&2
  echo "$bad" >&2
  grep -E '^(changed|failed|fatal)' "$log2" >&2 || true
  exit 1
fi
echo "site: second run changed=0 on all $hosts recap lines"
