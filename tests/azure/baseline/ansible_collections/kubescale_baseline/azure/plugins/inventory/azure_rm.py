# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: azure_rm
short_description: azure.azcollection's azure_rm inventory, as it is, for comparisons in tests and bench/
description:
  - azure.azcollection.azure_rm unchanged (its /batch fetching, per-VM instance views, SDK calls per Uniform
    instance), with one fix so that it runs against a cloud given by its metadata endpoint URL - azure.azcollection
    3.12 and 3.13 call get_cloud_from_metadata_endpoint, which azure-cli-core no longer has.
  - tests/azure compares kubescale.tuning.azure_rm's hosts and host variables with it; bench/azure_inventory.py times
    both on the same recorded ARM.
author:
  - kubescale.tuning contributors (@kubescale)
extends_documentation_fragment:
  - azure.azcollection.azure
  - azure.azcollection.azure_rm
  - constructed
  - inventory_cache
options:
  plugin:
    description: Marks this as an instance of this plugin.
    required: true
    choices: [kubescale_baseline.azure.azure_rm]
  batch_fetch_interval:
    description: Seconds between polls of an accepted batch.
    default: 3
    type: int
  batch_fetch_timeout:
    description: Seconds to wait for one poll of an accepted batch.
    default: 5
    type: int
"""

from ansible_collections.azure.azcollection.plugins.inventory.azure_rm import InventoryModule as AzureRM


def _cloud_from_metadata_endpoint(url):
    import requests
    from azure.cli.core import cloud as azure_cloud

    doc = requests.get(url, timeout=30).json()
    clouds = doc if isinstance(doc, list) else [doc]
    host = url.split("/")[2].lower()
    return azure_cloud._arm_to_cli_mapper(next((c for c in clouds if host in (c.get("resourceManager") or "").lower()),
                                               clouds[0]))


class InventoryModule(AzureRM):

    NAME = "kubescale_baseline.azure.azure_rm"

    def _credential_setup(self):
        from azure.cli.core import cloud as azure_cloud
        if not hasattr(azure_cloud, "get_cloud_from_metadata_endpoint"):
            azure_cloud.get_cloud_from_metadata_endpoint = _cloud_from_metadata_endpoint
        super()._credential_setup()
