"""The lab's fixtures (tests/integration/conftest.py): `lab` fails a chaos test without the lab, never skips it;
`control_plane_lock` and `events_cluster_lock` keep a module off kube-apiserver and the Events cluster while another
stream's tests use them. Imported to be found by name: pytest looks fixtures up in this module."""

from tests.integration.conftest import (  # pylint: disable=unused-import
    control_plane_lock,  # noqa: F401
    events_cluster_lock,  # noqa: F401
    lab,  # noqa: F401
)
