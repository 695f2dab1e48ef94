"""tests/conftest.py: a skip fails the run unless the allow-list names the test with a reason."""

import importlib.util
import os

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "skip_gate", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conftest.py"))
gate = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(gate)


def test_an_entry_is_a_node_id_or_a_prefix_ending_at_a_file_or_class():
    allowed = {"tests/a.py::test_x": "r", "tests/b.py": "r", "tests/c.py::TestK::": "r"}
    assert gate.is_allowed("tests/a.py::test_x", allowed)
    assert not gate.is_allowed("tests/a.py::test_x2", allowed)
    assert gate.is_allowed("tests/b.py::test_y[1]", allowed)
    assert gate.is_allowed("tests/c.py::TestK::test_z", allowed)
    assert not gate.is_allowed("tests/c.py::TestKK::test_z", allowed)


def test_the_allow_list_needs_a_reason_for_each_entry(tmp_path):
    path = tmp_path / "allowed.yml"
    path.write_text("- {test: tests/a.py, reason: ''}\n")
    with pytest.raises(ValueError, match="needs a test and a reason"):
        gate.allowed_skips(str(path))
    path.write_text("- {test: tests/a.py, reason: needs a GPU}\n")
    assert gate.allowed_skips(str(path)) == {"tests/a.py": "needs a GPU"}
