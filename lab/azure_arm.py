"""A recorded Azure Resource Manager on 127.0.0.1, for the azure_rm inventory plugin in tests and bench/.

It answers what azure.azcollection's azure_rm inventory asks for, in ARM's own shapes, from the response files under
tests/fixtures/azure/: the cloud metadata endpoint (`cloud_environment` is its URL), Entra ID's OpenID configuration
and token endpoint (service principal, client credentials), the subscription's VM and scale set lists, each Uniform
scale set's instance list, instance views, network interfaces (a Uniform instance's NIC only under the Network API
version that serves it, 2018-10-01, as ARM does) and public IPs, the `/batch` endpoint, `nextLink` paging, and ARM's
error bodies. Faults are injected per request path (`fault()`): 429 with Retry-After, 500, for the top-level request
or for an entry of a batch. Every request is counted (`stats()`).

    server = Arm(Subscription.from_file("tests/fixtures/azure/subscription.yml"), page_size=100).start()
    env = server.client_env()        # AZURE_* and REQUESTS_CA_BUNDLE for ansible-inventory
"""

import collections
import copy
import http.server
import ipaddress
import json
import os
import re
import secrets
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.parse
import uuid

import yaml

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "fixtures", "azure")
VMSS_NIC_API = "2018-10-01"  # the only Network API version ARM serves a Uniform scale set instance's NICs under


def _load(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


def _render(template, **values):
    text = template
    for key, value in values.items():
        text = text.replace("__%s__" % key, value)
    return json.loads(text)


class Subscription:
    """The resources of one subscription, rendered from the response files."""

    def __init__(self, subscription, tenant, client_id):
        self.id, self.tenant, self.client_id = subscription, tenant, client_id
        self.vms = []            # plain and Flexible instances: what virtualMachines lists
        self.scale_sets = []
        self.instances = collections.defaultdict(list)  # scale set id (lower) -> Uniform instances
        self.by_id = {}          # lower-case resource id -> resource
        self.power = {}          # lower-case VM id -> PowerState
        self.computer = {}       # lower-case VM id -> computerName
        self.nics = {}           # lower-case VM id -> [NIC]
        self._hosts = ipaddress.ip_network("10.240.0.0/16").hosts()
        self._public = ipaddress.ip_network("20.61.0.0/16").hosts()
        self._templates = {name: _load(name + ".json") for name in (
            "virtual_machine", "virtual_machine_scale_set", "virtual_machine_scale_set_vm", "network_interface",
            "public_ip_address", "instance_view")}

    @classmethod
    def from_file(cls, path):
        with open(path) as f:
            spec = yaml.safe_load(f)
        sub = cls(spec["subscription"], spec["tenant"], spec["client_id"])
        for rg, content in spec["resource_groups"].items():
            for vm in content.get("vms", []):
                sub.add_vm(rg, vm["name"], vm["size"], vm.get("tags", {}), vm.get("power", "running"),
                           public_ip=vm.get("public_ip", False))
            for ss in content.get("scale_sets", []):
                sub.add_scale_set(rg, ss["name"], ss["mode"], ss["size"], ss.get("tags", {}), ss["instances"],
                                  power=ss.get("power", {}), vm_tags=ss.get("vm_tags", {}))
        return sub

    @classmethod
    def generate(cls, vms=2500, scale_set_size=500):
        """A fleet of `vms` workers in scale sets of `scale_set_size`: 3 in 5 Uniform CPU, 2 in 5 Flexible GPU."""
        sub = cls("7d6c5b4a-3f2e-4d1c-9b0a-8f7e6d5c4b3a", "1f2e3d4c-5b6a-4789-8a9b-0c1d2e3f4a5b",
                  "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e")
        for n in range((vms + scale_set_size - 1) // scale_set_size):
            count = min(scale_set_size, vms - n * scale_set_size)
            if n % 5 < 3:
                sub.add_scale_set("fleet", "cpu-%02d" % n, "Uniform", "Standard_D15_v2", {"node_class": "kube_node_cpu"},
                                  count)
            else:
                sub.add_scale_set("fleet", "gpu-%02d" % n, "Flexible", "Standard_NC24s_v3",
                                  {"node_class": "kube_node_gpu"}, count)
        return sub

    def _rg_path(self, rg):
        return "/subscriptions/%s/resourceGroups/%s" % (self.id, rg)

    def _index(self, resource):
        self.by_id[resource["id"].lower()] = resource
        return resource

    def _nic(self, rg, nic_id, vm_id, public_ip=False):
        nic = _render(self._templates["network_interface"], NAME=nic_id.rsplit("/", 1)[1], NIC_ID=nic_id, SUB=self.id,
                      RG=rg, VMID=str(uuid.uuid4()), PRIVATE_IP=str(next(self._hosts)), VM_ID=vm_id,
                      MAC="00-0D-3A-%02X-%02X-%02X" % tuple(secrets.token_bytes(3)))
        if public_ip:
            pip_id = "%s/providers/Microsoft.Network/publicIPAddresses/%s-ip" % (self._rg_path(rg), nic["name"])
            self._index(_render(self._templates["public_ip_address"], NAME=pip_id.rsplit("/", 1)[1], PIP_ID=pip_id,
                                NIC_ID=nic_id, VMID=str(uuid.uuid4()), PUBLIC_IP=str(next(self._public))))
            nic["properties"]["ipConfigurations"][0]["properties"]["publicIPAddress"] = {"id": pip_id}
        self.nics[vm_id.lower()] = [nic]
        return self._index(nic)

    def add_vm(self, rg, name, size, tags, power="running", public_ip=False, scale_set=None, computer=None):
        vm_id = "%s/providers/Microsoft.Compute/virtualMachines/%s" % (self._rg_path(rg), name)
        nic_id = "%s/providers/Microsoft.Network/networkInterfaces/%s-nic" % (self._rg_path(rg), name.replace("_", "-"))
        vm = _render(self._templates["virtual_machine"], NAME=name, SUB=self.id, RG=rg, SIZE=size, NIC_ID=nic_id,
                     VMID=str(uuid.uuid4()), COMPUTER=computer or name)
        vm["tags"] = dict(tags)
        if scale_set is not None:
            vm["properties"]["virtualMachineScaleSet"] = {"id": scale_set["id"]}
        self._nic(rg, nic_id, vm_id, public_ip)
        self.vms.append(self._index(vm))
        self.power[vm_id.lower()], self.computer[vm_id.lower()] = power, computer or name
        return vm

    def add_scale_set(self, rg, name, mode, size, tags, instances, power=None, vm_tags=None):
        power, vm_tags = power or {}, vm_tags or {}
        ss = _render(self._templates["virtual_machine_scale_set"], NAME=name, SUB=self.id, RG=rg, SIZE=size,
                     VMID=str(uuid.uuid4()))
        ss["tags"], ss["sku"]["capacity"] = dict(tags), instances
        ss["properties"]["orchestrationMode"] = mode
        if mode == "Flexible":
            del ss["properties"]["upgradePolicy"], ss["properties"]["overprovision"]
            del ss["properties"]["doNotRunExtensionsOnOverprovisionedVMs"]
        self.scale_sets.append(self._index(ss))
        for i in range(instances):
            state, own_tags = power.get(str(i), "running"), vm_tags.get(str(i), {})
            if mode == "Flexible":
                # A Flexible instance is a VM named <scale set>_<8 hex>, with its own NIC, in the VM list.
                suffix = uuid.uuid5(uuid.NAMESPACE_URL, ss["id"] + str(i)).hex[:8]
                self.add_vm(rg, "%s_%s" % (name, suffix), size, own_tags, state, scale_set=ss,
                            computer="%s%s" % (name, suffix.upper()[:6]))
                continue
            vm_id = "%s/virtualMachines/%d" % (ss["id"], i)
            nic_id = "%s/networkInterfaces/%s-nic" % (vm_id, name)
            computer = "%s%06X" % (name, i)
            vm = _render(self._templates["virtual_machine_scale_set_vm"], NAME="%s_%d" % (name, i), SUB=self.id, RG=rg,
                         VMSS=name, INSTANCE=str(i), SIZE=size, NIC_ID=nic_id, VMID=str(uuid.uuid4()),
                         COMPUTER=computer)
            vm["tags"] = dict(own_tags)
            self._nic(rg, nic_id, vm_id)
            self.instances[ss["id"].lower()].append(self._index(vm))
            self.power[vm_id.lower()], self.computer[vm_id.lower()] = state, computer

    def count(self):
        return len(self.vms) + sum(len(v) for v in self.instances.values())


def _arm_error(status, code, message):
    return status, {}, {"error": {"code": code, "message": message}}


class Arm:
    """The HTTPS server. `fault(path_regex, status, times, retry_after)` makes matching requests fail."""

    def __init__(self, subscription, page_size=100, secret="kubescale-replay-secret", token_lifetime=3599):
        self.sub, self.page_size = subscription, page_size
        self.secret, self.expired_secret = secret, None
        self.token_lifetime = token_lifetime
        self.tokens = {}
        self.faults = []
        self.counts = collections.Counter()
        self.log = []
        self._lock = threading.Lock()
        self._dir = tempfile.mkdtemp(prefix="kubescale-arm-")
        self.ca = os.path.join(self._dir, "ca.crt")
        self.base = None

    # --- TLS: a CA and a server certificate for 127.0.0.1, made by openssl for this run
    def _certificates(self):
        d = self._dir
        key, crt = os.path.join(d, "server.key"), os.path.join(d, "server.crt")

        def openssl(*argv):
            subprocess.run(["openssl", *argv], check=True, capture_output=True)

        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=kubescale replay CA",
                "-keyout", os.path.join(d, "ca.key"), "-out", self.ca)
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", key,
                "-out", os.path.join(d, "server.csr"))
        with open(os.path.join(d, "server.ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
        openssl("x509", "-req", "-in", os.path.join(d, "server.csr"), "-CA", self.ca, "-CAkey", os.path.join(d, "ca.key"),
                "-CAcreateserial", "-days", "2", "-extfile", os.path.join(d, "server.ext"), "-out", crt)
        return key, crt

    def start(self):
        key, crt = self._certificates()
        arm = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _reply(self, status, headers, body):
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", headers.pop("Content-Type", "application/json; charset=utf-8"))
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._reply(*arm.handle("GET", self.path, self.headers, b""))

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._reply(*arm.handle("POST", self.path, self.headers, body))

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(crt, key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.base = "https://127.0.0.1:%d" % self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def client_env(self, secret=None):
        """The environment an azure_rm client needs to use this server instead of Azure."""
        return {
            "AZURE_CLOUD_ENVIRONMENT": self.base + "/metadata/endpoints?api-version=2022-09-01",
            "AZURE_CLIENT_ID": self.sub.client_id, "AZURE_SECRET": secret or self.secret,
            "AZURE_TENANT": self.sub.tenant, "AZURE_SUBSCRIPTION_ID": self.sub.id,
            "AZURE_DISABLE_INSTANCE_DISCOVERY": "true",
            "REQUESTS_CA_BUNDLE": self.ca, "SSL_CERT_FILE": self.ca,
        }

    # --- faults and counters
    def fault(self, path_regex, status, times=1, retry_after=None, code=None):
        with self._lock:
            self.faults.append({"re": re.compile(path_regex, re.I), "status": status, "times": times,
                                "retry_after": retry_after, "code": code, "hits": 0})

    def clear(self):
        with self._lock:
            self.faults.clear()
            self.counts.clear()
            self.log.clear()

    def stats(self):
        with self._lock:
            c = dict(self.counts)
        c["api_calls"] = c.get("request", 0) - c.get("batch", 0) + c.get("batch_entry", 0)
        return c

    def _count(self, *keys):
        with self._lock:
            for k in keys:
                self.counts[k] += 1

    def _injected(self, path):
        with self._lock:
            for f in self.faults:
                if f["times"] and f["re"].search(path):
                    f["times"] -= 1
                    f["hits"] += 1
                    headers = {"Retry-After": str(f["retry_after"])} if f["retry_after"] is not None else {}
                    code = f["code"] or {429: "TooManyRequests", 500: "InternalServerError"}.get(f["status"], "Error")
                    return f["status"], headers, {"error": {"code": code, "message": "Injected by the replay: %s" % code}}
        return None

    # --- dispatch
    def handle(self, method, raw_path, headers, body):
        url = urllib.parse.urlsplit(raw_path)
        path, query = url.path, urllib.parse.parse_qs(url.query)
        self._count("request")
        with self._lock:
            self.log.append((method, raw_path))
        low = path.lower().rstrip("/")
        if low == "/metadata/endpoints":
            self._count("metadata")
            doc = json.loads(_load("metadata_endpoints.json").replace("__BASE__", self.base))
            return 200, {}, doc
        if low.endswith("/v2.0/.well-known/openid-configuration"):
            tenant = path.strip("/").split("/")[0]
            doc = _load("openid_configuration.json").replace("__BASE__", self.base).replace("__TENANT__", tenant)
            return 200, {}, json.loads(doc)
        if low.endswith("/oauth2/v2.0/token") and method == "POST":
            return self._token(path, body)
        auth = headers.get("Authorization", "")
        token = auth[7:] if auth.startswith("Bearer ") else None
        expiry = self.tokens.get(token)
        if expiry is None:
            return _arm_error(401, "InvalidAuthenticationToken", "The access token is invalid.")
        if expiry < time.time():
            return _arm_error(401, "ExpiredAuthenticationToken",
                              "The access token expiry UTC time is earlier than current UTC time.")
        if low == "/batch" and method == "POST":
            return self._batch(json.loads(body or b"{}"))
        return self._get(path, query, raw_path)

    def _token(self, path, body):
        self._count("token")
        form = urllib.parse.parse_qs(body.decode())
        tenant = path.strip("/").split("/")[0]
        client, secret = form.get("client_id", [""])[0], form.get("client_secret", [""])[0]
        if tenant != self.sub.tenant:
            return 400, {}, {"error": "invalid_request", "error_codes": [90002],
                             "error_description": "AADSTS90002: Tenant '%s' not found." % tenant}
        if client != self.sub.client_id:
            return 400, {}, {"error": "unauthorized_client", "error_codes": [700016],
                             "error_description": "AADSTS700016: Application with identifier '%s' was not found in the "
                                                  "directory." % client}
        if self.expired_secret is not None and secret == self.expired_secret:
            return 401, {}, {"error": "invalid_client", "error_codes": [7000222],
                             "error_description": "AADSTS7000222: The provided client secret keys for app '%s' are "
                                                  "expired." % client}
        if secret != self.secret:
            return 401, {}, {"error": "invalid_client", "error_codes": [7000215],
                             "error_description": "AADSTS7000215: Invalid client secret provided. Ensure the secret "
                                                  "being sent in the request is the client secret value, not the "
                                                  "client secret ID, for a secret added to app '%s'." % client}
        token = secrets.token_urlsafe(32)
        with self._lock:
            self.tokens[token] = time.time() + self.token_lifetime
        return 200, {}, {"token_type": "Bearer", "expires_in": self.token_lifetime,
                         "ext_expires_in": self.token_lifetime, "access_token": token}

    def _batch(self, doc):
        self._count("batch")
        responses = []
        for entry in doc.get("requests", []):
            self._count("batch_entry")
            target = urllib.parse.urlsplit(entry["url"])
            inner = target.path + ("?" + target.query if target.query else "")
            status, headers, content = self._get(target.path, urllib.parse.parse_qs(target.query), inner)
            responses.append({"name": entry["name"], "httpStatusCode": status,
                              "headers": dict(headers, **{"x-ms-request-id": str(uuid.uuid4())}),
                              "content": content, "contentLength": len(json.dumps(content))})
        return 200, {}, {"responses": responses}

    def _page(self, items, raw_path, query):
        start = int(query.get("$skiptoken", ["0"])[0])
        page = {"value": items[start:start + self.page_size]}
        if start + self.page_size < len(items):
            path = urllib.parse.urlsplit(raw_path).path
            page["nextLink"] = "%s%s?api-version=%s&$skiptoken=%d" % (
                self.base, path, query.get("api-version", [""])[0], start + self.page_size)
        return 200, {}, page

    def _get(self, path, query, raw_path):
        injected = self._injected(raw_path)
        if injected:
            self._count("fault")
            return injected
        if not query.get("api-version"):
            return _arm_error(400, "MissingApiVersionParameter",
                              "The api-version query parameter (?api-version=) is required for all requests.")
        api = query["api-version"][0]
        low = path.lower().rstrip("/")
        sub = "/subscriptions/%s" % self.sub.id.lower()
        if not low.startswith(sub):
            return _arm_error(404, "SubscriptionNotFound", "The subscription '%s' could not be found." % path)
        m = re.fullmatch(r"(?:/resourcegroups/([^/]+))?/providers/microsoft\.compute/(virtualmachines|virtualmachinescalesets)",
                         low[len(sub):])
        if m:
            self._count("list_" + m.group(2))
            rg = m.group(1)
            items = self.sub.vms if m.group(2) == "virtualmachines" else self.sub.scale_sets
            if rg:
                items = [r for r in items if "/resourcegroups/%s/" % rg in r["id"].lower()]
            return self._page(items, raw_path, query)
        if low.endswith("/instanceview"):
            self._count("instance_view")
            vm_id = low[: -len("/instanceview")]
            if vm_id not in self.sub.power:
                return _arm_error(404, "ResourceNotFound", "The Resource '%s' was not found." % path)
            name = self.sub.by_id[vm_id]["name"]
            return 200, {}, _render(_load("instance_view.json"), COMPUTER=self.sub.computer[vm_id], NAME=name,
                                    POWER=self.sub.power[vm_id])
        if low.endswith("/virtualmachines") and low[: -len("/virtualmachines")] in self.sub.instances:
            self._count("list_scale_set_vms")
            return self._page(self.sub.instances[low[: -len("/virtualmachines")]], raw_path, query)
        if "/virtualmachinescalesets/" in low and "/networkinterfaces" in low:
            if api != VMSS_NIC_API:
                self._count("scale_set_nic_refused")
                return _arm_error(400, "NoRegisteredProviderFound",
                                  "No registered resource provider found for location 'westeurope' and API version "
                                  "'%s' for type 'virtualMachineScaleSets/virtualMachines/networkInterfaces'. The "
                                  "supported api-versions are '2015-05-01-preview, 2015-06-15, 2016-03-30, "
                                  "2017-03-30, 2018-10-01'." % api)
            if low.endswith("/networkinterfaces"):
                self._count("list_scale_set_vm_nics")
                return 200, {}, {"value": self.sub.nics.get(low[: -len("/networkinterfaces")], [])}
        resource = self.sub.by_id.get(low)
        if resource is None:
            return _arm_error(404, "ResourceNotFound", "The Resource '%s' was not found." % path)
        self._count("get_" + resource["type"].rsplit("/", 1)[1].lower())
        return 200, {}, copy.deepcopy(resource)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--vms", type=int, default=0, help="generate a fleet of this many VMs instead of the fixture")
    parser.add_argument("--page-size", type=int, default=100)
    args = parser.parse_args()
    subscription = Subscription.generate(args.vms) if args.vms else Subscription.from_file(
        os.path.join(FIXTURES, "subscription.yml"))
    server = Arm(subscription, page_size=args.page_size).start()
    for k, v in server.client_env().items():
        print("export %s=%s" % (k, v))
    print("# serving %d VMs on %s; Ctrl-C stops" % (subscription.count(), server.base), flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()
