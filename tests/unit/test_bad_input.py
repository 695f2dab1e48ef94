"""tests/integration/bad_input.py: a bad value for every variable whose spec can refuse one, each refused by
ansible-core's own validator naming the variable; every other variable on the free list, with its reason."""

import importlib.util
import os

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integration", "bad_input.py")
_SPEC = importlib.util.spec_from_file_location("bad_input", _PATH)
bad_input = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bad_input)

SPECS = bad_input.specs()
CASES = bad_input.cases()


def untemplated(options):
    """The options without the defaults that are templates: the role's defaults/main.yml gives the host its value,
    templated before the spec sees it (plugin_utils/_role_specs.py)."""
    return dict((n, dict((k, v) for k, v in o.items() if not (k == "default" and "{{" in str(v))))
                for n, o in options.items())


def refusals(options, values):
    return list(ArgumentSpecValidator(untemplated(options)).validate(values, validate_role_argument_spec=True)
                .error_messages)


def names(message, cases):
    """The probed variables a refusal names (a list of dicts' element errors name it after the list)."""
    return [n for n in cases if "'%s'" % n in message or " %s " % n in message or message.endswith(" " + n)
            or message.startswith(n + ".")]


def test_every_public_variable_is_probed_or_listed_free_with_a_reason():
    names = set(n for options in SPECS.values() for n in options)
    probed = set(n for cases in CASES.values() for n in cases)
    assert probed | set(bad_input.free()) == names and not probed & set(bad_input.free())
    assert len(names) == 199 and len(probed) == 111
    assert all(reason.strip() for reason in bad_input.free().values())


@pytest.mark.parametrize("role", sorted(SPECS))
def test_each_roles_defaults_pass_and_all_its_bad_values_at_once_are_each_refused_by_name(role):
    """All at once, as a class playbook's one validation task meets them: each refused in its own words."""
    options = SPECS[role]
    assert refusals(options, {}) == []
    cases = CASES.get(role, {})
    messages = refusals(options, dict((n, v) for n, (v, _w) in cases.items()))
    for name, (_value, words) in cases.items():
        assert [m for m in messages if m.startswith(words)], (name, messages)
    assert all(names(m, cases) for m in messages), messages  # and nothing else refused


@pytest.mark.parametrize("role", sorted(SPECS))
def test_each_bad_value_alone_is_refused(role):
    for name, (value, words) in CASES.get(role, {}).items():
        messages = refusals(SPECS[role], {name: value})
        assert messages[0].startswith(words) and all(names(m, {name: 0}) == [name] for m in messages), messages


def test_a_variable_neither_probed_nor_listed_and_a_needless_listing_are_refused():
    specs = {"r": {"r_name": {"type": "str"}, "r_count": {"type": "int"}}}
    assert bad_input.cases(specs, {"r_name": "a name"}) == {"r": {"r_count": ("many", "argument 'r_count' is of type")}}
    with pytest.raises(ValueError, match=r"add \(their specs take any value\) \['r_name'\]"):
        bad_input.cases(specs, {})
    with pytest.raises(ValueError, match=r"remove \(their specs refuse a value, so they are probed\) \['r_count'\]"):
        bad_input.cases(specs, {"r_name": "a name", "r_count": "a count"})
    with pytest.raises(ValueError, match=r"remove \(in no spec\) \['gone'\]"):
        bad_input.cases(specs, {"r_name": "a name", "gone": "a name"})


def test_choices_are_left_by_a_value_of_the_right_type():
    assert bad_input.bad_value("x", {"type": "int", "choices": [1, 2]}) == (1002, "value of x must be one of")
    assert bad_input.bad_value("x", {"type": "list", "elements": "str", "choices": ["a"]}) == (
        [bad_input.NOT_A_CHOICE], "value of x must be one or more of")
    assert bad_input.bad_value("x", {"type": "path"}) is None and bad_input.bad_value("x", {"type": "raw"}) is None
