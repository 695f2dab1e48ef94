# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: what the YAML-editing modules share - option values as strings, PyYAML, the atomic rewrite with diff."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubescale.tuning.plugins.module_utils.node.atomic import atomic_write, read_text


def string_values(module, option, what, allow_empty=False):
    """module.params[option] with every value a string (booleans lowercase) or None; fails on anything else."""
    out = {}
    for name, value in module.params[option].items():
        if value is not None and not isinstance(value, (str, int, float, bool)):
            module.fail_json(msg="%s: %s must be a string, number or null, got %r" % (option, name, value))
        out[name] = None if value is None else (str(value).lower() if isinstance(value, bool) else str(value))
    if not out and not allow_empty:
        module.fail_json(msg="%s: give at least one %s to set or remove" % (option, what))
    return out


def yaml_and_text(module, name):
    """(the yaml module, the file's text); fails clearly without PyYAML or without the file."""
    try:
        import yaml
    except ImportError:
        module.fail_json(msg="%s needs PyYAML on the node (Debian/Ubuntu package python3-yaml)" % name)
    path = module.params["path"]
    text = read_text(path)
    if text is None:
        module.fail_json(msg="path: %s does not exist" % path)
    return yaml, text


def finish(module, text, new_text, result):
    """Rewrite the file (atomically, not in check mode) with the diff when asked, and exit changed."""
    path = module.params["path"]
    if module._diff:
        result["diff"] = dict(before=text, after=new_text, before_header=path, after_header=path)
    if not module.check_mode:
        try:
            atomic_write(path, new_text, mode=0o600)
        except (IOError, OSError) as exc:
            module.fail_json(msg="path: writing %s failed: %s" % (path, exc), **result)
    module.exit_json(changed=True, **result)
