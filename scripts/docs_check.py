"""Keep the user docs for users: README.md within its size, no table cell too long to read, and no history in
README.md, docs/ or the roles' READMEs (commit hashes, "this session"). History goes in changelog fragments and
commit messages.

    python3 scripts/docs_check.py   # exit 1 naming each file, line and what it found

`make lint` runs it.
"""
import glob
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README_MAX_BYTES = 16 * 1024
# a commit named the way git abbreviates it: 7-40 hex digits with at least one letter and one digit (a plain number,
# or a word such as "deadbee"... with no digit, is not one)
COMMIT = re.compile(r"(?<![0-9A-Za-z_./:-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![0-9A-Za-z_-])")
HISTORY = re.compile(r"\bthis session\b", re.IGNORECASE)
CELL_MAX = 300  # characters in one table cell


def docs():
    paths = [os.path.join(REPO, "README.md")]
    paths += sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))
    paths += sorted(glob.glob(os.path.join(REPO, "roles", "*", "README.md")))
    return paths


def problems(path, text):
    rel = os.path.relpath(path, REPO)
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in COMMIT.finditer(line):
            out.append("%s:%d: a commit hash (%s): name what it was, or put it in the changelog"
                       % (rel, number, match.group(0)))
        if HISTORY.search(line):
            out.append("%s:%d: 'this session' is history, not a user's doc" % (rel, number))
        if line.startswith("|"):
            longest = max(len(c.strip()) for c in line.strip().strip("|").split(" | "))
            if longest > CELL_MAX:
                out.append("%s:%d: a table cell of %d characters (at most %d): make it a paragraph or a list"
                           % (rel, number, longest, CELL_MAX))
    return out


def main():
    found = []
    readme = os.path.join(REPO, "README.md")
    size = os.path.getsize(readme)
    if size > README_MAX_BYTES:
        found.append("README.md: %d bytes, over %d: move detail to docs/" % (size, README_MAX_BYTES))
    for path in docs():
        with open(path, encoding="utf-8") as f:
            found += problems(path, f.read())
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
