# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: azure_rm
short_description: Azure VMs and scale set instances, listed with documented ARM operations, in their node classes
version_added: 0.4.0
description:
  - Lists the subscription's VMs and scale set instances with documented Azure Resource Manager operations, a page at
    a time and several pages at once, and builds the hosts azure.azcollection's C(azure_rm) inventory builds (the same
    options, host names and host variables), with a node class per host.
  - "The operations: the VMs of each resource group of O(include_vm_resource_groups) (VirtualMachines List, or
    ListAll for C(*)) and their run-time status in one subscription list (VirtualMachines ListAll with
    C(statusOnly=true)); the scale sets of O(include_vmss_resource_groups) and, for each Uniform one, its instances
    with their instance views (VirtualMachineScaleSetVMs List, C($expand=instanceView)) and its network interfaces
    (NetworkInterfaces ListVirtualMachineScaleSetNetworkInterfaces); the network interfaces and public IPs of the
    resource groups the VMs name (NetworkInterfaces List, PublicIPAddresses List). Nothing is asked per VM, except
    what changed between two lists (a VM created meanwhile: its instance view, its network interface)."
  - API versions are those of the Azure SDK packages of C(requirements-azure.txt) - compute 2024-07-01, network
    2024-03-01, a Uniform scale set's network resources 2018-10-01. Credentials, clouds and C(cloud_environment) are
    azure.azcollection's (C(auth_source) and the rest).
  - Each host gets C(scale_set) (C(id), C(name), C(orchestration_mode), C(tags), C(sku)) for Uniform and Flexible
    instances alike, C(virtual_machine_size) for Uniform instances (from their SKU), and C(node_class) with
    C(node_class_source) from the VM's tag, else its scale set's tag, else its size.
  - A VM whose provisioning failed is reported in a warning naming it; a running VM is listed whatever its
    provisioning state (C(updating) while an extension installs or a tag changes).
  - Every ARM answer that is not a success is retried (408, 429, 5xx; C(Retry-After) honoured, at most O(retry_limit)
    times) or fails the inventory with the status, ARM's error code and message and the URL. A page is never dropped.
  - Two VMs with the same host name fail the inventory instead of one silently overwriting the other.
  - Network interfaces in C(network_interface_properties) and C(subnet) keep ARM's own shape for every VM;
    azure.azcollection's C(azure_rm) gives a Uniform instance's in the SDK's (snake_case).
  - Requires a YAML configuration file whose name ends with C(azure_rm.yml) or C(azure_rm.yaml), and the Python
    packages of azure.azcollection on the controller (C(requirements-azure.txt)). With a warm inventory cache none of
    them is imported.
author:
  - kubescale.tuning contributors (@kubescale)
requirements:
  - azure.azcollection 3.12 or newer and its Python requirements
extends_documentation_fragment:
  - azure.azcollection.azure
  - azure.azcollection.azure_rm
  - constructed
  - inventory_cache
options:
  plugin:
    description: Marks this as an instance of the kubescale.tuning.azure_rm plugin.
    required: true
    choices: [kubescale.tuning.azure_rm]
  batch_fetch:
    description: Not used; accepted so configurations written for azure.azcollection's C(azure_rm) keep working.
      Every request here is a documented operation, never the undocumented C(/batch).
    type: bool
    default: true
  include_arc_resource_groups:
    description: Azure Arc machines are not listed by this plugin; any value but the empty list is refused.
    type: list
    elements: str
    default: []
  include_hcivm_resource_groups:
    description: Azure Stack HCI VMs are not listed by this plugin; any value but the empty list is refused.
    type: list
    elements: str
    default: []
  default_host_filters:
    description:
      - Jinja2 conditions that leave a host out, in addition to O(exclude_host_filters) and O(running_only).
      - None by default; azure.azcollection's C(azure_rm) also left out every VM whose provisioning state is not
        C(succeeded), running ones included (C(updating) while an extension installs or a tag changes).
    type: list
    elements: str
    default: []
  running_only:
    description:
      - Leave out the VMs that do not run (deallocated, stopped, starting, stopping), decided from the power state of
        their instance view without a template. A running VM stays whatever its provisioning state.
    type: bool
    default: true
  node_class_groups:
    description:
      - Put each host in C(node_class_<class>), or in C(node_class_untagged) when no tag and no size rule gives it a
        class, and in the group named after its class when that is one of O(node_classes); decided without a template
        (the groups C(keyed_groups) and C(conditional_groups) on C(node_class) would make, without their cost per
        host).
    type: bool
    default: true
  node_classes:
    description: The classes that are also groups of their own name (the site playbook's plays target these).
    type: list
    elements: str
    default: [etcd, etcd_events, kube_control_plane, kube_node_cpu, kube_node_gpu]
  provisioning_failed_group:
    description:
      - The group of the VMs whose provisioning failed (they are also named in a warning); empty for none.
    type: str
    default: provisioning_failed
  ansible_host_address:
    description:
      - The address C(ansible_host) is set to. C(private) is the first private IPv4 address of the primary network
        interface; C(public_first) is azure_rm's default, the first public address and else the first private one.
      - O(hostvar_expressions) (or O(compose)) setting C(ansible_host) overrides it.
    type: str
    choices: [private, public_first]
    default: public_first
  network_interface_properties:
    description:
      - Whether hosts carry C(network_interface_properties), each network interface's whole ARM document, as
        azure.azcollection's C(azure_rm) gives them. The network variables built from them stay either way
        (C(private_ipv4_addresses), C(public_ipv4_address), C(mac_address), C(network_interface), C(subnet),
        C(security_group) and the rest).
      - They are most of a host's variables; at 2,500 VMs, leaving them out makes loading the inventory about half as
        long (docs/benchmarks.md).
    type: bool
    default: true
  request_concurrency:
    description: How many ARM requests are in flight at once.
    type: int
    default: 8
    env:
      - name: KUBESCALE_AZURE_REQUEST_CONCURRENCY
  node_class_tag:
    description: Name of the tag (on the VM, or else on its scale set) that names the node class. Matched without
      regard to case, as Azure treats tag names.
    type: str
    default: node_class
  node_class_sizes:
    description:
      - Size rules for VMs whose tag names no class, tried in order. C(pattern) is a regular expression that must
        match the whole VM size, without regard to case.
      - The default puts Standard_D15_v2 in C(kube_node_cpu) and Azure's GPU families - NC, NCC, ND, NG and NV, every
        generation and variant (for example Standard_NC24ads_A100_v4, Standard_NCC40ads_H100_v5,
        Standard_ND96isr_H200_v5, Standard_NG32ads_V620_v1, Standard_NV36ads_A10_v5) - in C(kube_node_gpu).
    type: list
    elements: dict
    default:
      - {pattern: Standard_D15_v2, class: kube_node_cpu}
      - {pattern: "Standard_N(?:CC?|D|G|V)[0-9].*", class: kube_node_gpu}
  retry_limit:
    description: How many times one ARM request is retried after a throttling (429) or transient (408, 5xx) answer
      before the inventory fails.
    type: int
    default: 6
    env:
      - name: KUBESCALE_AZURE_RETRY_LIMIT
  retry_max_delay:
    description: Upper bound in seconds of one wait before a retry (the larger of C(Retry-After) and an exponential
      backoff from 1 s).
    type: float
    default: 60
    env:
      - name: KUBESCALE_AZURE_RETRY_MAX_DELAY
"""

EXAMPLES = r"""
# inventories/azure/azure_rm.yml (the file name must end in azure_rm.yml)
plugin: kubescale.tuning.azure_rm
auth_source: auto
include_vm_resource_groups: ['*']
include_vmss_resource_groups: ['*']
plain_host_names: true
ansible_host_address: private
# node_class_groups (default true): kube_node_cpu, node_class_kube_node_cpu, ..., node_class_untagged
keyed_groups:
  - prefix: location
    key: location
"""

import json
import os
import re
from itertools import chain

from ansible.errors import AnsibleError, AnsibleParserError
from ansible.module_utils.common.text.converters import to_native, to_text
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable

from ansible_collections.kubescale.tuning.plugins.plugin_utils import _arm_lister as arm
from ansible_collections.kubescale.tuning.plugins.plugin_utils import _azure_inventory as decide

try:
    from ansible.template import trust_as_template
except ImportError:  # pragma: no cover - ansible-core before 2.19
    def trust_as_template(value):
        return value


def _cloud_from_metadata_endpoint(url):
    """An azure.cli.core Cloud from ARM's metadata endpoint: what azure_rm_common expects of the removed function."""
    import requests
    from azure.cli.core import cloud as azure_cloud

    response = requests.get(url, timeout=30)
    response.raise_for_status()
    doc = response.json()
    clouds = doc if isinstance(doc, list) else [doc]
    if not clouds:
        raise AnsibleError("cloud_environment %s lists no cloud" % url)
    host = url.split("/")[2].lower()
    chosen = next((c for c in clouds if host in (c.get("resourceManager") or "").lower()), clouds[0])
    return azure_cloud._arm_to_cli_mapper(chosen)


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):

    NAME = "kubescale.tuning.azure_rm"

    def verify_file(self, path):
        if super(InventoryModule, self).verify_file(path) and re.match(r".*azure_rm\.ya?ml$", path):
            return True
        raise AnsibleError("azure_rm inventory filename must end with 'azure_rm.yml' or 'azure_rm.yaml'")

    def parse(self, inventory, loader, path, cache=True):
        super(InventoryModule, self).parse(inventory, loader, path)
        self._read_config_data(path)
        try:
            self._sizes = decide.check_size_classes(self.get_option("node_class_sizes"))
        except ValueError as exc:
            raise AnsibleError("%s: %s" % (path, exc)) from None
        for option in ("include_arc_resource_groups", "include_hcivm_resource_groups"):
            if self.get_option(option):
                raise AnsibleError("%s: %s is not supported by kubescale.tuning.azure_rm (it lists VMs and scale set "
                                   "instances); use azure.azcollection.azure_rm for those machines" % (path, option))
        if self.get_option("use_contrib_script_compatible_sanitization"):
            self._sanitize_group_name = _legacy_group_name

        cache_key = self.get_cache_key(path)
        use_cache = self.get_option("cache")
        results = None
        if use_cache and cache:
            try:
                results = self._cache[cache_key]
            except KeyError:
                pass
        if results is None:
            results = self._fetch()
            if use_cache:
                self._cache[cache_key] = results
        self._populate(results)

    # --- ARM
    def _credential_setup(self):
        """azure.azcollection's authentication (auth_source, profiles, service principals, managed identities,
        clouds): an azure-core pipeline to ARM with a bearer token, and the subscription. Imported only here."""
        from azure.cli.core import cloud as azure_cloud
        from azure.core import PipelineClient
        from azure.core.configuration import Configuration
        from azure.core.pipeline.policies import BearerTokenCredentialPolicy
        from azure.core.pipeline.transport import RequestsTransport

        from ansible_collections.azure.azcollection.plugins.module_utils.azure_rm_common import AzureRMAuth

        if not hasattr(azure_cloud, "get_cloud_from_metadata_endpoint"):
            azure_cloud.get_cloud_from_metadata_endpoint = _cloud_from_metadata_endpoint
        options = dict(
            auth_source=os.environ.get("ANSIBLE_AZURE_AUTH_SOURCE") or self.get_option("auth_source"),
            track1_cred=True,
        )
        for name in ("profile", "subscription_id", "client_id", "secret", "tenant", "ad_user", "password",
                     "cloud_environment", "cert_validation_mode", "api_profile", "adfs_authority_url"):
            options[name] = self.get_option(name)
        for name in ("tenant", "client_id", "secret", "subscription_id"):
            if options[name] and self.templar.is_template(options[name]):
                options[name] = self.templar.template(variable=options[name])
        auth = AzureRMAuth(**options)
        endpoint = auth._cloud_environment.endpoints.resource_manager.rstrip("/")
        config = Configuration()
        config.authentication_policy = BearerTokenCredentialPolicy(auth.azure_credential_track2,
                                                                   endpoint + "/.default")
        # One connection pool, as large as the requests in flight.
        import requests
        session = requests.Session()
        size = max(1, self.get_option("request_concurrency"))
        session.mount("https://", requests.adapters.HTTPAdapter(pool_connections=size, pool_maxsize=size))
        transport = RequestsTransport(session=session, session_owner=True)
        client = PipelineClient(endpoint, config=config, transport=transport)
        return client, auth.subscription_id

    def _fetch(self):
        client, subscription = self._credential_setup()

        def send(url, params):
            request = client.get(url, params or {}, {"Accept": "application/json"})
            response = client.send_request(request)
            text = response.text()
            try:
                body = json.loads(text) if text else {}
            except ValueError:
                body = {"error": {"code": "NotJson", "message": text[:200]}}
            return arm.Answer(response.status_code, dict(response.headers), body)

        vm_groups = self.get_option("include_vm_resource_groups")
        if os.environ.get("ANSIBLE_AZURE_VM_RESOURCE_GROUPS"):
            vm_groups = os.environ["ANSIBLE_AZURE_VM_RESOURCE_GROUPS"].split(",")
        ss_groups = self.get_option("include_vmss_resource_groups")
        if os.environ.get("ANSIBLE_AZURE_VMSS_RESOURCE_GROUPS"):
            ss_groups = os.environ["ANSIBLE_AZURE_VMSS_RESOURCE_GROUPS"].split(",")
        fleet = decide.Fleet(subscription, vm_groups, ss_groups)
        lister = arm.Lister(send, workers=self.get_option("request_concurrency"),
                            retry_limit=self.get_option("retry_limit"), max_delay=self.get_option("retry_max_delay"))
        try:
            lister.run(fleet.first(), fleet.take)
            while True:
                stragglers = fleet.stragglers()
                if not stragglers:
                    break
                lister.run(stragglers, fleet.take_single, missing_ok=True)
        except arm.ArmError as exc:
            raise AnsibleError(str(exc)) from None
        except Exception as exc:  # credentials refused, ARM unreachable: azure-core's and azure-identity's errors
            if type(exc).__module__.split(".", maxsplit=1)[0] in ("azure", "msal", "requests", "urllib3"):
                raise AnsibleError("azure_rm: %s" % to_native(exc)) from None
            raise
        hosts = decide.hosts_of(fleet, self.get_option("plain_host_names"), self.get_option("node_class_tag"),
                                self._sizes)
        if hosts.gone:
            self.display.warning("azure_rm: VMs deleted while the inventory listed them, left out: %s"
                                 % ", ".join(hosts.gone))
        if not self.get_option("network_interface_properties"):  # nor in the cache
            for record in hosts.records:
                record["hostvars"].pop("network_interface_properties", None)
        return hosts.records

    # --- the inventory
    def _populate(self, results):
        strict = boolean(self.get_option("fail_on_template_errors"))
        compose = self.get_option("hostvar_expressions")
        if compose is None:
            compose = self.get_option("compose")
        groups, keyed = self.get_option("conditional_groups"), self.get_option("keyed_groups")
        hostnames = self.get_option("hostnames")
        excludes = self.get_option("exclude_host_filters") + self.get_option("default_host_filters")
        includes = self.get_option("include_host_filters")
        include_all = any(c is True for c in includes)  # azure_rm's default, [true]
        running_only, class_groups = self.get_option("running_only"), self.get_option("node_class_groups")
        classes = set(self.get_option("node_classes"))
        failed_group = self.get_option("provisioning_failed_group")
        private = self.get_option("ansible_host_address") == "private"
        nic_docs = self.get_option("network_interface_properties")
        failed, names = [], {}
        with _compiled_once(self.templar):
            for host in results:
                hostvars = host["hostvars"]
                if hostvars.get("provisioning_state") == "failed":
                    failed.append("%s (resource group %s, %s)" % (hostvars.get("name"), hostvars.get("resource_group"),
                                                                  hostvars.get("powerstate")))
                name = self._hostname(host, hostnames, strict)
                first = names.setdefault(name, hostvars.get("id"))
                if first != hostvars.get("id"):
                    raise AnsibleError(decide.duplicate_host_error(name, first, hostvars.get("id")))
                if running_only and hostvars.get("powerstate") != "running":
                    continue
                if self._matches(excludes, name, hostvars, strict):
                    continue
                if not include_all and not self._matches(includes, name, hostvars, strict):
                    continue
                self.inventory.add_host(name)
                addresses = hostvars["private_ipv4_addresses"] if private else \
                    chain(hostvars["public_ipv4_address"], hostvars["private_ipv4_addresses"])
                self.inventory.set_variable(name, "ansible_host", next(iter(addresses), None))
                for key, value in hostvars.items():
                    if nic_docs or key != "network_interface_properties":  # a cache written with them
                        self.inventory.set_variable(name, key, value)
                if class_groups:
                    cls = hostvars.get("node_class")
                    for group in (["node_class_" + cls] + ([cls] if cls in classes else []) if cls
                                  else ["node_class_untagged"]):
                        self.inventory.add_child(self.inventory.add_group(self._sanitize_group_name(group)), name)
                if failed_group and hostvars.get("provisioning_state") == "failed":
                    self.inventory.add_child(self.inventory.add_group(self._sanitize_group_name(failed_group)), name)
                if compose:
                    self._set_composite_vars(compose, hostvars, name, strict=strict)
                if groups:
                    self._add_host_to_composed_groups(groups, hostvars, name, strict=strict)
                if keyed:
                    self._add_host_to_keyed_groups(keyed, hostvars, name, strict=strict)
        if failed:
            self.display.warning("azure_rm: provisioning failed on %d VM(s): %s" % (len(failed), ", ".join(failed)))

    def _hostname(self, host, hostnames, strict):
        errors = []
        for preference in hostnames:
            if preference == "default":
                return host["default_inventory_hostname"]
            try:
                name = self._compose(trust_as_template(preference), host["hostvars"])
            except Exception as exc:  # pylint: disable=broad-except
                if strict:
                    raise AnsibleError("Could not compose %s as hostnames - %s" % (preference, to_native(exc))) from exc
                errors.append((preference, str(exc)))
                continue
            if name:
                return to_text(name)
        raise AnsibleError("Could not template any hostname for host, errors for each preference: %s"
                           % ", ".join("%s: %s" % pe for pe in errors))

    def _matches(self, conditions, name, hostvars, strict):
        """Whether any of the Jinja2 `conditions` holds for the host (azure_rm's host filters)."""
        self.templar.available_variables = hostvars
        for condition in conditions:
            if isinstance(condition, bool):
                if condition:
                    return True
                continue
            try:
                if boolean(self.templar.evaluate_conditional(trust_as_template(condition))):
                    return True
            except Exception as exc:  # pylint: disable=broad-except
                if strict:
                    raise AnsibleParserError("Error evaluating filter condition '%s' for host %s: %s"
                                             % (condition, name, to_native(exc))) from exc
        return False


def _legacy_group_name(name):
    """azure_rm's use_contrib_script_compatible_sanitization: the old inventory script's group names."""
    return re.sub(r"[^A-Za-z0-9_\-]", "_", name)


class _compiled_once:
    """Compile each Jinja2 expression of the configuration once for all hosts, instead of once per host.

    ansible-core's templar compiles an expression every time it evaluates one; with a few expressions per host (the
    filters, the groups, ansible_host) that compilation is most of an inventory's composition. The compiled
    expression is the same function of the host's variables either way. Where the templar has no such method to
    wrap, nothing changes.
    """

    def __init__(self, templar):
        self._engine = getattr(templar, "_engine", None)
        self._original = getattr(self._engine, "_compile_expression", None)

    def __enter__(self):
        if self._original is None:
            return self
        original, memo = self._original, {}

        def compile_expression(expression, options):
            try:
                key = (str(expression), options)
                return memo[key]
            except KeyError:
                memo[key] = original(expression, options)
                return memo[key]
            except TypeError:  # options that cannot be a key: compiled as before
                return original(expression, options)

        self._engine._compile_expression = compile_expression
        return self

    def __exit__(self, *exc):
        if self._original is not None:
            del self._engine._compile_expression
        return False
