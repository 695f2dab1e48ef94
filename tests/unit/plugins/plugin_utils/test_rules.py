"""The rules check_vars and the `checks` of the modules' actions evaluate, with ansible-core's own Templar."""

import pytest
from ansible.errors import AnsibleActionFail
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.kubescale.tuning.plugins.plugin_utils import _rules as R


def templar(**variables):
    return Templar(loader=DataLoader(), variables=variables)


def rule(that, msg, **extra):
    that = [trust_as_template(c) for c in that] if isinstance(that, list) else trust_as_template(that)
    return dict(that=that, msg=trust_as_template(msg), **extra)


def test_all_rules_hold():
    assert R.evaluate(templar(a=1, b=[1, 2]), [rule(["a == 1", "b | length == 2"], "never"), rule("a < 2", "never")]) \
        == (None, [])


def test_the_first_rule_that_does_not_hold_fails_with_its_message_templated():
    failure, warnings = R.evaluate(templar(a=5), [
        rule("a > 1", "not this one"),
        rule(["a > 2", "a < 3"], "a ({{ a }}) must be below 3"),
        rule("a == 0", "nor this one, which is never reached"),
    ])
    assert failure == dict(failed=True, rule=1, assertion="a < 3", checked=2, msg="a (5) must be below 3")
    assert warnings == []


def test_a_later_rule_may_rely_on_an_earlier_one():
    # b is checked to be a list before its length is taken: the failing first rule stops there
    failure, warnings = R.evaluate(templar(b="text"), [rule("b is not string", "b must be a list"),
                                                       rule("b | length == 2", "b must hold two")])
    assert failure["msg"] == "b must be a list" and warnings == []


def test_a_warn_rule_that_does_not_hold_warns_and_the_rules_go_on():
    failure, warnings = R.evaluate(templar(v=""), [
        rule("v != ''", "no version: the {{ 'current' }} layout", warn=True),
        rule("v == ''", "never"),
    ])
    assert failure is None and warnings == ["no version: the current layout"]
    failure, warnings = R.evaluate(templar(v=""), [rule("v != ''", "note", warn=True), rule("v == 'x'", "bad")])
    assert failure["msg"] == "bad" and failure["rule"] == 1 and warnings == ["note"]


class Counting(Templar):
    """ansible-core's Templar, counting the conditionals it is asked (each one Jinja compile)."""

    asked = 0

    def evaluate_conditional(self, conditional):
        Counting.asked += 1
        return super().evaluate_conditional(conditional=conditional)


def counting(**variables):
    Counting.asked = 0
    return Counting(loader=DataLoader(), variables=variables)


def test_rules_that_hold_are_asked_as_one_expression_and_the_warnings_each_alone():
    rules = [rule(["a == 1", "b | length == 2"], "never"), rule("a < 2", "never"),
             rule("a > 5", "a is {{ a }}", warn=True), rule(["b is not string", "b[1] == 2"], "never")]
    assert R.evaluate(counting(a=1, b=[1, 2]), rules) == (None, ["a is 1"])
    assert Counting.asked == 2  # the four conditions of the three rules at once, then the warning


def test_a_rule_that_does_not_hold_is_found_rule_by_rule_as_before():
    rules = [rule("a > 1", "not this one"), rule(["a > 2", "a < 3"], "a ({{ a }}) must be below 3")]
    failure, warnings = R.evaluate(counting(a=5), rules)
    assert failure == dict(failed=True, rule=1, assertion="a < 3", checked=2, msg="a (5) must be below 3")
    assert Counting.asked == 1 + 3  # the joined expression, then a > 1, a > 2, a < 3


@pytest.mark.parametrize("condition, error", [
    # not a boolean: joined it is merely not `true`; alone it fails as ansible-core fails it
    ("b | length", "Conditionals must have a boolean result"),
    ("nope == 1", "'nope' is undefined"),
])
def test_a_condition_that_fails_alone_fails_the_same_way_among_rules_that_hold(condition, error):
    with pytest.raises(Exception) as alone:
        templar(b=[1, 2]).evaluate_conditional(conditional=trust_as_template(condition))
    with pytest.raises(type(alone.value)) as among:
        R.evaluate(templar(b=[1, 2]), [rule("b is not string", "never"), rule(condition, "never")])
    assert error in str(among.value) and str(among.value) == str(alone.value)


def test_an_untrusted_condition_is_not_joined_into_a_trusted_expression():
    rules = [rule("a == 1", "never"), dict(that="a == 1", msg="never")]
    assert not R.all_hold(templar(a=1), rules)
    with pytest.raises(Exception, match="untrusted"):
        R.evaluate(templar(a=1), rules)


@pytest.mark.parametrize("rules, message", [
    (None, "checks: give a list of {that, msg} rules"),
    ([], "checks: give a list of {that, msg} rules"),
    ([{"that": "a"}], "checks[0]: each rule needs `that`"),
    ([{"that": "a", "msg": "m"}, "x"], "checks[1]: each rule needs `that`"),
    ([{"that": "a", "msg": "m", "warn": "yes"}], "checks[0].warn: give true or false"),
])
def test_a_malformed_rule_list_is_refused_naming_the_option(rules, message):
    with pytest.raises(AnsibleActionFail) as err:
        R.check_shape(rules, "checks")
    assert message in str(err.value)
