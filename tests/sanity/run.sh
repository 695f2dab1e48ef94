#!/usr/bin/env bash
# ansible-test sanity on the collection placed under ansible_collections/kubescale/tuning in a temp dir.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$repo/.venv"
site="$("$venv/bin/python" -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')"
pip_version="$(sed -n "s/^ *pip='\([0-9.]*\)',.*/\1/p" "$site/_internal/python_requirements.py" | head -n1)"
cache="$HOME/.ansible/test/cache"
mkdir -p "$cache"
cp "$repo/tests/sanity/get_pip_standin.py" "$cache/get_pip_${pip_version//./_}.py"

tmp="$(mktemp -d /tmp/kubescale-sanity.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
dest="$tmp/ansible_collections/kubescale/tuning"
mkdir -p "$dest"
(cd "$repo" && git ls-files --cached --others --exclude-standard -z | xargs -0 cp --parents -t "$dest")
# The collections its plugins extend (azure.azcollection's doc fragments), from the pinned pip ansible package.
azure="$("$venv/bin/python" -c 'import importlib.util as u; print(list(u.find_spec("ansible_collections.azure.azcollection").submodule_search_locations)[0])')"
mkdir -p "$tmp/ansible_collections/azure"
ln -s "$azure" "$tmp/ansible_collections/azure/azcollection"
cd "$dest"
git init -q && git add -A && git -c user.email=ci@invalid -c user.name=ci commit -qm sanity
export PATH="$venv/bin:$PATH"
ansible-test sanity --venv --python 3.11 --color no "$@"
