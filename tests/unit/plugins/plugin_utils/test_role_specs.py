"""validate_roles' checking: the roles' own meta/argument_specs.yml, ansible-core's Templar and ArgumentSpecValidator."""

import os

import pytest
import yaml
from ansible.errors import AnsibleActionFail
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.kubescale.tuning.plugins.plugin_utils import _role_specs as S

ROLES = ["arp_sysctl", "local_ssd", "docker_overlay2", "containerd_tuning", "kubelet_pulls", "image_preload"]


def defaults(*roles):
    """The roles' defaults, as the host's variables are before an inventory sets anything."""
    out = {}
    for role in roles:
        with open(os.path.join(S.ROLES_DIR, role, "defaults", "main.yml")) as f:
            out.update(yaml.safe_load(f) or {})
    if "image_preload_cache_dir" in out:  # its default asks the env lookup, which needs the plugin loader of a run
        out["image_preload_cache_dir"] = "/root/.cache/kubescale/images"
    return dict((k, trust_as_template(v) if isinstance(v, str) else v) for k, v in out.items())


def check(roles, task_vars):
    return S.validate(DataLoader(), Templar(loader=DataLoader(), variables=task_vars), roles, task_vars)


def test_the_defaults_of_every_worker_role_fit_their_specs():
    assert check(ROLES, defaults(*ROLES)) == {}


def test_a_bad_choice_fails_with_ansible_cores_message_under_the_role():
    task_vars = defaults(*ROLES)
    task_vars["local_ssd_fstype"] = "ntfs"
    errors = check(ROLES, task_vars)
    assert list(errors) == ["local_ssd"]
    assert errors["local_ssd"] == ["value of local_ssd_fstype must be one of: ext4, xfs, got: ntfs"]


def test_every_role_is_checked_not_only_the_first_that_fails():
    task_vars = defaults(*ROLES)
    task_vars["local_ssd_fstype"] = "ntfs"
    task_vars["arp_sysctl_gc_thresh1"] = "many"
    errors = check(ROLES, task_vars)
    assert sorted(errors) == ["arp_sysctl", "local_ssd"]
    assert any("arp_sysctl_gc_thresh1" in m for m in errors["arp_sysctl"])


def test_a_templated_value_is_checked_as_it_renders():
    task_vars = defaults("local_ssd")
    task_vars["site_fs"] = "btrfs"
    task_vars["local_ssd_fstype"] = trust_as_template("{{ site_fs }}")
    assert check(["local_ssd"], task_vars) == {
        "local_ssd": ["value of local_ssd_fstype must be one of: ext4, xfs, got: btrfs"]}


def test_roles_by_fqcn_and_only_this_collections():
    assert check(["kubescale.tuning.local_ssd"], defaults("local_ssd")) == {}
    for bad in ["community.general.nothing", "../roles", "", "no_such_role", 3]:
        with pytest.raises(AnsibleActionFail, match="not a role of kubescale.tuning"):
            check([bad], {})


def test_an_entry_point_without_a_spec_is_refused():
    with pytest.raises(AnsibleActionFail, match="no argument spec for entry point 'nope'"):
        S.validate(DataLoader(), Templar(loader=DataLoader(), variables={}), ["local_ssd"], {}, "nope")
