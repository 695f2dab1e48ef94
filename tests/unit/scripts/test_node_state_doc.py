"""scripts/node_state_doc.py: the nested node_state option documents exactly what the node_state module's own
options and the fact fragment document, and what the modules' argument spec (NODE_STATE_OPTIONS) takes."""

import yaml

from ansible_collections.kubescale.tuning.plugins.doc_fragments.fact import ModuleDocFragment as Fact
from ansible_collections.kubescale.tuning.plugins.doc_fragments.node_state import ModuleDocFragment as F
from ansible_collections.kubescale.tuning.plugins.module_utils.node.state import NODE_STATE_OPTIONS
from scripts import node_state_doc


def test_the_committed_nested_form_is_the_generated_one():
    assert node_state_doc.main(["--check"]) == 0


def nest(value):
    """`value` with its references to node_state's options made O(node_state.…), as the script makes them."""
    if isinstance(value, dict):
        return {k: nest(v) for k, v in value.items()}
    if isinstance(value, list):
        return [nest(v) for v in value]
    if isinstance(value, str):
        for option in node_state_doc.OPTIONS:
            value = value.replace("O(%s" % option, "O(node_state.%s" % option)
    return value


def test_nested_holds_every_top_level_option_and_the_fact_unchanged_but_for_references():
    top = yaml.safe_load(F.DOCUMENTATION)["options"]
    top.update(yaml.safe_load(Fact.DOCUMENTATION)["options"])
    nested = yaml.safe_load(F.NESTED)["options"]["node_state"]
    assert nested["type"] == "dict"
    sub = nested["suboptions"]
    assert sorted(sub) == sorted(top) == sorted(NODE_STATE_OPTIONS)
    for name, spec in top.items():
        assert sub[name] == nest(spec), name


def test_references_are_made_nested():
    text = node_state_doc.nested("options:\n  files:\n    description: See O(files[].src) and O(units).\n",
                                 "options:\n  fact:\n    description: x\n")
    assert "See O(node_state.files[].src) and O(node_state.units)." in text
    assert "\n      fact:\n" in text
