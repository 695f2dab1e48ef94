"""Helpers for the Events etcd cluster's lab tests: its members, their URLs, etcdctl with kube-apiserver's own etcd
client certificate on cp-1, and a playbook run."""

import os
import subprocess

from labnode import REPO, hosts_of, lab_ip, node

ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
           ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"))
PKI = "/etc/kubernetes/pki"


def events_members():
    return hosts_of("etcd_events")


def events_urls():
    return ["https://%s:2383" % lab_ip(m) for m in events_members()]


def events_url():
    """The Events servers as kube-apiserver's override lists them (';'-separated)."""
    return ";".join(events_urls())


def apiserver_etcdctl(*args, url=None, tls=True):
    argv = ["etcdctl", "--endpoints=" + (url or ",".join(events_urls())), "--command-timeout=5s", "--dial-timeout=3s"]
    if tls:
        argv += ["--cacert=%s/etcd/ca.crt" % PKI, "--cert=%s/apiserver-etcd-client.crt" % PKI,
                 "--key=%s/apiserver-etcd-client.key" % PKI]
    return node("cp-1", *(argv + list(args)), check=False)


def playbook(*args):
    return subprocess.run(["ansible-playbook"] + list(args), cwd=REPO, env=ENV, capture_output=True, text=True,
                          check=False)
