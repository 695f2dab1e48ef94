"""The lab's etcd CA (openssl on the host), made once."""

import os

from .common import PKI, run


def ensure_etcd_ca():
    """The lab's etcd CA: kubeadm makes the external etcd members' certificates and kube-apiserver's etcd client
    certificate from it (lab/kubeadm.py), and events_etcd signs the Events members' certificates with it, so the API
    server's one etcd client certificate is trusted by both clusters. It stays on the controller."""
    os.makedirs(PKI, exist_ok=True)
    ca_key, ca_crt = os.path.join(PKI, "etcd-ca.key"), os.path.join(PKI, "etcd-ca.crt")
    if not os.path.exists(ca_crt):
        run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650", "-subj", "/CN=etcd-ca",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
             "-keyout", ca_key, "-out", ca_crt])
    return ca_crt, ca_key
