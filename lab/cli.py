"""The kubescale.tuning lab: a small fleet of real systemd nodes on one Debian 12 machine.

Standard library plus the docker CLI.  Commands:

  image     build (or reuse) the node base image: debootstrap -> docker import, cached by content
  pause-image  build (or reuse) the lab's pause image on this docker (image_preload's builder in the lab)
  ee-base-image  build (or reuse) the execution environment's base image (scripts/ee.sh)
  up        start the nodes (idempotent) and write inventories/lab/hosts.yml
  down      remove the nodes, their volumes, their emulated resource disks and loop devices
  status    list the nodes
  redeploy  emulate an Azure redeploy of one node: wipe its resource disk, restart it

Node counts come from the environment: LAB_ETCD_NODES (3), LAB_ETCD_EVENTS_NODES (3),
LAB_CONTROL_PLANE_NODES (3), LAB_CPU_NODES (2), LAB_GPU_NODES (1), LAB_ETCD_KUBEADM_NODES (3: external etcd hosts set
up with kubeadm, static pods run by a stand-in for the kubelet), LAB_LB_NODES (1: HAProxy, the controlPlaneEndpoint).
The real kubeadm makes the cluster (lab/kubeadm.py): `kubeadm init` on the first control plane node, `kubeadm join
--control-plane` on the others (kubeadm's HA shape), `kubeadm join` on the workers. The first control plane node runs
kwok with LAB_KWOK_NODES (50) fake Nodes (lab/controlplane.py).

The Debian mirror is read from this machine's apt sources; none is written into the repository.
"""

import argparse
import os
import sys

from . import controlplane, kubeadm
from .common import LABEL, PREFIX, LabError, docker, log
from .disks import NETDISK_GROUPS, disk_path, ensure_netdisk, loop_for, wipe_disk
from .image import PAUSE_IMAGE, build_ee_base_image, build_image, build_legacy_image, ensure_pause_image
from .inventory import INVENTORY, write_inventory
from .nodes import (
    ensure_host_limits,
    ensure_network,
    existing_containers,
    inspect,
    key_id,
    remove_node,
    ssh_key,
    start_node,
    wait_ssh,
    wanted_nodes,
    why_stale,
)
from .pki import ensure_etcd_ca
from .seed import ensure_etcd


def cmd_pause_image(_args):
    ensure_pause_image()
    print(PAUSE_IMAGE)


def cmd_up(_args):
    tag = build_image()
    ensure_pause_image()
    nodes = wanted_nodes()
    have = set(existing_containers())
    ensure_host_limits(len(nodes) + len(have))
    ensure_network()
    key = ssh_key()
    started = {}
    for node in nodes:
        cname = PREFIX + node["name"]
        if cname in have:
            state = inspect(cname)
            labels = state["Config"]["Labels"]
            disk = disk_path(node["name"])
            stale = why_stale(labels, state["HostConfig"]["Devices"], node, key_id(key + ".pub"), disk,
                              os.path.exists(disk), lambda d=disk: loop_for(d))
            if stale:
                log("recreating %s (%s)" % (cname, stale))
                remove_node(cname, keep_disk=labels.get(LABEL + ".disk") == disk_path(node["name"]))
                started[node["name"]] = start_node(node, tag, key + ".pub")
                continue
            if state["Config"]["Image"] != tag:
                log("%s runs an older base image; recreate it with `make lab-down lab`" % cname)
            if not state["State"]["Running"]:
                docker("start", cname)
            started[node["name"]] = int(state["Config"]["Labels"][LABEL + ".ssh-port"])
            continue
        started[node["name"]] = start_node(node, tag, key + ".pub")
        log("started %s (ssh 127.0.0.1:%d)" % (cname, started[node["name"]]))
    wanted = set(PREFIX + n["name"] for n in nodes)
    for cname in sorted(have - wanted):
        remove_node(cname)
        log("removed %s (beyond the wanted node counts)" % cname)
    wait_ssh(started, key)
    write_inventory()

    def of(*groups):
        return [n for n in nodes if n["group"] in groups]

    controlplane.build_binaries()  # the nodes' kubeadm, control plane binaries and slowdisk are links into the build
    for node in of(*NETDISK_GROUPS):  # before etcd ever starts there: its data starts on a network disk
        ensure_netdisk(PREFIX + node["name"])
    ensure_etcd(of("etcd"))
    ensure_etcd_ca()
    for node in of("etcd_events"):  # the Events etcd: the release kubeadm pins (inventories/lab/group_vars)
        kubeadm.link_binaries(node, ["etcd"])
    client = kubeadm.ensure_external_etcd(of("etcd_kubeadm"))
    controlplane.ensure_control_plane(of("kube_control_plane"), of("kube_node_cpu", "kube_node_gpu"),
                                      (of("lab_lb") or [None])[0], of("etcd_kubeadm"), client)
    log("%d nodes up" % len(started))


def cmd_down(_args):
    for c in existing_containers():
        remove_node(c)
        log("removed %s" % c)
    if os.path.exists(INVENTORY):
        os.remove(INVENTORY)


def cmd_status(_args):
    for c in sorted(existing_containers()):
        st = inspect(c)
        labels = st["Config"]["Labels"]
        print("%-22s %-20s %-8s ssh 127.0.0.1:%s"
              % (c, labels[LABEL + ".group"], st["State"]["Status"], labels[LABEL + ".ssh-port"]))


def cmd_image(args):
    print(build_image(force=args.force))


def cmd_legacy_image(args):
    print(build_legacy_image(force=args.force))


def cmd_ee_base_image(args):
    print(build_ee_base_image(force=args.force))


def cmd_redeploy(args):
    cname = PREFIX + args.node
    if cname not in existing_containers():
        raise LabError("no lab node %s" % args.node)
    docker("stop", cname)
    wipe_disk(args.node, args.disk)
    docker("start", cname)
    wait_ssh({args.node: int(inspect(cname)["Config"]["Labels"][LABEL + ".ssh-port"])}, ssh_key())
    log("redeployed %s (resource disk came back %s)" % (args.node, args.disk))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m lab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("image")
    p.add_argument("--force", action="store_true")
    p.set_defaults(func=cmd_image)
    p = sub.add_parser("legacy-image", help="the Debian 11 (Python 3.9) image of the toml_legacy molecule scenario")
    p.add_argument("--force", action="store_true")
    p.set_defaults(func=cmd_legacy_image)
    p = sub.add_parser("ee-base-image", help="the execution environment's base image (scripts/ee.sh)")
    p.add_argument("--force", action="store_true")
    p.set_defaults(func=cmd_ee_base_image)
    sub.add_parser("up").set_defaults(func=cmd_up)
    sub.add_parser("pause-image").set_defaults(func=cmd_pause_image)
    sub.add_parser("down").set_defaults(func=cmd_down)
    sub.add_parser("status").set_defaults(func=cmd_status)
    p = sub.add_parser("redeploy")
    p.add_argument("node")
    p.add_argument("--disk", choices=["blank", "ntfs"], default="ntfs")
    p.set_defaults(func=cmd_redeploy)
    args = parser.parse_args(argv)
    try:
        args.func(args)
    except LabError as exc:
        print("lab: error: %s" % exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
