"""make test runs every integration and chaos test module once: the Makefile names each one, by path, in the recipes
of `lab-test` (its serial stages and its three streams) and `test` (the baked join, the execution environment). A
module the recipes do not name would never run; one named twice would run twice, in two streams at once."""

import collections
import glob
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = re.compile(r"tests/(?:integration|chaos)/test_\w+\.py")


def recipe(makefile, target):
    """The recipe lines of `target`, each `$(NAME)` replaced by the variable's value."""
    lines = makefile.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"%s:(\s|$)" % re.escape(target), line))
    body = []
    for line in lines[start + 1:]:
        if not line.startswith("\t"):
            break
        body.append(line)
    values = dict(re.findall(r"^(\w+)\s*\??=\s*(.*)$", makefile, re.M))
    return re.sub(r"\$\((\w+)\)", lambda m: values.get(m.group(1), m.group(0)), "\n".join(body))


def named_in(makefile, targets):
    return collections.Counter(m for target in targets for m in MODULE.findall(recipe(makefile, target)))


def test_every_test_module_is_named_once_in_make_tests_recipes():
    with open(os.path.join(REPO, "Makefile")) as f:
        makefile = f.read()
    named = named_in(makefile, ["lab-test", "test"])
    on_disk = {os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, "tests", "integration", "test_*.py"))
               + glob.glob(os.path.join(REPO, "tests", "chaos", "test_*.py"))}
    assert sorted(on_disk - set(named)) == [], "modules make test never runs"
    assert sorted(set(named) - on_disk) == [], "modules named but not in the tree"
    assert sorted(m for m, n in named.items() if n > 1) == [], "modules named more than once"


def test_the_recipe_reader_expands_variables_and_stops_at_the_next_target():
    makefile = "X = pytest tests/integration/test_x.py\n\nt: dep\n\t$(X)\n\tpytest tests/chaos/test_y.py\nu:\n" \
               "\tpytest tests/integration/test_z.py\n"
    assert named_in(makefile, ["t"]) == {"tests/integration/test_x.py": 1, "tests/chaos/test_y.py": 1}
