"""tests/integration/task_results.py: --check against the real run task by task, and what a first run must change."""

import importlib.util
import json
import os

_SPEC = importlib.util.spec_from_file_location("task_results", os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integration", "task_results.py"))
tr = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(tr)


def write(path, rows):
    path.write_text("".join(json.dumps(dict(play="p", path="t%d.yml:%d" % (i, i), action="a", host=h, task=t, status=s))
                            + "\n" for i, (h, t, s) in enumerate(rows)))
    return str(path)


def write_twins(path, rows):
    """Rows of one task file, each task at its own line."""
    path.write_text("".join(json.dumps(dict(play="p", path="start.yml:%d" % i, action="a", host=h, task=t, status=s))
                            + "\n" for i, (h, t, s) in enumerate(rows)))
    return str(path)


def test_the_same_tasks_with_the_same_statuses_agree(tmp_path):
    rows = [("a", "one", "changed"), ("b", "one", "ok"), ("a", "two", "skipped")]
    assert tr.differences(tr.read(write(tmp_path / "c", rows)), tr.read(write(tmp_path / "r", rows))) == []


def test_two_tasks_that_differ_in_opposite_directions_are_both_found(tmp_path):
    """The recap's counts would be equal: one task changed only in check mode, another only in the real run."""
    check = write(tmp_path / "c", [("a", "one", "changed"), ("a", "two", "ok")])
    real = write(tmp_path / "r", [("a", "one", "ok"), ("a", "two", "changed")])
    found = tr.differences(tr.read(check), tr.read(real))
    assert found == ["a:", "  -p | t0.yml | one: changed", "  -p | t1.yml | two: ok", "  +p | t0.yml | one: ok",
                     "  +p | t1.yml | two: changed"]


def test_a_task_only_one_run_reported_and_a_host_only_one_run_reached_are_found(tmp_path):
    check = write(tmp_path / "c", [("a", "one", "ok")])
    real = write(tmp_path / "r", [("a", "one", "ok"), ("a", "extra", "ok"), ("b", "one", "ok")])
    found = tr.differences(tr.read(check), tr.read(real))
    assert "  +p | t1.yml | extra: ok" in found and "b:" in found and "  +p | t2.yml | one: ok" in found


def test_a_first_run_must_change_each_task_on_every_host_of_its_group_and_its_children(tmp_path):
    inventory = {"etcd": {"hosts": ["e1"], "children": ["etcd_kubeadm"]}, "etcd_kubeadm": {"hosts": ["k1"]}}
    expected = [{"group": "etcd", "task": "move", "why": "the SSD"}, {"group": "none", "task": "x", "why": "y"}]
    real = tr.read(write(tmp_path / "r", [("e1", "kubescale.tuning.etcd_local_disk : move", "changed"),
                                          ("k1", "move", "ok")]))
    assert tr.missing(real, expected, inventory) == ["k1: 'move' was ok, not changed (the SSD)",
                                                     "none: no host in the inventory"]


def test_a_task_and_its_check_mode_twin_are_one_step(tmp_path):
    """Check mode runs the twin where the real run runs the task: the same step, the same status."""
    twin = "Start it (check mode; not installed)"
    check = write_twins(tmp_path / "c", [("a", "Start it", "skipped"), ("a", twin, "changed"), ("a", "Wait", "ok")])
    real = write_twins(tmp_path / "r", [("a", "Start it", "changed"), ("a", twin, "skipped"), ("a", "Wait", "ok")])
    assert tr.read(check) == tr.read(real) == {"a": [("p", "start.yml", "Start it", "changed"),
                                                     ("p", "start.yml", "Wait", "ok")]}
    wrong = write_twins(tmp_path / "w", [("a", "Start it", "ok"), ("a", twin, "skipped"), ("a", "Wait", "ok")])
    assert tr.differences(tr.read(check), tr.read(wrong)) == ["a:", "  -p | start.yml | Start it: changed",
                                                              "  +p | start.yml | Start it: ok"]


def test_the_slowest_tasks_are_ranked_by_their_last_hosts_seconds_added_up_over_their_batches(tmp_path):
    rows = [dict(play="p", task="a", path="/c/roles/r/tasks/main.yml:3", host="h1", status="ok", seconds=1.5, start=1),
            dict(play="p", task="a", path="/c/roles/r/tasks/main.yml:3", host="h2", status="ok", seconds=4.0, start=1),
            dict(play="p", task="b", path="/c/roles/r/tasks/main.yml:9", host="h1", status="changed", seconds=2.0,
                 start=2),
            dict(play="p", task="c", path="/c/roles/r/tasks/main.yml:12", host="h1", status="ok", seconds=0.1, start=3),
            # a rolling play: task d started once per batch, one host each
            dict(play="q", task="d", path="/c/roles/s/tasks/main.yml:5", host="h1", status="ok", seconds=1.5, start=4),
            dict(play="q", task="d", path="/c/roles/s/tasks/main.yml:5", host="h2", status="ok", seconds=1.5, start=5),
            dict(play="q", task="d", path="/c/roles/s/tasks/main.yml:5", host="h3", status="ok", seconds=1.5, start=6)]
    path = tmp_path / "r"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert tr.slowest(str(path), 3) == ["    4.5 s  q | d (s/tasks/main.yml:5) x3",
                                        "    4.0 s  p | a (r/tasks/main.yml:3)",
                                        "    2.0 s  p | b (r/tasks/main.yml:9)"]
