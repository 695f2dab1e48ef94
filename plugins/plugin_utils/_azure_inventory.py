# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: the decisions of the kubescale.tuning.azure_rm inventory, as data (standard library only).

What ARM operations the inventory asks (`Fleet`: which lists, which pages, and what each answer makes it ask next),
which node class a VM belongs to, which ARM answers are retried and what an error says, and the host variables of a
VM from the resources the lists returned (`host_vars`: azure.azcollection's azure_rm's names and values).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

# The API versions of the Azure SDK packages requirements-azure.txt pins (azure-mgmt-compute 33.0.0,
# azure-mgmt-network 28.0.0). A Uniform scale set's network interfaces and public IPs are served only under 2018-10-01.
COMPUTE_API = "2024-07-01"
NETWORK_API = "2024-03-01"
SCALE_SET_NETWORK_API = "2018-10-01"

# ARM's transient answers: throttling, timeouts and server errors. Everything else that is not 200 is final.
RETRY_STATUSES = frozenset([408, 429, 500, 502, 503, 504])

# Azure's GPU families (learn.microsoft.com, "GPU accelerated" sizes): NC, NCC (confidential), ND, NG and NV, every
# generation and variant. NP (FPGA) and the CPU families stay out.
GPU_SIZES = "Standard_N(?:CC?|D|G|V)[0-9].*"

DEFAULT_SIZE_CLASSES = [
    {"pattern": "Standard_D15_v2", "class": "kube_node_cpu"},
    {"pattern": GPU_SIZES, "class": "kube_node_gpu"},
]

_POWER = re.compile(r"^PowerState/(?P<state>.+)$")


def tag_value(tags, name):
    """The value of `name` in `tags`, matched without regard to case as Azure does for tag names (and HTTP for
    header names)."""
    for key, value in (tags or {}).items():
        if key.lower() == name.lower():
            return value
    return None


def check_size_classes(rules):
    """Compiled (regex, class) pairs of `node_class_sizes`; ValueError naming the bad entry."""
    compiled = []
    for index, rule in enumerate(rules or []):
        if not isinstance(rule, dict) or set(rule) != {"pattern", "class"}:
            raise ValueError("node_class_sizes[%d] must be a mapping with exactly the keys pattern and class, got %r"
                             % (index, rule))
        if not isinstance(rule["class"], str) or not rule["class"]:
            raise ValueError("node_class_sizes[%d].class must be a non-empty string, got %r" % (index, rule["class"]))
        try:
            compiled.append((re.compile(rule["pattern"], re.I), rule["class"]))
        except (re.error, TypeError) as exc:
            raise ValueError("node_class_sizes[%d].pattern %r is not a regular expression: %s"
                             % (index, rule["pattern"], exc)) from None
    return compiled


def node_class(vm_tags, scale_set_tags, size, tag, size_classes):
    """(class, source) of a VM: its own `tag`, else its scale set's, else the first size rule matching the whole size.

    source is 'vm_tag', 'scale_set_tag' or 'size'; (None, None) when nothing decides (an empty tag value counts as no tag).
    """
    for source, tags in (("vm_tag", vm_tags), ("scale_set_tag", scale_set_tags)):
        value = tag_value(tags, tag)
        if value:
            return value, source
    for regex, cls in size_classes:
        if size and regex.fullmatch(size):
            return cls, "size"
    return None, None


def retry_after(headers, default):
    """Seconds from a Retry-After header (case-insensitive; seconds form), else `default`."""
    value = tag_value(headers, "Retry-After")
    if value is None:
        return default
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        return default


def describe_error(method, url, status, body):
    """One line for an ARM answer that is not a success: status, ARM's error code and message, the URL."""
    code = message = None
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            code, message = error.get("code"), error.get("message")
        elif isinstance(error, str):
            code, message = error, body.get("error_description")
    text = "Azure answered HTTP %s to %s %s" % (status, method, url)
    if code or message:
        text += ": %s: %s" % (code, message)
    return text


def scale_set_of(vm_model, uniform_scale_set, known):
    """The scale set hostvar of a VM: {id, name, orchestration_mode, tags, sku}, {} for a VM outside any scale set.

    `uniform_scale_set` is the scale set a Uniform instance was listed from; a Flexible instance names its scale set
    in properties.virtualMachineScaleSet.id; `known` maps lower-case scale set ids to the listed scale sets.
    """
    ref = uniform_scale_set or ((vm_model.get("properties") or {}).get("virtualMachineScaleSet") or {})
    ss_id = ref.get("id")
    if not ss_id:
        return {}
    listed = known.get(ss_id.lower()) or {}
    return {
        "id": listed.get("id", ss_id),
        "name": listed.get("name", ss_id.rstrip("/").rsplit("/", 1)[-1]),
        "orchestration_mode": (listed.get("properties") or {}).get("orchestrationMode"),
        "tags": listed.get("tags") or {},
        "sku": (listed.get("sku") or {}).get("name"),
    }


def duplicate_host_error(name, first_id, second_id):
    return ("azure_rm: two VMs have the inventory host name %r: %s and %s. Host names must be unique; add the resource "
            "group to `hostnames` (e.g. name ~ '.' ~ resource_group) or rename one." % (name, first_id, second_id))


def resource_group(resource_id):
    """The resource group of an ARM resource id, lower-case (ARM's ids are case-insensitive)."""
    parts = (resource_id or "").split("/")
    return parts[4].lower() if len(parts) > 4 and parts[3].lower() == "resourcegroups" else None


def power_state(instance_view):
    """The VM's power state from its instance view ('running', 'deallocated', ...), 'unknown' without one."""
    for status in (instance_view or {}).get("statuses") or []:
        m = _POWER.match(status.get("code") or "")
        if m:
            return m.group("state")
    return "unknown"


# --- what to ask ARM -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Request:
    """One GET: `url` (a path, or a nextLink), `params` (the query, None for a nextLink, which carries its own),
    `kind` (what the answer is, for `Fleet.take`) and `owner` (the scale set a page belongs to, lower-case id)."""
    url: str
    params: dict | None
    kind: str
    owner: str | None = None

    def describe(self):
        if not self.params:
            return self.url
        return self.url + "?" + "&".join("%s=%s" % kv for kv in sorted(self.params.items()))


def _list(url, api, kind, owner=None, **extra):
    return Request(url, dict({"api-version": api}, **extra), kind, owner)


@dataclass
class Fleet:
    """What the lists returned, and what each answer makes the inventory ask next.

    The VMs (plain and Flexible instances) of each resource group `vm_groups` names ('*': the subscription) and their
    run-time status (one subscription list, statusOnly); the scale sets of `scale_set_groups`, and for each Uniform
    one its instances with their instance views, and its network interfaces; the network interfaces and public IPs
    of the resource groups the VMs' references name, each listed once. Every list is one request per page.
    """
    subscription: str
    vm_groups: list
    scale_set_groups: list
    vms: dict = field(default_factory=dict)              # lower-case id -> VM (plain, Flexible)
    statuses: dict = field(default_factory=dict)         # lower-case VM id -> instance view
    scale_sets: dict = field(default_factory=dict)       # lower-case id -> scale set
    instances: dict = field(default_factory=dict)        # lower-case scale set id -> [Uniform instance]
    nics: dict = field(default_factory=dict)             # lower-case id -> network interface
    public_ips: dict = field(default_factory=dict)       # lower-case id -> public IP address
    gone: set = field(default_factory=set)               # lower-case ids of VMs deleted while they were listed
    _asked: set = field(default_factory=set)             # what was asked: ('nics', rg), ('pips', scale set id) ...

    def _root(self):
        return "/subscriptions/%s" % self.subscription

    def _group_path(self, rg):
        return self._root() if rg in (None, "", "*") else "%s/resourceGroups/%s" % (self._root(), rg)

    def first(self):
        """The lists every inventory starts from."""
        asks = []
        if self.vm_groups:
            asks.append(_list(self._root() + "/providers/Microsoft.Compute/virtualMachines", COMPUTE_API, "statuses",
                              statusOnly="true"))
        for rg in _unique_groups(self.vm_groups):
            asks.append(_list(self._group_path(rg) + "/providers/Microsoft.Compute/virtualMachines", COMPUTE_API,
                              "vms"))
        for rg in _unique_groups(self.scale_set_groups):
            asks.append(_list(self._group_path(rg) + "/providers/Microsoft.Compute/virtualMachineScaleSets",
                              COMPUTE_API, "scale_sets"))
        return asks

    def _once(self, key, request):
        if key in self._asked:
            return []
        self._asked.add(key)
        return [request]

    def _nic_asks(self, refs):
        asks = []
        for ref in refs:
            rg = resource_group(ref.get("id"))
            if rg and "/virtualmachinescalesets/" not in ref["id"].lower():
                asks += self._once(("nics", rg), _list(self._group_path(rg) + "/providers/Microsoft.Network/"
                                                       "networkInterfaces", NETWORK_API, "nics"))
        return asks

    def take(self, request, page):
        """Keep what one page of `request.kind` holds; the requests it makes necessary (never its nextLink)."""
        items = page.get("value") or []
        asks = []
        if request.kind == "statuses":
            for vm in items:
                self.statuses[vm["id"].lower()] = (vm.get("properties") or {}).get("instanceView") or {}
        elif request.kind == "vms":
            for vm in items:
                self.vms[vm["id"].lower()] = vm
                asks += self._nic_asks(((vm.get("properties") or {}).get("networkProfile") or {})
                                       .get("networkInterfaces") or [])
        elif request.kind == "scale_sets":
            for ss in items:
                key = ss["id"].lower()
                self.scale_sets[key] = ss
                if (ss.get("properties") or {}).get("orchestrationMode") == "Flexible":
                    continue  # its instances are VMs, in the VM lists
                self.instances.setdefault(key, [])
                asks += self._once(("instances", key), _list(ss["id"] + "/virtualMachines", COMPUTE_API,
                                                             "instances", key, **{"$expand": "instanceView"}))
                asks += self._once(("scale_set_nics", key), _list(ss["id"] + "/networkInterfaces",
                                                                  SCALE_SET_NETWORK_API, "nics", key))
        elif request.kind == "instances":
            self.instances.setdefault(request.owner, []).extend(items)
        elif request.kind in ("nics", "public_ips"):
            store = self.nics if request.kind == "nics" else self.public_ips
            for item in items:
                store[item["id"].lower()] = item
            if request.kind == "nics":
                for nic in items:
                    for ipc in (nic.get("properties") or {}).get("ipConfigurations") or []:
                        pip = ((ipc.get("properties") or {}).get("publicIPAddress") or {}).get("id")
                        if pip:
                            asks += self._pip_asks(pip, request.owner)
        else:  # pragma: no cover - every kind is one of the above
            raise ValueError("unknown list kind %r" % request.kind)
        return asks

    def _pip_asks(self, pip_id, scale_set):
        if scale_set:  # a Uniform instance's public IP: its scale set's list
            ss = self.scale_sets[scale_set]
            return self._once(("scale_set_pips", scale_set), _list(ss["id"] + "/publicipaddresses",
                                                                   SCALE_SET_NETWORK_API, "public_ips", scale_set))
        rg = resource_group(pip_id)
        return self._once(("pips", rg), _list(self._group_path(rg) + "/providers/Microsoft.Network/publicIPAddresses",
                                              NETWORK_API, "public_ips"))

    def stragglers(self):
        """Single GETs for what a VM names but no list returned (created or changed between two lists): a VM's
        instance view, a network interface, a public IP. Asked once each; their answers go to `take_single`."""
        asks = []
        for key, vm in self.vms.items():
            if key not in self.statuses and key not in self.gone:
                asks += self._once(("view", key), Request(vm["id"] + "/instanceView", {"api-version": COMPUTE_API},
                                                          "instance_view", key))
        for vm, _scale_set in self.each_vm():
            key = vm["id"].lower()
            for ref in _nic_refs(vm):
                nic = self.nics.get(ref["id"].lower())
                uniform = "/virtualmachinescalesets/" in ref["id"].lower()
                api = SCALE_SET_NETWORK_API if uniform else NETWORK_API
                if nic is None:
                    asks += self._once(("nic", ref["id"].lower()), Request(ref["id"], {"api-version": api}, "nic", key))
                    continue
                for ipc in (nic.get("properties") or {}).get("ipConfigurations") or []:
                    pip = ((ipc.get("properties") or {}).get("publicIPAddress") or {}).get("id")
                    if pip and pip.lower() not in self.public_ips:
                        asks += self._once(("pip", pip.lower()), Request(pip, {"api-version": api}, "public_ip", key))
        return asks

    def take_single(self, request, body):
        """The answer to a straggler's GET; None (a 404) means the resource is gone with its VM (deleted while the
        inventory listed it): the VM is left out, and named in `gone`."""
        if body is None:
            self.gone.add(request.owner)
        elif request.kind == "instance_view":
            self.statuses[request.owner] = body
        else:
            (self.nics if request.kind == "nic" else self.public_ips)[body["id"].lower()] = body

    def each_vm(self):
        """(VM, the Uniform scale set it was listed from or None), in a stable order."""
        for key in sorted(self.vms):
            yield self.vms[key], None
        for ss_key in sorted(self.instances):
            for vm in self.instances[ss_key]:
                yield vm, self.scale_sets[ss_key]


def _unique_groups(groups):
    seen, out = set(), []
    for rg in groups or []:
        key = "*" if rg in (None, "", "*") else rg.lower()
        if "*" in seen or key in seen:
            continue
        if key == "*":
            out, seen = ["*"], {"*"}
            continue
        seen.add(key)
        out.append(rg)
    return out


def _nic_refs(vm):
    return ((vm.get("properties") or {}).get("networkProfile") or {}).get("networkInterfaces") or []


# --- host variables --------------------------------------------------------------------------------------------------

def default_hostname(vm, legacy_name):
    """azure_rm's host name: the VM name, or (without plain_host_names) the name and 4 hex of the id's SHA-1."""
    if legacy_name:
        return vm["name"]
    return "%s_%s" % (vm["name"], hashlib.sha1(vm["id"].encode()).hexdigest()[0:4])


def host_vars(vm, instance_view, nics, public_ips, uniform_scale_set, legacy_name):
    """The host variables of one VM, under azure_rm's names and with its values.

    `nics` maps lower-case NIC ids to the listed network interfaces, `public_ips` public IP ids to the listed
    addresses; `uniform_scale_set` is the scale set a Uniform instance was listed from (None otherwise).
    Network interfaces keep ARM's own shape (camelCase) for every VM, Uniform instances included.
    """
    props = vm.get("properties") or {}
    os_profile = props.get("osProfile")
    system = "unknown"
    if os_profile is not None:
        if "linuxConfiguration" in os_profile:
            system = "linux"
        if "windowsConfiguration" in os_profile:
            system = "windows"
    else:
        os_type = ((props.get("storageProfile") or {}).get("osDisk") or {}).get("osType")
        system = {"Linux": "linux", "Windows": "windows"}.get(os_type, system)
    view = instance_view or {}
    hv = {
        "network_interface": [], "network_interface_properties": [], "mac_address": [], "network_interface_id": [],
        "security_group_id": [], "security_group": [], "public_ip_address": [], "public_ipv4_address": [],
        "public_dns_hostnames": [], "private_ipv4_addresses": [], "subnet": [],
        "id": vm["id"],
        "location": vm["location"],
        "name": vm["name"],
        "computer_name": (os_profile or {}).get("computerName"),
        "availability_zone": vm.get("zones"),
        "powerstate": power_state(view),
        "provisioning_state": (props.get("provisioningState") or "").lower(),
        "tags": vm.get("tags", {}),
        "resource_type": vm.get("type", "unknown"),
        "vmid": props.get("vmId"),
        "os_profile": {"system": system},
        "vmss": {"id": uniform_scale_set["id"], "name": uniform_scale_set["name"]} if uniform_scale_set else {},
        "virtual_machine_size": (props.get("hardwareProfile") or {}).get("vmSize") if props.get("hardwareProfile")
        else None,
        "plan": props["plan"]["name"] if props.get("plan") else None,
        "resource_group": resource_group(vm["id"]),
        "default_inventory_hostname": default_hostname(vm, legacy_name),
        "creation_time": props.get("timeCreated"),
        "license_type": props.get("licenseType", "Unknown"),
    }
    refs = _nic_refs(vm)
    listed = []
    for ref in refs:
        nic = nics.get(ref["id"].lower())
        if nic is not None:
            # a VM with one NIC does not say it is the primary
            listed.append(((ref.get("properties") or {}).get("primary", len(refs) == 1), nic))
    for _primary, nic in sorted(listed, key=lambda pn: pn[0], reverse=True):
        nprops = nic.get("properties") or {}
        ipcs = sorted(nprops.get("ipConfigurations") or [],
                      key=lambda i: (i.get("properties") or {}).get("primary", False), reverse=True)
        for ipc in ipcs:
            iprops = ipc.get("properties") or {}
            if iprops.get("subnet"):
                hv["subnet"].append(iprops["subnet"])
            if iprops.get("privateIPAddress"):
                hv["private_ipv4_addresses"].append(iprops["privateIPAddress"])
            pip_id = (iprops.get("publicIPAddress") or {}).get("id")
            pip = public_ips.get(pip_id.lower()) if pip_id else None
            if pip is not None:
                pprops = pip.get("properties") or {}
                hv["public_ipv4_address"].append(pprops.get("ipAddress"))
                hv["public_ip_address"].append({"id": pip_id, "name": pip["name"], "ipv4_address": pprops.get("ipAddress")})
                fqdn = (pprops.get("dnsSettings") or {}).get("fqdn")
                if fqdn:
                    hv["public_dns_hostnames"].append(fqdn)
        hv["mac_address"].append(nprops.get("macAddress"))
        hv["network_interface"].append(nic["name"])
        hv["network_interface_id"].append(nic["id"])
        nsg = (nprops.get("networkSecurityGroup") or {}).get("id")
        if nsg:
            hv["security_group_id"].append(nsg)
            hv["security_group"].append(nsg.rstrip("/").rsplit("/", 1)[-1])
        hv["network_interface_properties"].append(nic)
    hv["os_compute_name"] = view.get("computerName")
    hv["os_name"] = view.get("osName")
    hv["os_version"] = view.get("osVersion")
    hv["hyper_v_generation"] = view.get("hyperVGeneration")
    hv["image"], hv["os_disk"], hv["data_disks"] = {}, {}, []
    storage = props.get("storageProfile")
    if storage:
        image = storage.get("imageReference") or {}
        if image.get("publisher"):
            hv["image"] = {"sku": image.get("sku"), "publisher": image.get("publisher"),
                           "version": image.get("version"), "offer": image.get("offer")}
        elif image.get("id"):
            hv["image"] = {"id": image.get("id")}
        os_disk = storage.get("osDisk") or {}
        hv["os_disk"] = {"name": os_disk.get("name"),
                         "operating_system_type": os_disk["osType"].lower() if os_disk.get("osType") else None,
                         "id": (os_disk.get("managedDisk") or {}).get("id")}
        hv["data_disks"] = [{"name": d.get("name"), "lun": d.get("lun"), "id": (d.get("managedDisk") or {}).get("id")}
                            for d in storage.get("dataDisks") or []]
    return hv


@dataclass
class Hosts:
    """The inventory's hosts from a `Fleet`: azure_rm's host variables, the scale set, the size and the class."""
    records: list            # [{"default_inventory_hostname": ..., "hostvars": {...}}]
    failed: list             # the VMs whose provisioning failed: name, resource group, power state
    gone: list               # the VMs deleted while the inventory listed them


def hosts_of(fleet, legacy_name, class_tag, size_classes):
    records, failed = [], []
    for vm, uniform in fleet.each_vm():
        if vm["id"].lower() in fleet.gone:
            continue
        view = (vm.get("properties") or {}).get("instanceView") if uniform else fleet.statuses.get(vm["id"].lower())
        hv = host_vars(vm, view, fleet.nics, fleet.public_ips, uniform, legacy_name)
        ss = scale_set_of(vm, uniform, fleet.scale_sets)
        hv["scale_set"] = ss
        if not hv.get("virtual_machine_size"):
            hv["virtual_machine_size"] = (vm.get("sku") or {}).get("name") or ss.get("sku")
        hv["node_class"], hv["node_class_source"] = node_class(hv.get("tags"), ss.get("tags"),
                                                               hv["virtual_machine_size"], class_tag, size_classes)
        if hv["provisioning_state"] == "failed":
            failed.append("%s (resource group %s, %s)" % (hv["name"], hv["resource_group"], hv["powerstate"]))
        records.append({"default_inventory_hostname": hv["default_inventory_hostname"], "hostvars": hv})
    return Hosts(records, failed, sorted(fleet.gone))
