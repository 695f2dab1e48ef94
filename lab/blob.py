"""Blob storage for the lab: Debian's nginx on this machine, serving a directory to the nodes over the lab network.

It stands in for an Azure Blob container that image_preload_url points at (a GET of a file, with a query string the
server ignores, as a SAS token is to a client). Its access log records, per request, the client address, the path,
the status and the bytes sent, so a test or a benchmark can count what each node downloaded from it.

    with Blob(root) as blob:
        url = blob.url("good/preload.tar.zst") + "?sv=2022-11-02&sig=lab"
        ...
        blob.requests()  # [{"addr": "172.30.213.131", "path": "/good/preload.tar.zst", "status": 200, "bytes": ...}]
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time

from .common import LabError
from .nodes import SUBNET_PREFIX

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
GATEWAY = SUBNET_PREFIX + ".1"  # this machine's address on the lab network (docker's bridge)

CONF = """daemon off;
worker_processes 1;
pid {state}/nginx.pid;
error_log {state}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    log_format blob '$remote_addr $uri $status $bytes_sent';
    sendfile on;
    types {{ }}
    default_type application/octet-stream;
    client_body_temp_path {state}/tmp;
    proxy_temp_path {state}/tmp;
    fastcgi_temp_path {state}/tmp;
    uwsgi_temp_path {state}/tmp;
    scgi_temp_path {state}/tmp;
    server {{
        listen {addr}:{port};
        root {root};
        access_log {state}/access.log blob;
    }}
}}
"""


def free_port(addr):
    with socket.socket() as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


class Blob(object):
    def __init__(self, root, addr=GATEWAY, port=None):
        if not os.path.exists(NGINX):
            raise LabError("nginx is not installed (make deps installs Debian's nginx)")
        self.root = os.path.abspath(root)
        self.addr = addr
        self.port = port or free_port(addr)
        self.state = tempfile.mkdtemp(prefix="kubescale-blob-")
        self.proc = None

    def url(self, path):
        return "http://%s:%d/%s" % (self.addr, self.port, path.lstrip("/"))

    def start(self):
        os.makedirs(os.path.join(self.state, "tmp"))
        conf = os.path.join(self.state, "nginx.conf")
        with open(conf, "w") as f:
            f.write(CONF.format(state=self.state, addr=self.addr, port=self.port, root=self.root))
        self.proc = subprocess.Popen([NGINX, "-c", conf, "-p", self.state], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise LabError("nginx exited: %s" % self.proc.stderr.read().decode(errors="replace"))
            try:
                socket.create_connection((self.addr, self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.1)
        raise LabError("nginx did not listen on %s:%d" % (self.addr, self.port))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.state, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def requests(self):
        """Every request served so far: addr, path, status, bytes (nginx writes each line when it finishes)."""
        path = os.path.join(self.state, "access.log")
        if not os.path.exists(path):
            return []
        out = []
        with open(path) as f:
            for line in f:
                addr, uri, status, sent = line.split()
                out.append(dict(addr=addr, path=uri, status=int(status), bytes=int(sent)))
        return out
