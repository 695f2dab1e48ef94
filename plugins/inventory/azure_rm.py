# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: azure_rm
short_description: azure.azcollection's azure_rm inventory, with node classes and no silently missing hosts
version_added: 0.4.0
description:
  - Runs the C(azure.azcollection.azure_rm) inventory plugin (fetching, batching, naming, filtering and grouping are
    its own) and adds what a fleet of thousands of scale set instances needs.
  - Each host gets C(scale_set) (C(id), C(name), C(orchestration_mode), C(tags), C(sku)) for Uniform and Flexible
    instances alike, C(virtual_machine_size) for Uniform instances (from their SKU), and C(node_class) with
    C(node_class_source) decided in Python from the VM's tag, else its scale set's tag, else its size.
  - Every ARM answer that is not a success either is retried (408, 429, 5xx; C(Retry-After) honoured, at most
    O(retry_limit) times) or fails the inventory with the status, ARM's error code and message and the URL. azure_rm
    itself drops such answers from a batch, so a page of hosts could go missing without a word.
  - Two VMs with the same host name fail the inventory instead of one silently overwriting the other.
  - C(cloud_environment) as a metadata endpoint URL works again (azure.azcollection 3.12 and 3.13 call
    C(get_cloud_from_metadata_endpoint), which azure-cli-core no longer has; ansible-collections/azure issue 2157).
  - Requires a YAML configuration file whose name ends with C(azure_rm.yml) or C(azure_rm.yaml), and the Python
    packages of azure.azcollection on the controller (C(requirements-azure.txt)).
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
  batch_fetch_interval:
    description: Seconds between polls of a batch that ARM answered with 202 Accepted.
    default: 3
    type: int
  batch_fetch_timeout:
    description: Seconds to wait for one poll of an accepted batch.
    default: 5
    type: int
  node_class_tag:
    description: Name of the tag (on the VM, or else on its scale set) that names the node class. Matched without
      regard to case, as Azure treats tag names.
    type: str
    default: node_class
  node_class_sizes:
    description:
      - Size rules for VMs whose tag names no class, tried in order. C(pattern) is a regular expression that must
        match the whole VM size, without regard to case.
      - The default puts Standard_D15_v2 in C(kube_node_cpu) and the NC, ND and NV GPU families (for example
        Standard_NC24, Standard_NC24s_v3, Standard_NC24ads_A100_v4, Standard_ND96asr_v4) in C(kube_node_gpu).
    type: list
    elements: dict
    default:
      - {pattern: Standard_D15_v2, class: kube_node_cpu}
      - {pattern: "Standard_N[CDV][0-9].*", class: kube_node_gpu}
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
conditional_groups:
  kube_node_cpu: node_class == 'kube_node_cpu'
  kube_node_gpu: node_class == 'kube_node_gpu'
keyed_groups:
  - prefix: node_class
    key: node_class | default('untagged', true)
"""

import json
import time

from ansible.errors import AnsibleError

try:
    from ansible_collections.azure.azcollection.plugins.inventory.azure_rm import InventoryModule as AzureRMInventory
    HAS_AZURE_RM = True
except ImportError:  # pragma: no cover - azure.azcollection is missing
    from ansible.plugins.inventory import BaseInventoryPlugin as AzureRMInventory
    HAS_AZURE_RM = False

from ansible_collections.kubescale.tuning.plugins.module_utils import _azure_inventory as decide

try:
    from queue import Empty
except ImportError:  # pragma: no cover
    from Queue import Empty


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


class InventoryModule(AzureRMInventory):

    NAME = "kubescale.tuning.azure_rm"

    def verify_file(self, path):
        if not HAS_AZURE_RM:
            raise AnsibleError("kubescale.tuning.azure_rm needs the azure.azcollection collection")
        return super(InventoryModule, self).verify_file(path)

    def _read_config_data(self, path):
        config = super(InventoryModule, self)._read_config_data(path)
        self._kubescale_scale_sets = {}
        self._kubescale_names = {}
        try:
            self._kubescale_sizes = decide.check_size_classes(self.get_option("node_class_sizes"))
        except ValueError as exc:
            raise AnsibleError("%s: %s" % (path, exc)) from None
        return config

    def _credential_setup(self):
        from azure.cli.core import cloud as azure_cloud
        if not hasattr(azure_cloud, "get_cloud_from_metadata_endpoint"):
            azure_cloud.get_cloud_from_metadata_endpoint = _cloud_from_metadata_endpoint
        super(InventoryModule, self)._credential_setup()

    # --- scale sets: remember every listed one, Flexible included, so instances can carry its tags
    def _on_vmss_page_response(self, response):
        if isinstance(response, dict):
            for vmss in response.get("value") or []:
                self._kubescale_scale_sets[vmss["id"].lower()] = vmss
        super(InventoryModule, self)._on_vmss_page_response(response)

    def _serialize(self, hosts):
        for host in hosts:
            hostvars = host.hostvars
            model = getattr(host, "_vm_model", None) or getattr(host, "_arc_model", None) or {}
            scale_set = decide.scale_set_of(model, getattr(host, "_vmss", None), self._kubescale_scale_sets)
            hostvars["scale_set"] = scale_set
            if not hostvars.get("virtual_machine_size"):
                hostvars["virtual_machine_size"] = (model.get("sku") or {}).get("name") or scale_set.get("sku")
            cls, source = decide.node_class(hostvars.get("tags"), scale_set.get("tags"),
                                            hostvars.get("virtual_machine_size"), self.get_option("node_class_tag"),
                                            self._kubescale_sizes)
            hostvars["node_class"], hostvars["node_class_source"] = cls, source
        return super(InventoryModule, self)._serialize(hosts)

    def _get_hostname(self, host, hostnames=None, strict=False):
        name = super(InventoryModule, self)._get_hostname(host, hostnames=hostnames, strict=strict)
        vm_id = (host.get("hostvars") or {}).get("id")
        first = self._kubescale_names.setdefault(name, vm_id)
        if first != vm_id:
            raise AnsibleError(decide.duplicate_host_error(name, first, vm_id))
        return name

    # --- requests: every answer is a success, a retry or an error
    def _wait(self, attempt, headers, what):
        if attempt > self.get_option("retry_limit"):
            raise AnsibleError("azure_rm: %s still failing after %d retries" % (what, self.get_option("retry_limit")))
        delay = max(decide.retry_after(headers, 0), 2.0 ** (attempt - 1))
        time.sleep(min(delay, self.get_option("retry_max_delay")))

    def _send(self, method, url, query, body=None):
        headers = {"Content-Type": "application/json; charset=utf-8"}
        if method == "POST":
            request = self.new_client.post(url, query, headers, body)
        else:
            request = self.new_client.get(url, query, headers)
        response = self.new_client.send_request(request)
        text = response.text()
        try:
            content = json.loads(text) if text else {}
        except ValueError:
            content = {"error": {"code": "NotJson", "message": text[:200]}}
        return response.status_code, dict(response.headers), content

    def _send_batch(self, batched_requests):
        attempt = 0
        while True:
            status, headers, content = self._send("POST", "/batch", {"api-version": "2015-11-01"},
                                                  {"requests": batched_requests})
            while status == 202:
                location = decide.tag_value(headers, "Location")
                if not location:
                    raise AnsibleError("azure_rm: ARM accepted a batch without a Location to poll")
                time.sleep(decide.retry_after(headers, self.get_option("batch_fetch_interval")))
                status, headers, content = self._send("GET", location, {})
            if status == 200:
                return content
            if status not in decide.RETRY_STATUSES:
                raise AnsibleError(decide.describe_error("POST", "/batch", status, content))
            attempt += 1
            self._wait(attempt, headers, "POST /batch (HTTP %s)" % status)

    def retry_batch(self, batch_requests, batch_response_handlers, backoff_factor=0.8, retry_limit=10):
        pending, attempt = list(batch_requests), 0
        while pending:
            doc = self._send_batch(pending)
            entries = doc.get("responses", doc.get("value")) if isinstance(doc, dict) else None
            if entries is None:
                raise AnsibleError("azure_rm: the batch answer has neither responses nor value: %s" % str(doc)[:300])
            by_name = dict((r["name"], r) for r in pending)
            retry, retry_headers = [], {}
            for entry in entries:
                request = by_name.pop(entry.get("name"), None)
                if request is None:
                    continue
                item = batch_response_handlers[request["name"]]
                status = entry.get("httpStatusCode")
                if status == 200:
                    item.handler(entry.get("content"), **item.handler_args)
                elif status in decide.RETRY_STATUSES:
                    retry.append(request)
                    if decide.retry_after(entry.get("headers"), 0) > decide.retry_after(retry_headers, 0):
                        retry_headers = entry.get("headers") or {}
                elif not decide.tolerated(request["url"], status):
                    raise AnsibleError(decide.describe_error("GET", request["url"], status, entry.get("content")))
            retry.extend(by_name.values())  # asked but not answered
            if retry:
                attempt += 1
                self._wait(attempt, retry_headers, "%d of the batch's requests (first: GET %s)"
                           % (len(retry), retry[0]["url"]))
            pending = retry

    def _process_queue_serial(self):
        while True:
            try:
                item = self._request_queue.get_nowait()
            except Empty:
                return
            attempt = 0
            while True:
                status, headers, content = self._send("GET", item.url, {"api-version": item.api_version})
                if status not in decide.RETRY_STATUSES:
                    break
                attempt += 1
                self._wait(attempt, headers, "GET %s (HTTP %s)" % (item.url, status))
            if status == 200:
                item.handler(content, **item.handler_args)
            elif not decide.tolerated(item.url, status):
                raise AnsibleError(decide.describe_error("GET", item.url, status, content))
