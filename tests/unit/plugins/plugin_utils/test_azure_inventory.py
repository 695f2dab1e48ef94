import pytest

from ansible_collections.kubescale.tuning.plugins.module_utils import _azure_inventory as d

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


def test_only_the_uniform_instance_nic_refusal_is_tolerated():
    nic = ("https://management.azure.com/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/"
           "virtualMachineScaleSets/cpu-a/virtualMachines/3/networkInterfaces/cpu-a-nic?api-version=2024-05-01")
    assert d.tolerated(nic, 400)
    assert not d.tolerated(nic, 403)
    assert not d.tolerated(nic.replace("/networkInterfaces/cpu-a-nic", ""), 400)
    assert not d.tolerated("/subscriptions/s/providers/Microsoft.Compute/virtualMachines?api-version=x", 400)


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
