"""Write the nested form of node_state's options (doc fragment kubescale.tuning.node_state.nested) from its top-level
form (kubescale.tuning.node_state, the module's own options) and the fact option (kubescale.tuning.fact), so the
two cannot drift apart. ansible-test reads doc fragments as literal strings, so the nested one is written out here.

    python3 scripts/node_state_doc.py           # (re)write plugins/doc_fragments/node_state.py's NESTED
    python3 scripts/node_state_doc.py --check   # fail when it is not what the top-level options give

`make lint` runs the check.
"""
import argparse
import ast
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FRAGMENT = os.path.join(REPO, "plugins", "doc_fragments", "node_state.py")
FACT = os.path.join(REPO, "plugins", "doc_fragments", "fact.py")
OPTIONS = ("directories", "files", "dropins", "unit_dir", "merges", "links", "units", "fact")
HEAD = '''
options:
  node_state:
    description:
      - The rest of the tuning's state on the node - directories, files, drop-ins, config merges, links, systemd units
        and its local fact - applied in this same call once the module's own work is done (see its description for
        when), exactly as M(kubescale.tuning.node_state) applies its options of the same names, with the same
        validation, check and diff mode; its changes are reported under RV(node_state).
      - Validated before anything changes. A file given by O(node_state.files[].src) is sent by its sha256 by this
        module's action; when the node's file differs, the module changes nothing and the action runs it once more
        with the text.
    type: dict
    suboptions:
'''


def literal(path, name):
    """The string literal assigned to `name` in the class of a doc fragment file."""
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return node.value.value
    raise SystemExit("%s: no %s" % (path, name))


def nested(top, fact):
    """The options under `node_state: suboptions:`, their references to one another made O(node_state.…)."""
    body = top.split("options:\n", 1)[1] + fact.split("options:\n", 1)[1]
    body = re.sub(r"O\((%s)\b" % "|".join(OPTIONS), r"O(node_state.\1", body)
    return HEAD + "".join(("    " + line) if line.strip() else line for line in body.splitlines(True))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when NESTED is stale")
    args = parser.parse_args(argv)
    text = open(FRAGMENT).read()
    want = nested(literal(FRAGMENT, "DOCUMENTATION"), literal(FACT, "DOCUMENTATION"))
    match = re.search(r'(    NESTED = r""")(.*?)(""")', text, re.S)
    if not match:
        raise SystemExit("%s: no NESTED = r\"\"\"...\"\"\"" % FRAGMENT)
    if match.group(2) == want:
        return 0
    if args.check:
        print("%s: NESTED is stale; run python3 scripts/node_state_doc.py" % FRAGMENT)
        return 1
    open(FRAGMENT, "w").write(text[:match.start(2)] + want + text[match.end(2):])
    print("wrote NESTED in %s" % FRAGMENT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
