import os

import pytest

from ansible_collections.kubescale.tuning.plugins.plugin_utils import _azure_inventory as d

SIZES = d.check_size_classes(d.DEFAULT_SIZE_CLASSES)


@pytest.mark.parametrize("size,expected", [
    ("Standard_D15_v2", "kube_node_cpu"),
    ("standard_d15_v2", "kube_node_cpu"),
    ("Standard_NC24", "kube_node_gpu"),
    ("Standard_NC24s_v3", "kube_node_gpu"),
    ("Standard_NC24ads_A100_v4", "kube_node_gpu"),
    ("Standard_NC40ads_H100_v5", "kube_node_gpu"),
    ("Standard_ND96asr_v4", "kube_node_gpu"),
    ("Standard_NV36adms_A10_v5", "kube_node_gpu"),
    ("Standard_DS15_v2", None),          # another family
    ("Standard_D15_v2_Promo", None),     # the pattern matches the whole size
    ("Standard_D4s_v5", None),
    ("Standard_NP10s", None),            # FPGA, not a GPU family
    (None, None),
])
def test_size_fallback(size, expected):
    assert d.node_class({}, {}, size, "node_class", SIZES) == (expected, "size" if expected else None)


def test_vm_tag_wins_over_scale_set_tag_and_size():
    assert d.node_class({"node_class": "etcd_events"}, {"node_class": "kube_node_cpu"}, "Standard_D15_v2",
                        "node_class", SIZES) == ("etcd_events", "vm_tag")
    assert d.node_class({}, {"node_class": "kube_node_gpu"}, "Standard_D15_v2", "node_class", SIZES) == \
        ("kube_node_gpu", "scale_set_tag")


def test_tag_names_match_without_case_and_empty_values_do_not_count():
    assert d.node_class({"Node_Class": "etcd"}, None, None, "node_class", SIZES) == ("etcd", "vm_tag")
    assert d.node_class({"node_class": ""}, {"NODE_CLASS": "etcd"}, None, "node_class", SIZES) == \
        ("etcd", "scale_set_tag")
    assert d.node_class({"role": "bastion"}, None, "Standard_B2s", "node_class", SIZES) == (None, None)


@pytest.mark.parametrize("rules,message", [
    ([{"pattern": "Standard_(", "class": "x"}], "node_class_sizes[0].pattern 'Standard_(' is not a regular expression"),
    ([{"pattern": "a", "class": ""}], "node_class_sizes[0].class must be a non-empty string"),
    ([{"pattern": "a"}], "node_class_sizes[0] must be a mapping with exactly the keys pattern and class"),
    ([{"pattern": "a", "class": "b"}, "Standard_D15_v2"], "node_class_sizes[1] must be a mapping"),
    ([{"pattern": "a", "class": "b", "weight": 1}], "exactly the keys pattern and class"),
])
def test_bad_size_rules_are_named(rules, message):
    with pytest.raises(ValueError) as err:
        d.check_size_classes(rules)
    assert message in str(err.value)


def test_retry_after():
    assert d.retry_after({"Retry-After": "7"}, 1) == 7.0
    assert d.retry_after({"retry-after": "0.5"}, 1) == 0.5
    assert d.retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, 3) == 3
    assert d.retry_after({}, 2) == 2
    assert d.retry_after(None, 0) == 0


def test_errors_say_status_code_message_and_url():
    body = {"error": {"code": "AuthorizationFailed", "message": "no read on x"}}
    text = d.describe_error("GET", "/subscriptions/s/x", 403, body)
    assert text == "Azure answered HTTP 403 to GET /subscriptions/s/x: AuthorizationFailed: no read on x"
    assert d.describe_error("POST", "/t", 401, {"error": "invalid_client", "error_description": "AADSTS7000215"}) == \
        "Azure answered HTTP 401 to POST /t: invalid_client: AADSTS7000215"
    assert d.describe_error("GET", "/u", 502, "gateway") == "Azure answered HTTP 502 to GET /u"


def test_scale_set_of_uniform_flexible_and_plain():
    ss_id = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/gpu-a"
    listed = {"id": ss_id, "name": "gpu-a", "tags": {"node_class": "kube_node_gpu"},
              "sku": {"name": "Standard_NC24s_v3"}, "properties": {"orchestrationMode": "Flexible"}}
    known = {ss_id.lower(): listed}
    flex_vm = {"properties": {"virtualMachineScaleSet": {"id": ss_id.upper()}}}
    assert d.scale_set_of(flex_vm, None, known) == {"id": ss_id, "name": "gpu-a", "orchestration_mode": "Flexible",
                                                    "tags": {"node_class": "kube_node_gpu"},
                                                    "sku": "Standard_NC24s_v3"}
    assert d.scale_set_of({}, {"id": ss_id, "name": "gpu-a"}, known)["tags"] == {"node_class": "kube_node_gpu"}
    # A scale set that was not listed (include_vmss_resource_groups leaves it out): name from the id, no tags.
    assert d.scale_set_of(flex_vm, None, {}) == {"id": ss_id.upper(), "name": "GPU-A", "orchestration_mode": None,
                                                 "tags": {}, "sku": None}
    assert d.scale_set_of({"properties": {}}, None, known) == {}


def test_duplicate_host_message_names_both():
    text = d.duplicate_host_error("web", "/a/web", "/b/web")
    assert "'web'" in text and "/a/web and /b/web" in text and "hostnames" in text


def _gpu_sizes():
    gpu, other, current = [], [], None
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "azure", "gpu_sizes.txt")
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line == "# not GPU":
                current = other
            elif line and not line.startswith("#"):
                (other if current is other else gpu).append(line)
    return gpu, other


GPU, NOT_GPU = _gpu_sizes()


def test_the_size_list_is_azures_current_gpu_generations():
    assert len(GPU) >= 70 and len(NOT_GPU) >= 10
    for series in ("NCC40ads_H100_v5", "NG32ads_V620_v1", "ND128isr_GB300_v6", "NV28adms_V710_v5",
                   "NC320lds_xl_RTXPRO6000BSE_v6", "ND96isr_H200_v5", "ND96isr_MI300X_v5"):
        assert "Standard_" + series in GPU


@pytest.mark.parametrize("size", GPU)
def test_every_documented_gpu_size_is_a_gpu_worker(size):
    assert d.node_class({}, {}, size, "node_class", SIZES) == ("kube_node_gpu", "size")


@pytest.mark.parametrize("size", NOT_GPU)
def test_no_other_size_is(size):
    assert d.node_class({}, {}, size, "node_class", SIZES)[0] != "kube_node_gpu"


# --- what the inventory asks, and what it builds from the answers

SUB = "/subscriptions/s"


NSG = SUB + "/resourceGroups/x/providers/Microsoft.Network/networkSecurityGroups/nsg-1"


def _vm(rg, name, nic_rg=None, pip=False, scale_set=None):
    nic = "%s/resourceGroups/%s/providers/Microsoft.Network/networkInterfaces/%s-nic" % (SUB, nic_rg or rg, name)
    vm = {"id": "%s/resourceGroups/%s/providers/Microsoft.Compute/virtualMachines/%s" % (SUB, rg, name),
          "name": name, "type": "Microsoft.Compute/virtualMachines", "location": "westeurope", "tags": {},
          "properties": {"vmId": "id-" + name, "hardwareProfile": {"vmSize": "Standard_D15_v2"},
                         "provisioningState": "Succeeded",
                         "osProfile": {"computerName": name, "linuxConfiguration": {}},
                         "networkProfile": {"networkInterfaces": [{"id": nic}]},
                         "storageProfile": {"osDisk": {"name": name + "-os", "osType": "Linux",
                                                       "managedDisk": {"id": "disk-" + name}}, "dataDisks": []}}}
    if scale_set:
        vm["properties"]["virtualMachineScaleSet"] = {"id": scale_set}
    ipc = {"name": "ipconfig1", "properties": {"primary": True, "privateIPAddress": "10.0.0.%d" % (len(name)),
                                               "subnet": {"id": "subnet"}}}
    if pip:
        ipc["properties"]["publicIPAddress"] = {"id": "%s/resourceGroups/%s/providers/Microsoft.Network/"
                                                      "publicIPAddresses/%s-ip" % (SUB, nic_rg or rg, name)}
    nic_doc = {"id": nic, "name": name + "-nic", "type": "Microsoft.Network/networkInterfaces",
               "properties": {"macAddress": "00-0D", "ipConfigurations": [ipc],
                              "networkSecurityGroup": {"id": NSG}}}
    return vm, nic_doc


def _drive(fleet, answers):
    """Run the Fleet's requests against `answers` (kind -> callable(request) -> page); the requests, in order."""
    asked, queue = [], fleet.first()
    while queue:
        req = queue.pop(0)
        asked.append(req)
        queue.extend(fleet.take(req, answers[req.kind](req)))
    return asked


def test_the_fleet_asks_each_list_once_and_nothing_per_vm():
    vm_a, nic_a = _vm("nodes", "a", pip=True)
    vm_b, nic_b = _vm("nodes", "b", nic_rg="net")   # its NIC in another resource group
    ss = {"id": SUB + "/resourceGroups/nodes/providers/Microsoft.Compute/virtualMachineScaleSets/cpu",
          "name": "cpu", "properties": {"orchestrationMode": "Uniform"}, "sku": {"name": "Standard_D15_v2"},
          "tags": {"node_class": "kube_node_cpu"}}
    flex = {"id": SUB + "/resourceGroups/nodes/providers/Microsoft.Compute/virtualMachineScaleSets/gpu",
            "name": "gpu", "properties": {"orchestrationMode": "Flexible"}}
    pip = {"id": nic_a["properties"]["ipConfigurations"][0]["properties"]["publicIPAddress"]["id"], "name": "a-ip",
           "properties": {"ipAddress": "20.0.0.1", "dnsSettings": {"fqdn": "a.example"}}}
    answers = {
        "statuses": lambda r: {"value": [{"id": v["id"], "properties": {"instanceView": {
            "statuses": [{"code": "PowerState/running"}], "computerName": v["name"]}}} for v in (vm_a, vm_b)]},
        "vms": lambda r: {"value": [vm_a, vm_b]},
        "scale_sets": lambda r: {"value": [ss, flex]},
        "instances": lambda r: {"value": []},   # scaled to zero
        "nics": lambda r: {"value": [] if r.owner else [n for n in (nic_a, nic_b)
                                                        if "/resourcegroups/%s/" % d.resource_group(n["id"]) in r.url.lower()]},
        "public_ips": lambda r: {"value": [pip]},
    }
    fleet = d.Fleet("s", ["*"], ["*"])
    asked = _drive(fleet, answers)
    urls = sorted(r.describe() for r in asked)
    assert urls == sorted([
        SUB + "/providers/Microsoft.Compute/virtualMachines?api-version=2024-07-01&statusOnly=true",
        SUB + "/providers/Microsoft.Compute/virtualMachines?api-version=2024-07-01",
        SUB + "/providers/Microsoft.Compute/virtualMachineScaleSets?api-version=2024-07-01",
        ss["id"] + "/virtualMachines?$expand=instanceView&api-version=2024-07-01",
        ss["id"] + "/networkInterfaces?api-version=2018-10-01",
        SUB + "/resourceGroups/nodes/providers/Microsoft.Network/networkInterfaces?api-version=2024-03-01",
        SUB + "/resourceGroups/net/providers/Microsoft.Network/networkInterfaces?api-version=2024-03-01",
        SUB + "/resourceGroups/nodes/providers/Microsoft.Network/publicIPAddresses?api-version=2024-03-01",
    ])
    assert fleet.stragglers() == []
    hosts = d.hosts_of(fleet, True, "node_class", SIZES)
    by_name = {r["default_inventory_hostname"]: r["hostvars"] for r in hosts.records}
    assert sorted(by_name) == ["a", "b"] and hosts.failed == [] and hosts.gone == []
    a = by_name["a"]
    assert a["private_ipv4_addresses"] == ["10.0.0.1"] and a["public_ipv4_address"] == ["20.0.0.1"]
    assert a["public_ip_address"] == [{"id": pip["id"], "name": "a-ip", "ipv4_address": "20.0.0.1"}]
    assert a["public_dns_hostnames"] == ["a.example"] and a["security_group"] == ["nsg-1"]
    assert a["powerstate"] == "running" and a["os_compute_name"] == "a" and a["resource_group"] == "nodes"
    assert (a["node_class"], a["node_class_source"]) == ("kube_node_cpu", "size")
    assert by_name["b"]["network_interface"] == ["b-nic"]


def test_resource_groups_are_listed_once_and_a_star_covers_them_all():
    fleet = d.Fleet("s", ["Nodes", "nodes", "other"], ["*", "nodes"])
    kinds = [(r.kind, r.url) for r in fleet.first()]
    assert kinds == [
        ("statuses", SUB + "/providers/Microsoft.Compute/virtualMachines"),
        ("vms", SUB + "/resourceGroups/Nodes/providers/Microsoft.Compute/virtualMachines"),
        ("vms", SUB + "/resourceGroups/other/providers/Microsoft.Compute/virtualMachines"),
        ("scale_sets", SUB + "/providers/Microsoft.Compute/virtualMachineScaleSets"),
    ]
    assert d.Fleet("s", [], []).first() == []


def test_what_changed_between_two_lists_is_asked_once_and_a_deleted_vm_is_left_out():
    vm_a, nic_a = _vm("nodes", "a")
    vm_b, _nic_b = _vm("nodes", "b")
    fleet = d.Fleet("s", ["*"], [])
    fleet.vms = {vm_a["id"].lower(): vm_a, vm_b["id"].lower(): vm_b}
    fleet.nics = {nic_a["id"].lower(): nic_a}
    fleet.statuses = {vm_a["id"].lower(): {"statuses": [{"code": "PowerState/running"}]}}
    asks = fleet.stragglers()
    asked = sorted((r.kind, r.url.rsplit("/", 2)[-2:][-1]) for r in asks)
    assert asked == [("instance_view", "instanceView"), ("nic", "b-nic")]
    assert fleet.stragglers() == []  # asked once
    for req in asks:
        fleet.take_single(req, None)  # 404: b was deleted meanwhile
    hosts = d.hosts_of(fleet, True, "node_class", SIZES)
    assert [r["default_inventory_hostname"] for r in hosts.records] == ["a"]
    assert hosts.gone == [vm_b["id"].lower()]


def test_a_failed_vm_is_reported_and_a_running_updating_one_is_kept():
    vm, nic = _vm("ctl", "master-2")
    vm["properties"]["provisioningState"] = "Failed"
    fleet = d.Fleet("s", ["*"], [])
    fleet.vms, fleet.nics = {vm["id"].lower(): vm}, {nic["id"].lower(): nic}
    fleet.statuses = {vm["id"].lower(): {"statuses": [{"code": "ProvisioningState/failed"},
                                                      {"code": "PowerState/running"}]}}
    hosts = d.hosts_of(fleet, False, "node_class", SIZES)
    hv = hosts.records[0]["hostvars"]
    assert hv["provisioning_state"] == "failed" and hv["powerstate"] == "running"
    assert hosts.failed == ["master-2 (resource group ctl, running)"]
    assert hosts.records[0]["default_inventory_hostname"].startswith("master-2_")  # azure_rm's unique name


def test_power_state_and_resource_group():
    assert d.power_state({"statuses": [{"code": "ProvisioningState/updating"}, {"code": "PowerState/running"}]}) \
        == "running"
    assert d.power_state({}) == "unknown" and d.power_state(None) == "unknown"
    assert d.resource_group(SUB + "/resourceGroups/Kube-Nodes/providers/x/y/z") == "kube-nodes"
    assert d.resource_group("/subscriptions/s") is None
