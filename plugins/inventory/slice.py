# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: slice
short_description: Keep one slice of the inventory, for running one fleet from several controllers
version_added: 0.4.0
description:
  - Job slicing as AWX and AAP do it, for C(ansible-playbook) on K controllers. Given as the B(last) inventory source
    (C(-i inventory -i slice.yml)), it keeps the hosts of slice O(index) of O(count) and removes the others.
  - The hosts are sorted by name and dealt out in turn, so every controller computes the same split from the same
    inventory, the slices are disjoint and their union is the whole inventory. Each slice is a run of its own, so
    C(serial) batches and C(max_fail_percentage) apply within the slice.
  - Each kept host gets C(kubescale_slice) (C(index), C(count)).
  - Requires a YAML configuration file whose name ends with C(slice.yml) or C(slice.yaml).
author:
  - kubescale.tuning contributors (@kubescale)
options:
  plugin:
    choices: [kubescale.tuning.slice]
    required: true
    description: This plugin's name, which makes Ansible read the file with it.
  count:
    description: How many slices (controllers) the inventory is split into.
    type: int
    default: 1
    env:
      - name: KUBESCALE_SLICE_COUNT
  index:
    description: Which slice this controller runs, 1 to O(count).
    type: int
    default: 1
    env:
      - name: KUBESCALE_SLICE_INDEX
"""

EXAMPLES = r"""
# inventories/slice.yml
plugin: kubescale.tuning.slice

# on controller 2 of 3:
#   KUBESCALE_SLICE_COUNT=3 KUBESCALE_SLICE_INDEX=2 \
#     ansible-playbook -i inventories/azure/azure_rm.yml -i inventories/slice.yml playbooks/node_cpu.yml
"""

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin

from ansible_collections.kubescale.tuning.plugins.module_utils.fleet.slice import SliceError, parse_slice, slice_hosts


class InventoryModule(BaseInventoryPlugin):
    NAME = "kubescale.tuning.slice"

    def verify_file(self, path):
        return super(InventoryModule, self).verify_file(path) and path.endswith(("slice.yml", "slice.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super(InventoryModule, self).parse(inventory, loader, path, cache)
        self._read_config_data(path)
        try:
            count, index = parse_slice(self.get_option("count"), self.get_option("index"))
        except SliceError as exc:
            raise AnsibleParserError("%s: %s (KUBESCALE_SLICE_COUNT, KUBESCALE_SLICE_INDEX)" % (path, exc)) from None
        names = list(inventory.hosts)
        if not names:
            raise AnsibleParserError("%s: the inventory has no hosts yet: give this source after the inventory it "
                                     "slices (-i inventory -i %s)" % (path, path))
        keep = set(slice_hosts(names, count, index))
        for name in names:
            if name in keep:
                inventory.set_variable(name, "kubescale_slice", {"index": index, "count": count})
            else:
                inventory.remove_host(inventory.hosts[name])
