"""A file's text crosses the wire only when the node needs it: the action side (plugin_utils/_by_hash.py) against the
module side (module_utils/node/state.py's content_needed), in process, on temporary files."""

import copy
import hashlib

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.kubescale.tuning.plugins.module_utils.node import state as ns
from ansible_collections.kubescale.tuning.plugins.plugin_utils import _by_hash as B

SCRIPT = "#!/usr/bin/python3\nprint('boot')\n" * 200


class FakeAction(object):
    """_find_needle and _execute_module as an action has them; the 'node' writes a file given with its text and
    asks for the text of one given by a hash it does not match (the modules' protocol)."""

    def __init__(self, files_at):
        self.files_at = files_at
        self.sent = []

    def _find_needle(self, dirname, needle):
        assert dirname == "files"
        return needle

    def _execute_module(self, module_name, module_args, task_vars):
        self.sent.append(copy.deepcopy(module_args))
        holder = module_args
        for key in self.files_at[:-1]:
            holder = holder[key]
        spec = ns.validate(dict(files=holder[self.files_at[-1]]))
        needed = ns.content_needed(spec)
        if needed:
            return dict(changed=False, content_needed=needed)
        changed = []
        for f in spec["files"]:
            if f["content"] is not None:
                with open(f["path"], "w") as fh:
                    fh.write(f["content"])
                changed.append(f["path"])
        return dict(changed=bool(changed), changed_paths=changed, module=module_name)


@pytest.mark.parametrize("files_at", [("files",), ("node_state", "files")])
def test_a_node_that_has_the_file_is_sent_its_hash_only(tmp_path, files_at):
    src = tmp_path / "local_ssd.py"
    src.write_text(SCRIPT)
    dest = tmp_path / "node" / "local_ssd.py"
    dest.parent.mkdir()
    entry = dict(path=str(dest), src=str(src), mode="0755")
    args = dict(files=[entry, dict(path=str(tmp_path / "node" / "small"), content="x\n")])
    if files_at == ("node_state", "files"):
        args = dict(runtime="docker", node_state=args)
    action = FakeAction(files_at)

    # the node lacks it: one run asks, the second sends the text, once
    out = B.run_by_hash(action, "kubescale.tuning.any", args, files_at, {})
    assert len(action.sent) == 2 and out["content_sent"] == [str(dest)] and dest.read_text() == SCRIPT
    first = action.sent[0] if files_at == ("files",) else action.sent[0]["node_state"]
    assert first["files"][0] == dict(path=str(dest), mode="0755", sha256=hashlib.sha256(SCRIPT.encode()).hexdigest())
    given = args if files_at == ("files",) else args["node_state"]
    assert given["files"][0]["src"] == str(src)  # the task's arguments are not modified

    # the node has it: one run, no text
    action.sent = []
    out = B.run_by_hash(action, "kubescale.tuning.any", args, files_at, {})
    assert len(action.sent) == 1 and out["content_sent"] == []
    assert SCRIPT not in repr(action.sent)


def test_no_files_is_one_run_with_the_arguments_as_given(tmp_path):
    action = FakeAction(("node_state", "files"))
    action._execute_module = lambda module_name, module_args, task_vars: dict(changed=False, args=module_args)
    out = B.run_by_hash(action, "m", dict(runtime="docker"), ("node_state", "files"), {})
    assert out == dict(changed=False, args=dict(runtime="docker"), content_sent=[])


def test_content_and_src_together_are_refused(tmp_path):
    src = tmp_path / "s"
    src.write_text("a")
    with pytest.raises(AnsibleActionFail, match=r"node_state.files\[0\]: content and src are mutually exclusive"):
        B.run_by_hash(FakeAction(("node_state", "files")), "m",
                      dict(node_state=dict(files=[dict(path="/x", src=str(src), content="a")])),
                      ("node_state", "files"), {})


def test_a_file_that_changes_between_the_two_runs_fails_naming_it(tmp_path):
    src = tmp_path / "s"
    src.write_text("a")
    action = FakeAction(("files",))
    action._execute_module = lambda module_name, module_args, task_vars: dict(changed=False, content_needed=[0])
    out = B.run_by_hash(action, "m", dict(files=[dict(path="/etc/x", src=str(src))]), ("files",), {})
    assert out["failed"] and "files /etc/x changed on the node between two runs" in out["msg"]
