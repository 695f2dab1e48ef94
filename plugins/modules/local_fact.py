#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: local_fact
short_description: Record what a role applied as an Ansible local fact
version_added: "0.2.0"
description:
  - Writes O(data) as JSON to C(<directory>/<name>.fact) (read back by C(setup) as C(ansible_local.<name>)),
    creating the directory when missing, atomically and only when the content changes.
  - One task per role instead of a directory task plus a file task; in check mode a directory another role is
    about to create counts once per role, as in the real run.
author:
  - kubescale.tuning contributors (@kubescale)
options:
  name:
    description: The fact's name (letters, digits, underscores), like C(kubescale_docker_overlay2).
    type: str
    required: true
  data:
    description: What to record.
    type: dict
    required: true
  directory:
    description: The local facts directory.
    type: path
    default: /etc/ansible/facts.d
extends_documentation_fragment:
  - kubescale.tuning.attributes
attributes:
  check_mode:
    support: full
    details: Compares with the file and reports the change it would make; writes nothing.
  diff_mode:
    support: full
    details: Shows the fact file before and after.
  platform:
    platforms: posix
"""

EXAMPLES = r"""
- name: Record what docker_overlay2 applied
  kubescale.tuning.local_fact:
    name: kubescale_docker_overlay2
    data:
      data_root: /mnt/local-ssd/docker
"""

RETURN = r"""
path:
  description: The fact file.
  returned: always
  type: str
  sample: /etc/ansible/facts.d/kubescale_docker_overlay2.fact
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils.node.atomic import atomic_write, read_text
from ansible_collections.kubescale.tuning.plugins.module_utils.node.state import render_fact as render


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            data=dict(type="dict", required=True),
            directory=dict(type="path", default="/etc/ansible/facts.d"),
        ),
        supports_check_mode=True,
    )
    name = module.params["name"]
    directory = module.params["directory"]
    if not re.match(r"^[A-Za-z0-9_]+$", name):
        module.fail_json(msg="name: %r must be letters, digits and underscores" % name)
    if not os.path.isabs(directory):
        module.fail_json(msg="directory: %r must be absolute" % directory)
    path = os.path.join(directory, name + ".fact")
    text = render(module.params["data"])
    try:
        before = read_text(path)
    except (IOError, OSError) as exc:
        module.fail_json(msg="directory: cannot read %s: %s" % (path, exc))
    result = dict(changed=before != text, path=path)
    if result["changed"]:
        if module._diff:
            result["diff"] = dict(before=before or "", after=text, before_header=path, after_header=path)
        if not module.check_mode:
            try:
                if not os.path.isdir(directory):
                    os.makedirs(directory, 0o755)
                atomic_write(path, text, 0o644)
            except (IOError, OSError) as exc:
                module.fail_json(msg="directory: cannot write %s: %s" % (path, exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
