"""inventories/azure/azure_rm.yml, run by ansible-inventory through kubescale.tuning.azure_rm against a recorded ARM.

tests/azure/arm_replay.py serves tests/fixtures/azure/subscription.yml over HTTPS on 127.0.0.1 (cloud metadata, Entra ID token
endpoint, the VM, scale set, scale set instance, network interface and public IP lists with nextLink paging, the
single GETs, and /batch for azure.azcollection's plugin). The inventory file is used unchanged; only the endpoint and
credentials come from the environment (AZURE_CLOUD_ENVIRONMENT, AZURE_*).
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from tests.azure import arm_replay

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INVENTORY = os.path.join(REPO, "inventories", "azure", "azure_rm.yml")
BIN = os.path.dirname(sys.executable)
CLASSES = ["etcd", "etcd_events", "kube_control_plane", "kube_node_cpu", "kube_node_gpu"]
NOT_RUNNING = {"master-1", "cpu-a_1", "gpu-legacy-1"}  # deallocated or stopped in the fixture
UNTAGGED = {"jumpbox", "build-agents_0", "fpga-0"}
BASELINE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "baseline")


@pytest.fixture(scope="module")
def arm():
    # Pages of 3: every list (VMs, scale sets, a scale set's instances) takes several nextLink pages.
    server = arm_replay.Arm(arm_replay.Subscription.from_file(
        os.path.join(arm_replay.FIXTURES, "subscription.yml")), page_size=3).start()
    yield server
    server.stop()


@pytest.fixture
def fresh(arm):
    arm.clear()
    arm.expired_secret = None
    yield arm
    arm.clear()


def plain(value):
    """ansible-inventory's JSON keeps untrusted strings as {"__ansible_unsafe": ...}; the values themselves."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def env_for(arm, **extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"), ANSIBLE_NOCOLOR="1")
    for key in list(env):
        if key.startswith(("AZURE_", "ANSIBLE_AZURE_", "ANSIBLE_INVENTORY_CACHE")):
            del env[key]
    env.update(arm.client_env())
    env.update(extra)
    return env


def run_inventory(arm, *args, path=INVENTORY, **extra):
    env = env_for(arm, **extra)
    env["ANSIBLE_COLLECTIONS_PATH"] += os.pathsep + BASELINE  # azure.azcollection's plugin, for comparisons
    return subprocess.run([os.path.join(BIN, "ansible-inventory"), "-i", path, "--list", *args], cwd=REPO,
                          env=env, capture_output=True, text=True, check=False)


def config_file(tmp_path, name="azure_rm.yml", **changes):
    """inventories/azure/azure_rm.yml with `changes`, written beside a copy of its group_vars."""
    config = yaml.safe_load(open(INVENTORY))
    config.update(changes)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config))
    shutil.copytree(os.path.join(os.path.dirname(INVENTORY), "group_vars"), tmp_path / "group_vars",
                    dirs_exist_ok=True)
    return str(path)


def lists(arm):
    """How many ARM requests of each kind the last inventory made (the replay's counters)."""
    return {k: v for k, v in arm.stats().items() if k.startswith(("list_", "get_", "instance_view", "batch"))}


def inventory(arm, *args, **extra):
    out = run_inventory(arm, *args, **extra)
    assert out.returncode == 0, out.stderr
    return plain(json.loads(out.stdout))


def hosts_of(inv, group):
    return set(inv.get(group, {}).get("hosts", []))


def private_ip(arm, vm_name):
    vm = next(v for v in list(arm.sub.vms) + [i for s in arm.sub.instances.values() for i in s] if v["name"] == vm_name)
    vm_id = vm["id"].lower()
    return arm.sub.nics[vm_id][0]["properties"]["ipConfigurations"][0]["properties"]["privateIPAddress"]


def flexible(arm, scale_set):
    """The Flexible instances of `scale_set`, in instance order (their names end in a hash)."""
    return [v["name"] for v in arm.sub.vms if v["name"].startswith(scale_set + "_")]


def expected_classes(arm):
    mixed = flexible(arm, "mixed")
    return {
        "etcd": {"etcd-0", "etcd-1", "etcd-2"},
        # the VM's own tag wins over its scale set's; etcd-events-1 runs though its provisioning failed
        "etcd_events": {"etcd-events-0", "etcd-events-1", mixed[0]},
        # master-2 runs while an extension installs (provisioning state Updating)
        "kube_control_plane": {"master-0", "master-2"},
        "kube_node_cpu": {"cpu-a_0", "cpu-a_2", "cpu-b_0", "cpu-b_1", "cpu-standalone", mixed[1]},
        "kube_node_gpu": {"gpu-legacy-0", "gpu-h100-cc", "gpu-v620", *flexible(arm, "gpu-v100"),
                          *flexible(arm, "gpu-a100")},
    }


def test_every_running_host_lands_in_its_class(fresh):
    inv = inventory(fresh)
    hostvars = inv["_meta"]["hostvars"]
    want = expected_classes(fresh)
    for cls in CLASSES:
        assert hosts_of(inv, cls) == want[cls], cls
        assert hosts_of(inv, "node_class_" + cls) == want[cls], cls
    assert hosts_of(inv, "node_class_untagged") == UNTAGGED
    every = set().union(*want.values()) | UNTAGGED
    assert set(hostvars) == every
    assert not NOT_RUNNING & set(hostvars)
    # Each host reached on its private address, public IPs (master-0, jumpbox) notwithstanding.
    for host in every:
        assert hostvars[host]["ansible_host"] == private_ip(fresh, host), host
    assert hostvars["master-0"]["public_ipv4_address"] and hostvars["master-0"]["ansible_host"].startswith("10.240.")
    assert hostvars["master-2"]["provisioning_state"] == "updating"
    assert "network_interface_properties" not in hostvars["master-0"]  # left out by the file
    assert hostvars["master-0"]["mac_address"] and hostvars["master-0"]["subnet"]


def test_a_failed_vm_is_named_in_a_warning_and_its_own_group(fresh):
    out = run_inventory(fresh)
    assert out.returncode == 0, out.stderr
    inv = plain(json.loads(out.stdout))
    assert hosts_of(inv, "provisioning_failed") == {"etcd-events-1"}
    assert "provisioning failed on 1 VM(s): etcd-events-1 (resource group kube-control, running)" in \
        " ".join(out.stderr.split())


def test_a_scale_set_scaled_to_zero_is_an_empty_list(fresh):
    inv = inventory(fresh)
    assert not [h for h in inv["_meta"]["hostvars"] if h.startswith("gpu-pool")]
    assert fresh.stats()["list_scale_set_vms"] >= 4  # gpu-pool's list was read (empty), not refused


def test_the_lists_are_read_a_page_at_a_time_and_nothing_is_asked_per_vm(fresh):
    inventory(fresh)
    asked = lists(fresh)
    vms = len(fresh.sub.vms)
    pages = -(-vms // fresh.page_size)  # the VM list and the status list, each
    assert asked["list_virtualmachines"] == pages and asked["list_vm_statuses"] == pages
    per_scale_set = [max(1, -(-len(i) // fresh.page_size)) for i in fresh.sub.instances.values()]
    assert asked["list_scale_set_vms"] == sum(per_scale_set) + 1  # + gpu-pool's empty page
    assert asked["list_scale_set_networkinterfaces"] >= 4 and asked["list_networkinterfaces"] >= 2
    assert asked["list_publicipaddresses"] == 1
    # no instance view, NIC or public IP one at a time, no /batch
    assert not [k for k in asked if k.startswith(("get_", "instance_view", "batch"))], asked


def test_scale_set_instances_carry_their_scale_set(fresh):
    hostvars = inventory(fresh)["_meta"]["hostvars"]
    uniform = hostvars["cpu-a_0"]
    assert uniform["scale_set"]["name"] == "cpu-a" and uniform["scale_set"]["orchestration_mode"] == "Uniform"
    assert uniform["scale_set"]["tags"] == {"node_class": "kube_node_cpu"} and uniform["tags"] == {}
    assert (uniform["node_class"], uniform["node_class_source"]) == ("kube_node_cpu", "scale_set_tag")
    # A Uniform instance has no hardwareProfile: its size comes from its SKU.
    assert uniform["virtual_machine_size"] == "Standard_D15_v2"
    assert uniform["vmss"] == {"id": uniform["scale_set"]["id"], "name": "cpu-a"}
    assert uniform["os_compute_name"] == "cpu-a000000" and uniform["powerstate"] == "running"
    assert hostvars["cpu-b_0"]["node_class_source"] == "size"
    flex = hostvars[flexible(fresh, "gpu-v100")[0]]
    assert flex["scale_set"]["name"] == "gpu-v100" and flex["scale_set"]["orchestration_mode"] == "Flexible"
    assert (flex["node_class"], flex["node_class_source"]) == ("kube_node_gpu", "scale_set_tag")
    a100 = hostvars[flexible(fresh, "gpu-a100")[0]]
    assert (a100["virtual_machine_size"], a100["node_class_source"]) == ("Standard_NC24ads_A100_v4", "size")
    assert hostvars["etcd-0"]["scale_set"] == {} and hostvars["etcd-0"]["node_class_source"] == "vm_tag"
    # Instance 0 of cpu-a and of cpu-b: one host each.
    assert {"cpu-a_0", "cpu-b_0"} <= set(hostvars)


def test_hosts_and_host_variables_are_azure_rms(fresh, tmp_path):
    """azure.azcollection's azure_rm (its /batch and per-VM requests) and this plugin, on one subscription and with
    the same options: the same hosts, and the same host variables except this plugin's own and, for Uniform
    instances, the network interfaces' shape (ARM's here, the SDK's there)."""
    cfg = config_file(tmp_path, network_interface_properties=True, ansible_host_address="public_first")
    ours = inventory(fresh, path=cfg)
    theirs_cfg = {"plugin": "kubescale_baseline.azure.azure_rm", "auth_source": "auto", "plain_host_names": True,
                  "include_vm_resource_groups": ["*"], "include_vmss_resource_groups": ["*"],
                  "default_host_filters": ["powerstate != 'running'"]}
    (tmp_path / "theirs").mkdir()
    path = tmp_path / "theirs" / "azure_rm.yml"
    path.write_text(yaml.safe_dump(theirs_cfg))
    shutil.copytree(tmp_path / "group_vars", tmp_path / "theirs" / "group_vars")
    theirs = inventory(fresh, path=str(path))
    assert fresh.stats()["batch"] > 0 and fresh.stats()["instance_view"] > 0  # that one really is azure_rm
    a, b = ours["_meta"]["hostvars"], theirs["_meta"]["hostvars"]
    assert set(a) == set(b)
    own = {"node_class", "node_class_source", "scale_set"}
    uniform_network = {"network_interface_properties", "public_dns_hostnames", "virtual_machine_size"}
    for host in a:
        uniform = bool(a[host]["vmss"])
        for key in set(a[host]) | set(b[host]):
            if key in own or (uniform and key in uniform_network):
                continue
            assert a[host].get(key) == b[host].get(key), (host, key)
        if uniform:  # the same addresses, from the network interface in either shape
            assert b[host]["network_interface_properties"][0]["ip_configurations"][0]["private_ip_address"] == \
                a[host]["network_interface_properties"][0]["properties"]["ipConfigurations"][0]["properties"][
                    "privateIPAddress"]


def test_each_class_playbook_targets_its_hosts(fresh):
    out = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, "--list-hosts",
                          os.path.join(REPO, "playbooks", "site.yml")], cwd=REPO, env=env_for(fresh),
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    plays = {}
    for block in out.stdout.split("\n\n"):
        m = re.search(r"play #\d+ \(([^)]*)\):.*\n\s+pattern: .*\n\s+hosts \((\d+)\):\n((?:\s+\S+\n?)*)", block)
        if m:
            plays[m.group(1)] = set(m.group(3).split())
            assert len(plays[m.group(1)]) == int(m.group(2))
    assert plays == expected_classes(fresh)


def test_throttling_and_a_transient_500_are_retried(fresh):
    # 429 with Retry-After on the second page of the VM list and of the status list, 500 on a scale set's instance
    # list and on the second page of a resource group's network interfaces.
    fresh.fault(r"/providers/Microsoft\.Compute/virtualMachines\?api-version=[^&]*&\$skiptoken=3", 429, times=1,
                retry_after=1)
    fresh.fault(r"/providers/Microsoft\.Compute/virtualMachines\?.*statusOnly=true.*skiptoken=3", 429, times=1,
                retry_after=1)
    fresh.fault(r"/virtualMachineScaleSets/cpu-a/virtualMachines\?", 500, times=1)
    fresh.fault(r"/resourceGroups/kube-nodes/providers/Microsoft\.Network/networkInterfaces\?.*skiptoken=3", 500,
                times=1)
    inv = inventory(fresh)
    assert fresh.stats()["fault"] == 4
    assert all(f["times"] == 0 for f in fresh.faults)
    want = expected_classes(fresh)
    for cls in CLASSES:
        assert hosts_of(inv, cls) == want[cls], cls


def test_a_page_that_keeps_failing_fails_the_inventory(fresh):
    fresh.fault(r"/virtualMachineScaleSets/cpu-b/virtualMachines\?", 503, times=100)
    out = run_inventory(fresh, KUBESCALE_AZURE_RETRY_LIMIT="2", KUBESCALE_AZURE_RETRY_MAX_DELAY="0.2")
    assert out.returncode != 0 and not out.stdout.strip()
    text = " ".join(out.stderr.split())
    assert "still failing after 2 retries" in text and "virtualMachineScaleSets/cpu-b/virtualMachines" in text


@pytest.mark.parametrize("where,url", [
    (r"/virtualMachineScaleSets/cpu-a/virtualMachines\?", "virtualMachineScaleSets/cpu-a/virtualMachines"),
    (r"/virtualMachineScaleSets/cpu-b/networkInterfaces\?", "virtualMachineScaleSets/cpu-b/networkInterfaces"),
    (r"/resourceGroups/kube-control/providers/Microsoft\.Network/networkInterfaces\?",
     "resourceGroups/kube-control/providers/Microsoft.Network/networkInterfaces"),
    (r"/providers/Microsoft\.Compute/virtualMachines\?.*statusOnly=true", "statusOnly=true"),
])
def test_a_refused_list_fails_the_inventory_instead_of_dropping_its_hosts(fresh, where, url):
    fresh.fault(where, 403, times=100, code="AuthorizationFailed")
    out = run_inventory(fresh)
    assert out.returncode != 0 and not out.stdout.strip()
    text = " ".join(out.stderr.split())
    assert "Azure answered HTTP 403 to GET" in text and "AuthorizationFailed" in text and url in text, text


def test_one_request_at_a_time_finds_the_same_hosts(fresh, tmp_path):
    many = inventory(fresh)
    one = inventory(fresh, path=config_file(tmp_path, request_concurrency=1))
    assert one == many


def test_a_vm_deleted_while_the_inventory_lists_it_is_left_out_with_a_warning():
    sub = arm_replay.Subscription.from_file(os.path.join(arm_replay.FIXTURES, "subscription.yml"))
    sub.delete_nic_of("cpu-standalone")  # still in the VM list, its network interface already gone
    server = arm_replay.Arm(sub, page_size=3).start()
    try:
        out = run_inventory(server)
        stats = server.stats()
    finally:
        server.stop()
    assert out.returncode == 0, out.stderr
    assert "cpu-standalone" not in json.loads(out.stdout)["_meta"]["hostvars"]
    text = " ".join(out.stderr.split())
    assert "deleted while the inventory listed them, left out" in text and "/virtualmachines/cpu-standalone" in text
    assert stats["not_found"] == 1  # its network interface asked once by id: 404


@pytest.mark.parametrize("case,secret,message", [
    ("invalid secret", "not-the-secret", "AADSTS7000215"),
    ("expired secret", "an-expired-secret", "AADSTS7000222"),
])
def test_bad_credentials_are_a_clear_error(fresh, case, secret, message):
    fresh.expired_secret = "an-expired-secret"
    out = run_inventory(fresh, AZURE_SECRET=secret)
    assert out.returncode != 0 and not out.stdout.strip(), case
    assert message in " ".join(out.stderr.split()), out.stderr
    assert not lists(fresh)  # nothing listed with a credential that does not work


def test_an_access_token_arm_rejects_is_a_clear_error(fresh, monkeypatch):
    monkeypatch.setattr(fresh, "tokens", _AlwaysExpired())
    out = run_inventory(fresh)
    assert out.returncode != 0 and not out.stdout.strip()
    text = " ".join(out.stderr.split())
    assert "HTTP 401 to GET /subscriptions/" in text and "ExpiredAuthenticationToken" in text
    arm_requests = [p for _m, p in fresh.log if p.startswith("/subscriptions/")]
    assert len(arm_requests) == 1, arm_requests  # the first request alone, nothing after it


class _AlwaysExpired(dict):
    """Tokens issued, then refused by ARM as expired (a clock ahead of the client's, a revoked session)."""

    def get(self, key, default=None):
        return 0 if key in self else default


def test_the_playbook_run_fails_when_the_inventory_does(fresh):
    out = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, "--list-hosts",
                          os.path.join(REPO, "playbooks", "site.yml")], cwd=REPO,
                         env=env_for(fresh, AZURE_SECRET="wrong"), capture_output=True, text=True, check=False)
    assert out.returncode != 0
    assert "AADSTS7000215" in " ".join(out.stderr.split())


def test_two_vms_of_one_name_fail_the_inventory(tmp_path):
    sub = arm_replay.Subscription("1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f", "3e4f5a6b-7c8d-4e9f-8a0b-1c2d3e4f5a6b",
                                  "4f5a6b7c-8d9e-4f0a-9b1c-2d3e4f5a6b7c")
    sub.add_vm("team-a", "worker-0", "Standard_D15_v2", {})
    sub.add_vm("team-b", "worker-0", "Standard_D15_v2", {})
    server = arm_replay.Arm(sub).start()
    try:
        out = run_inventory(server)
    finally:
        server.stop()
    text = " ".join(out.stderr.split())
    assert out.returncode != 0 and "two VMs have the inventory host name 'worker-0'" in text
    assert "resourceGroups/team-a/" in text and "resourceGroups/team-b/" in text


@pytest.mark.parametrize("changes,message", [
    ({"node_class_sizes": [{"pattern": "Standard_N[CDV", "class": "kube_node_gpu"}]},
     "node_class_sizes[0].pattern 'Standard_N[CDV' is not a regular expression"),
    ({"include_arc_resource_groups": ["*"]}, "include_arc_resource_groups is not supported"),
    ({"ansible_host_address": "floating"}, "ansible_host_address"),
])
def test_a_bad_option_is_refused_naming_it_before_any_request(fresh, tmp_path, changes, message):
    out = run_inventory(fresh, path=config_file(tmp_path, "bad.azure_rm.yml", **changes))
    assert out.returncode != 0
    assert message in " ".join(out.stderr.split())
    assert fresh.stats().get("token", 0) == 0 and not lists(fresh)  # refused before any request


def test_the_inventory_cache_answers_without_azure(fresh, tmp_path):
    cache = dict(ANSIBLE_INVENTORY_CACHE="true", ANSIBLE_INVENTORY_CACHE_PLUGIN="ansible.builtin.jsonfile",
                 ANSIBLE_INVENTORY_CACHE_CONNECTION=str(tmp_path / "cache"), ANSIBLE_INVENTORY_CACHE_TIMEOUT="600")
    first = inventory(fresh, **cache)
    calls = fresh.stats()["api_calls"]
    assert calls > 0
    second = inventory(fresh, **cache)
    assert fresh.stats()["api_calls"] == calls  # answered from the cache: no request at all
    assert second == first
    inventory(fresh, "--flush-cache", **cache)
    assert fresh.stats()["api_calls"] == 2 * calls
