"""Reads through the controlPlaneEndpoint until killed, for site_twice.sh: GET /api/v1/namespaces/kube-system every
0.5 s, a new connection each, with a kubeconfig's credentials (the collection's own reader, kubeadm_record.Client; no
retry, 3 s each). One process for the whole run: 0.004 CPU s a read, where a kubectl a read took 0.07. Prints
"api ok", or "api failed TIME (why)", a line a read. test_kubeadm_lifecycle.py reads the same way (`client`, `read`).

    PYTHONPATH=.collections python3 tests/integration/api_reads.py KUBECONFIG
"""

import sys
import time

import yaml

from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm_record import Client, RecordError


def client(kubeconfig):
    """The kubeconfig's current context, a new connection each call, no retry, 3 s a call."""
    return Client(yaml, kubeconfig, timeout=3, pauses=())


def read(api):
    """One read: "" when answered, else why not."""
    try:
        status, _answer = api.call("GET", "/api/v1/namespaces/kube-system")
        return "" if status == 200 else "HTTP %d" % status
    except (RecordError, ValueError) as exc:
        return str(exc)[-200:]


def main(kubeconfig):
    api = client(kubeconfig)
    while True:
        why = read(api)
        print("api ok" if not why else "api failed %s (%s)" % (time.strftime("%H:%M:%S"), why), flush=True)
        time.sleep(0.5)


if __name__ == "__main__":
    main(sys.argv[1])
