"""Bad input for every public variable, generated from the roles' meta/argument_specs.yml.

Each variable whose spec can refuse a value gets one: outside its choices, or of a type its spec cannot convert to.
A variable whose spec takes any value (a free string or path, or raw) is in tests/bad_input_free.yml with the reason;
`cases` refuses a variable that is in neither, and a free-listed one the spec could refuse (the list stays exact).

Used by tests/unit/test_bad_input.py (every case is refused by ansible-core's ArgumentSpecValidator, naming the
variable) and tests/integration/test_bad_input.py (the class playbooks refuse them all before any change).
"""

import glob
import os

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES_DIR = os.path.join(REPO, "roles")
FREE_FILE = os.path.join(REPO, "tests", "bad_input_free.yml")
NOT_A_CHOICE = "kubescale-not-a-choice"
# A value of the wrong type for each type the specs use, and how ansible-core's validator says so.
WRONG_TYPE = {
    "int": "many",
    "float": "many",
    "bool": "maybe",
    "list": {"not": "a list"},
    "dict": "not-a-dict",
}


def specs(roles_dir=ROLES_DIR):
    """{role: {variable: option}} of every role's main entry point (the other entry points take a subset)."""
    out = {}
    for path in sorted(glob.glob(os.path.join(roles_dir, "*", "meta", "argument_specs.yml"))):
        role = path.split(os.sep)[-3]
        with open(path) as f:
            entry_points = yaml.safe_load(f)["argument_specs"]
        out[role] = dict(entry_points["main"].get("options") or {})
        for name, spec in entry_points.items():
            extra = set(spec.get("options") or {}) - set(out[role])
            if extra:
                raise ValueError("%s: entry point %s has variables main has not: %s" % (role, name, sorted(extra)))
    return out


def bad_value(name, option):
    """(value, words of the refusal naming the variable) for a value the option's spec refuses; None when its spec
    takes any value."""
    kind = option.get("type", "str")
    choices = option.get("choices")
    if choices:
        if kind == "list":
            return [NOT_A_CHOICE], "value of %s must be one or more of" % name
        if kind in ("int", "float"):
            return max(choices) + 1000, "value of %s must be one of" % name
        return NOT_A_CHOICE, "value of %s must be one of" % name
    if kind in WRONG_TYPE:
        return WRONG_TYPE[kind], "argument '%s' is of type" % name
    return None


def free(path=FREE_FILE):
    """{variable: reason} of tests/bad_input_free.yml."""
    with open(path) as f:
        data = yaml.safe_load(f)
    reasons = data["reasons"]
    out = {}
    for reason, names in data["free"].items():
        if reason not in reasons:
            raise ValueError("%s: %s is not one of its reasons" % (path, reason))
        for name in names:
            out[name] = reasons[reason]
    return out


def cases(all_specs=None, free_list=None):
    """{role: {variable: (bad value, words of the refusal)}} for every variable not on the free list. ValueError
    naming the variables neither probed nor listed, listed but probeable, or listed but in no spec."""
    all_specs = specs() if all_specs is None else all_specs
    free_list = free() if free_list is None else free_list
    out, unlisted, needless = {}, [], []
    known = set()
    for role, options in all_specs.items():
        for name, option in options.items():
            known.add(name)
            bad = bad_value(name, option)
            if bad is None and name not in free_list:
                unlisted.append(name)
            elif bad is not None and name in free_list:
                needless.append(name)
            elif bad is not None:
                out.setdefault(role, {})[name] = bad
    unknown = sorted(set(free_list) - known)
    if unlisted or needless or unknown:
        raise ValueError("tests/bad_input_free.yml: add (their specs take any value) %s; remove (their specs refuse "
                         "a value, so they are probed) %s; remove (in no spec) %s" % (unlisted, needless, unknown))
    return out


def extra_vars(all_cases, roles):
    """The extra vars feeding each of the roles' variables its bad value."""
    return dict((name, value) for role in roles for name, (value, _words) in all_cases[role].items())
