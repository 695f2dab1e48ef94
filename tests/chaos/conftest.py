"""The lab's fixtures (tests/integration/conftest.py): `lab` fails a chaos test without the lab, never skips it;
`control_plane_lock` keeps a module off the Events cluster and kube-apiserver while another stream's tests use them.
Imported to be found by name: pytest looks fixtures up in this module."""

from tests.integration.conftest import control_plane_lock, lab  # noqa: F401  # pylint: disable=unused-import
