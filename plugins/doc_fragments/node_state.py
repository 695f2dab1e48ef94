# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """node_state's options: the module's own (kubescale.tuning.node_state), and the same as the nested `node_state`
    option of the modules that finish a tuning in their own call (kubescale.tuning.node_state.nested). NESTED is
    written from DOCUMENTATION and kubescale.tuning.fact by scripts/node_state_doc.py (`make lint` checks it): edit
    DOCUMENTATION, then run it."""

    DOCUMENTATION = r"""
options:
  directories:
    description: Directories to create (missing parents are made as C(mkdir -p) makes them); owner and mode enforced.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path, or relative to O(directories[].root).
        type: str
        required: true
      root:
        description: When set, O(directories[].path) is relative to it (like a consumer's directory on a mount).
        type: path
      mode:
        description: Octal mode.
        type: str
        default: "0755"
      owner:
        description: Owner.
        type: str
        default: root
      group:
        description: Group.
        type: str
        default: root
  files:
    description: Whole files with the given content; owner and mode enforced.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path; its directory must exist or be in O(directories).
        type: path
        required: true
      content:
        description:
          - The file's text. Exactly one of O(files[].content), O(files[].src) and O(files[].sha256) is given.
        type: str
      src:
        description:
          - A UTF-8 text file on the controller (absolute, or in the role's C(files/)), for large files such as a
            script the role installs. The action sends only its sha256 first; the text crosses the wire only when
            the node's file differs (then the module runs a second time), so a re-converge of unchanged nodes sends
            none.
        type: path
      sha256:
        description:
          - The sha256 of the file's bytes instead of its text (what the action sends for O(files[].src)). When the
            node's file differs, the module changes nothing and returns RV(content_needed).
        type: str
      mode:
        description: Octal mode.
        type: str
        default: "0644"
      owner:
        description: Owner.
        type: str
        default: root
      group:
        description: Group.
        type: str
        default: root
  dropins:
    description:
      - systemd drop-ins - the same C(<name>) file in C(<unit_dir>/<unit>.d/) for each of O(dropins[].units), the
        directory created when missing.
    type: list
    elements: dict
    default: []
    suboptions:
      units:
        description: The units the drop-in is for, like C(docker.service).
        type: list
        elements: str
        required: true
      name:
        description: The drop-in's file name, ending in C(.conf).
        type: str
        required: true
      content:
        description: Its text.
        type: str
        required: true
  unit_dir:
    description: Where O(dropins) go.
    type: path
    default: /etc/systemd/system
  merges:
    description: Settings merged into config files as data; keys the settings do not name are kept.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path; its directory must exist or be in O(directories).
        type: path
        required: true
      format:
        description: How the file is written.
        type: str
        required: true
        choices: [json, yaml, toml, env]
      settings:
        description: As M(kubescale.tuning.config_merge)'s O(kubescale.tuning.config_merge#module:settings).
        type: dict
        required: true
      create:
        description: Create the file when it is missing.
        type: bool
        default: true
      mode:
        description: Mode of a file this module creates.
        type: str
        default: "0644"
  links:
    description:
      - Symbolic links (for example a unit's C(.wants) link in an image being baked, where systemd does not run).
      - A missing parent directory is made (root, C(0755)).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The link.
        type: path
        required: true
      target:
        description: What it points to.
        type: path
        required: true
  units:
    description:
      - systemd units to enable, start, or restart when one of their files changed. Asked after the daemon-reload.
      - In check mode a unit whose file is not installed yet reads as disabled and inactive, so the prediction is the
        change the real run makes.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The unit, like C(kubelet.service).
        type: str
        required: true
      enabled:
        description: Enable (C(true)) or disable (C(false)); unset leaves it.
        type: bool
      state:
        description: C(started) starts it when it is not running; unset leaves it.
        type: str
        choices: [started]
      restart_on:
        description: Restart the unit, when it is running, if one of these paths (of this call) changed.
        type: list
        elements: path
        default: []
"""

    NESTED = r"""
options:
  node_state:
    description:
      - The rest of the tuning's state on the node - directories, files, drop-ins, config merges, links, systemd units
        and its local fact - applied in this same call once the module's own work is done (see its description for
        when), exactly as M(kubescale.tuning.node_state) applies its options of the same names, with the same
        validation, check and diff mode; its changes are reported under RV(node_state).
      - Validated before anything changes. A file given by O(node_state.files[].src) is sent by its sha256 by this
        module's action; when the node's file differs, the module changes nothing and the action runs it once more
        with the text.
    type: dict
    suboptions:
      directories:
        description: Directories to create (missing parents are made as C(mkdir -p) makes them); owner and mode enforced.
        type: list
        elements: dict
        default: []
        suboptions:
          path:
            description: Absolute path, or relative to O(node_state.directories[].root).
            type: str
            required: true
          root:
            description: When set, O(node_state.directories[].path) is relative to it (like a consumer's directory on a mount).
            type: path
          mode:
            description: Octal mode.
            type: str
            default: "0755"
          owner:
            description: Owner.
            type: str
            default: root
          group:
            description: Group.
            type: str
            default: root
      files:
        description: Whole files with the given content; owner and mode enforced.
        type: list
        elements: dict
        default: []
        suboptions:
          path:
            description: Absolute path; its directory must exist or be in O(node_state.directories).
            type: path
            required: true
          content:
            description:
              - The file's text. Exactly one of O(node_state.files[].content), O(node_state.files[].src) and O(node_state.files[].sha256) is given.
            type: str
          src:
            description:
              - A UTF-8 text file on the controller (absolute, or in the role's C(files/)), for large files such as a
                script the role installs. The action sends only its sha256 first; the text crosses the wire only when
                the node's file differs (then the module runs a second time), so a re-converge of unchanged nodes sends
                none.
            type: path
          sha256:
            description:
              - The sha256 of the file's bytes instead of its text (what the action sends for O(node_state.files[].src)). When the
                node's file differs, the module changes nothing and returns RV(content_needed).
            type: str
          mode:
            description: Octal mode.
            type: str
            default: "0644"
          owner:
            description: Owner.
            type: str
            default: root
          group:
            description: Group.
            type: str
            default: root
      dropins:
        description:
          - systemd drop-ins - the same C(<name>) file in C(<unit_dir>/<unit>.d/) for each of O(node_state.dropins[].units), the
            directory created when missing.
        type: list
        elements: dict
        default: []
        suboptions:
          units:
            description: The units the drop-in is for, like C(docker.service).
            type: list
            elements: str
            required: true
          name:
            description: The drop-in's file name, ending in C(.conf).
            type: str
            required: true
          content:
            description: Its text.
            type: str
            required: true
      unit_dir:
        description: Where O(node_state.dropins) go.
        type: path
        default: /etc/systemd/system
      merges:
        description: Settings merged into config files as data; keys the settings do not name are kept.
        type: list
        elements: dict
        default: []
        suboptions:
          path:
            description: Absolute path; its directory must exist or be in O(node_state.directories).
            type: path
            required: true
          format:
            description: How the file is written.
            type: str
            required: true
            choices: [json, yaml, toml, env]
          settings:
            description: As M(kubescale.tuning.config_merge)'s O(kubescale.tuning.config_merge#module:settings).
            type: dict
            required: true
          create:
            description: Create the file when it is missing.
            type: bool
            default: true
          mode:
            description: Mode of a file this module creates.
            type: str
            default: "0644"
      links:
        description:
          - Symbolic links (for example a unit's C(.wants) link in an image being baked, where systemd does not run).
          - A missing parent directory is made (root, C(0755)).
        type: list
        elements: dict
        default: []
        suboptions:
          path:
            description: The link.
            type: path
            required: true
          target:
            description: What it points to.
            type: path
            required: true
      units:
        description:
          - systemd units to enable, start, or restart when one of their files changed. Asked after the daemon-reload.
          - In check mode a unit whose file is not installed yet reads as disabled and inactive, so the prediction is the
            change the real run makes.
        type: list
        elements: dict
        default: []
        suboptions:
          name:
            description: The unit, like C(kubelet.service).
            type: str
            required: true
          enabled:
            description: Enable (C(true)) or disable (C(false)); unset leaves it.
            type: bool
          state:
            description: C(started) starts it when it is not running; unset leaves it.
            type: str
            choices: [started]
          restart_on:
            description: Restart the unit, when it is running, if one of these paths (of this call) changed.
            type: list
            elements: path
            default: []
      fact:
        description:
          - The role's local fact, written last in the same call (only once the rest was applied), as
            M(kubescale.tuning.local_fact) writes it - C(<directory>/<name>.fact), read back by C(setup) as
            C(ansible_local.<name>); atomic, only when its content changes, the directory created when missing.
        type: dict
        suboptions:
          name:
            description: The fact's name (letters, digits, underscores), like C(kubescale_local_ssd).
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
"""
