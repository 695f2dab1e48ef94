"""The link that makes the checkout `ansible_collections.kubescale.tuning` (pytest.ini puts .collections on the path;
scripts/deps.sh makes the link too)."""

import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LINK_ROOT = os.path.join(REPO, ".collections")
LINK = os.path.join(LINK_ROOT, "ansible_collections", "kubescale", "tuning")
if not os.path.exists(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    os.symlink(os.path.relpath(REPO, os.path.dirname(LINK)), LINK)
