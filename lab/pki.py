"""The lab's etcd CA and kube-apiserver's etcd client certificate, as kubeadm makes them (openssl on the host)."""

import os

from common import PKI, run


def ensure_pki():
    """The lab's etcd CA and the API server's etcd client certificate, as kubeadm makes them (openssl on the host).

    The CA stays on the controller too: events_etcd signs the Events members' certificates with it, so the API
    server's one etcd client certificate is trusted by both clusters.
    """
    os.makedirs(PKI, exist_ok=True)
    ca_key, ca_crt = os.path.join(PKI, "etcd-ca.key"), os.path.join(PKI, "etcd-ca.crt")
    cl_key, cl_crt = os.path.join(PKI, "apiserver-etcd-client.key"), os.path.join(PKI, "apiserver-etcd-client.crt")
    if not os.path.exists(ca_crt):
        run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650", "-subj", "/CN=etcd-ca",
             "-keyout", ca_key, "-out", ca_crt])
    if not os.path.exists(cl_crt):
        csr = os.path.join(PKI, "apiserver-etcd-client.csr")
        ext = os.path.join(PKI, "client.ext")
        with open(ext, "w") as f:
            f.write("extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n")
        run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj",
             "/O=system:masters/CN=kube-apiserver-etcd-client", "-keyout", cl_key, "-out", csr])
        run(["openssl", "x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key, "-CAcreateserial",
             "-days", "3650", "-extfile", ext, "-out", cl_crt])
    return {"etcd/ca.crt": ca_crt, "apiserver-etcd-client.crt": cl_crt, "apiserver-etcd-client.key": cl_key}
