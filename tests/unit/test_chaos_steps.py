"""The chaos harness arms its kill on a task's banner (`TASK [<name>]`): every step of every transaction must name a task
its playbook prints a banner for. A block's name prints none, nor does an import; a step naming one never starts, and
the round that draws it fails whatever the collection does."""

import glob
import os

import pytest
import yaml

from tests.chaos import chaos, transactions
from tests.integration import labnode

ROLES = os.path.join(chaos.REPO, "roles")
GROUPS = ["etcd", "etcd_events", "kube_control_plane", "kube_node_cpu", "kube_node_gpu"]


def _role_files(name):
    """A role's task files; every role's when the name is templated (the node's runtime role, chosen at run time)."""
    role = name.rsplit(".", 1)[-1]
    pattern = "*" if "{{" in role else role
    return sorted(glob.glob(os.path.join(ROLES, pattern, "tasks", "*.yml")))


def _banners(items, here, out):
    """The names of the tasks in `items` (a task list read from a file in `here`) and in what they import."""
    for item in items or []:
        if not isinstance(item, dict):
            continue
        if "block" in item:
            for part in ("block", "rescue", "always"):
                _banners(item.get(part), here, out)
            continue
        role = item.get("ansible.builtin.import_role") or item.get("ansible.builtin.include_role")
        if role:
            for path in _role_files(role["name"]):
                _banners(_load(path), os.path.dirname(path), out)
            if "ansible.builtin.include_role" in item:
                out.append(item.get("name", ""))
            continue
        imported = item.get("ansible.builtin.import_tasks")
        if imported:
            path = os.path.join(here, imported)
            _banners(_load(path), os.path.dirname(path), out)
            continue
        if "name" in item:
            out.append(item["name"])
    return out


def _load(path):
    with open(path) as f:
        return yaml.safe_load(f)


def banners(playbook):
    path = os.path.join(chaos.REPO, playbook)
    out = []
    for play in _load(path):
        for part in ("pre_tasks", "tasks", "post_tasks"):
            _banners(play.get(part), os.path.dirname(path), out)
    return out


@pytest.fixture
def lab_groups(monkeypatch):
    """Three hosts in each of the lab's groups, without a lab."""
    fake = {g: {"hosts": {"%s-%d" % (g, i): {"lab_ip": "10.0.0.%d" % i} for i in (1, 2, 3)}} for g in GROUPS}
    monkeypatch.setattr(labnode, "lab_groups", lambda: fake)


@pytest.mark.parametrize("name", sorted(transactions.ALL))
def test_every_step_names_a_task_its_playbook_prints_a_banner_for(name, lab_groups):
    tx = transactions.ALL[name]()
    names = banners(tx.argv[0])
    assert names, "%s: %s has no task" % (name, tx.argv[0])
    for step in tx.steps:
        prefix, nth = chaos.step_target(step)
        found = [n for n in names if n.startswith(prefix)]
        assert len(found) >= nth, "%s: step %r names no task of %s (a block's or an import's name prints no " \
                                  "banner)" % (name, step, tx.argv[0])
        # the kill lands at the latest as the first task after the step with another name starts (KillClock): there
        # must be one
        after = names[names.index(found[nth - 1]):]
        assert [n for n in after if not n.startswith(prefix)], "%s: step %r is the last task of %s: a run whose step " \
                                                               "ends before the seed's delay would end unkilled" % (
                                                                   name, step, tx.argv[0])


def test_a_block_s_name_is_not_a_banner(tmp_path):
    """The walk itself: the round that failed drew a block's name."""
    book = tmp_path / "p.yml"
    book.write_text(yaml.safe_dump([{"hosts": "all", "tasks": [
        {"name": "Clear it", "when": False, "block": [{"name": "Stop it", "ansible.builtin.debug": {}}]},
        {"name": "Then", "ansible.builtin.debug": {}}]}]))
    assert banners(str(book)) == ["Stop it", "Then"]


def _clock_fed(banners, prefix="Move", nth=1):
    clock = chaos.KillClock(prefix, nth)
    return clock, [clock.banner(name, float(t)) for t, name in enumerate(banners)]


def test_the_kill_is_armed_at_the_step_s_banner_and_lands_at_the_next_one_at_the_latest():
    clock, actions = _clock_fed(["Read it", "Move the store", "Record the fact", "Done"])
    assert actions == [None, "arm", "fire", None]
    assert clock.armed_at == 1.0


def test_the_nth_task_of_a_prefix_arms_it_and_its_earlier_namesakes_do_not():
    clock, actions = _clock_fed(["Move the store", "Check", "Move the store", "Record"], nth=2)
    assert actions == [None, None, "arm", "fire"]
    assert clock.armed_at == 2.0


def test_banners_sharing_the_step_s_prefix_are_the_step_still():
    """An include's banner, then its task's; a check-mode twin; the next batch's: the kill may land in any of them."""
    clock, actions = _clock_fed(["Read it", "Move the store and the kubelet", "Move the store and the kubelet, wait",
                                 "Move the store (check mode)", "Record the fact", "Done"])
    assert actions == [None, "arm", None, None, "fire", None]


def test_a_run_that_never_reaches_the_step_never_arms():
    clock, actions = _clock_fed(["Read it", "Record the fact"])
    assert actions == [None, None] and clock.armed_at is None
