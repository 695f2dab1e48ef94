"""scripts/role_docs.py: a role's README is its argument spec, rendered."""

from scripts import role_docs

SPEC = {"argument_specs": {
    "main": {"short_description": "Do C(one) thing", "description": ["First I(para).", "Second B(one)."],
             "options": {"r_b": {"type": "list", "elements": "str", "default": ["x"], "description": "List | pipe."},
                         "r_a": {"type": "str", "required": True, "choices": ["p", "q"], "description": "Pick."},
                         "r_c": {"type": "dict", "default": {}, "description": "Map.",
                                 "options": {"k": {"type": "bool", "default": False, "description": "Sub."}}}}},
    "extra": {"short_description": "Other entry", "options": {}},
}}


def test_markup_becomes_markdown():
    assert role_docs.markup("C(a) I(b) B(c) V(d) U(http://x) L(text, http://y)") == (
        "`a` *b* **c** `d` <http://x> [text](http://y)")


def test_render_lists_every_option_sorted_with_its_spec():
    text = role_docs.render("r", SPEC)
    lines = text.splitlines()
    assert lines[0] == role_docs.HEADER and "# kubescale.tuning.r" in lines
    assert "Do `one` thing" in lines and "First *para*." in lines and "Second **one**." in lines
    rows = [line for line in lines if line.lstrip().startswith("- `")]
    assert rows == [
        "- `r_a` (str; required; one of `p`, `q`): Pick.",
        "- `r_b` (list of str; default `[x]`): List | pipe.",
        "- `r_c` (dict; default `{}`): Map.",
        "  - `k` (bool; default `false`): Sub.",
    ]
    assert "## Entry point `extra`" in lines and "    tasks_from: extra" in lines and "No variables." in lines


def test_the_checked_in_readmes_are_current(capsys):
    assert role_docs.main(["--check"]) == 0, capsys.readouterr().out
