"""kubescale.tuning.role_template renders every role template exactly as ansible.builtin.template's lookup does (the
oracle is ansible-core's own lookup, run beside it), without that lookup's copy of all the task's variables."""

import glob
import json
import os
import subprocess
import sys

from conftest import LINK_ROOT, REPO

from tests.integration import json_report

# What a role template needs beyond its role's defaults and vars: a registered result, for etcd_local_disk.
EXTRA = {
    "kubescale_bake": False,
    "__etcd_local_disk_member": {"kind": "systemd", "client_urls": ["https://10.0.0.4:2379", "https://10.0.0.5:2379"],
                                 "tls": {"cacert": "/etc/etcd/ca.crt", "cert": "", "key": "/etc/etcd/member.key"}},
}
ROLES = ("local_ssd", "image_preload", "etcd_local_disk", "events_etcd")


def run(tmp_path, plays):
    path = str(tmp_path / "play.yml")
    with open(path, "w") as f:
        json.dump(plays, f)
    extra = str(tmp_path / "extra.json")
    with open(extra, "w") as f:
        json.dump(EXTRA, f)
    cfg = tmp_path / "ansible.cfg"  # not the repo's (its lab inventory)
    cfg.write_text("[defaults]\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=LINK_ROOT, ANSIBLE_CONFIG=str(cfg),
               ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c",
                           "local", "-e", "@" + extra, path], capture_output=True, text=True, env=env, cwd=str(tmp_path),
                          check=False)
    return proc.returncode, proc.stdout


def test_every_role_template_renders_as_ansible_builtin_template_does(tmp_path):
    plays, want = [], 0
    for role in ROLES:
        files = sorted(glob.glob(os.path.join(REPO, "roles", role, "templates", "*.j2")))
        assert files, role
        vars_files = [os.path.join(REPO, "roles", role, d, "main.yml") for d in ("defaults", "vars")]
        tasks = []
        for f in files:
            tasks.append({"name": f, "ansible.builtin.assert": {"that": [
                "lookup('kubescale.tuning.role_template', %r) == lookup('ansible.builtin.template', %r)" % (f, f),
                "lookup('kubescale.tuning.role_template', %r) is string" % f,
                "lookup('kubescale.tuning.role_template', %r) | length > 100" % f]}})
            want += 1
        plays.append({"hosts": "localhost", "gather_facts": False, "vars_files": vars_files, "tasks": tasks})
    rc, out = run(tmp_path, plays)
    results = [r for _task, _host, r in json_report.results(out)]
    assert rc == 0, [r.get("msg") for r in results if r.get("failed")]
    assert len(results) == want and not any(r.get("failed") for r in results)


def test_a_missing_template_fails_naming_it(tmp_path):
    rc, out = run(tmp_path, [{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"ansible.builtin.debug": {"msg": "{{ lookup('kubescale.tuning.role_template', 'no-such.j2') }}"}}]}])
    assert rc != 0
    msg = json_report.first(out, "localhost")["msg"]
    assert "role_template: no-such.j2 is not in the role's templates directory" in msg
