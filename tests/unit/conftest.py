"""Make `ansible_collections.kubescale.tuning` importable from the repo checkout."""

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LINK_ROOT = os.path.join(REPO, ".collections")
LINK = os.path.join(LINK_ROOT, "ansible_collections", "kubescale", "tuning")
if not os.path.exists(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    os.symlink(os.path.relpath(REPO, os.path.dirname(LINK)), LINK)
if LINK_ROOT not in sys.path:
    sys.path.insert(0, LINK_ROOT)
sys.path.insert(0, os.path.join(REPO, "lab"))
