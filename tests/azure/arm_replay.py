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

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "azure")
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
                           public_ip=vm.get("public_ip", False), provisioning=vm.get("provisioning", "Succeeded"))
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

    def add_vm(self, rg, name, size, tags, power="running", public_ip=False, scale_set=None, computer=None,
               provisioning="Succeeded"):
        vm_id = "%s/providers/Microsoft.Compute/virtualMachines/%s" % (self._rg_path(rg), name)
        nic_id = "%s/providers/Microsoft.Network/networkInterfaces/%s-nic" % (self._rg_path(rg), name.replace("_", "-"))
        vm = _render(self._templates["virtual_machine"], NAME=name, SUB=self.id, RG=rg, SIZE=size, NIC_ID=nic_id,
                     VMID=str(uuid.uuid4()), COMPUTER=computer or name)
        vm["tags"] = dict(tags)
        vm["properties"]["provisioningState"] = provisioning
        if scale_set is not None:
            vm["properties"]["virtualMachineScaleSet"] = {"id": scale_set["id"]}
        self._nic(rg, nic_id, vm_id, public_ip)
        self.vms.append(self._index(vm))
        self.power[vm_id.lower()], self.computer[vm_id.lower()] = power, computer or name
        return vm

    def delete_nic_of(self, name):
        """The VM's network interface deleted while the VM still shows in the VM list (it is being deleted: ARM's
        lists lag a deletion by moments)."""
        vm = next(v for v in self.vms if v["name"] == name)
        for nic in self.nics.pop(vm["id"].lower(), []):
            self.by_id.pop(nic["id"].lower(), None)

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
        self.hooks = []
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

    def on_request(self, path_regex, action):
        """Run `action()` when a request matching `path_regex` arrives (before it is answered): a change to the
        subscription between two of a client's requests."""
        with self._lock:
            self.hooks.append((re.compile(path_regex, re.I), action))

    def clear(self):
        with self._lock:
            self.faults.clear()
            self.hooks.clear()
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

    def _page(self, items, raw_path, query, render=None):
        """One page of `items` (each through `render`, when given) and, while more remain, a nextLink that carries the
        request's own query with a $skiptoken, as ARM's do."""
        start = int(query.get("$skiptoken", ["0"])[0])
        chunk = items[start:start + self.page_size]
        page = {"value": [render(i) for i in chunk] if render else chunk}
        if start + self.page_size < len(items):
            path = urllib.parse.urlsplit(raw_path).path
            params = [(k, v) for k, vs in query.items() if k != "$skiptoken" for v in vs]
            params.append(("$skiptoken", str(start + self.page_size)))
            page["nextLink"] = "%s%s?%s" % (self.base, path, urllib.parse.urlencode(params, safe="$"))
        return 200, {}, page

    def instance_view(self, vm_id):
        """A VM's instance view (VirtualMachineInstanceView), as GET .../instanceView answers it."""
        vm = self.sub.by_id[vm_id]
        return _render(_load("instance_view.json"), COMPUTER=self.sub.computer[vm_id], NAME=vm["name"],
                       POWER=self.sub.power[vm_id], PROVISIONING=vm["properties"]["provisioningState"].lower())

    def _status_only(self, vm):
        """A VM as VirtualMachines ListAll answers it with statusOnly=true: its identity and instance view."""
        key = vm["id"].lower()
        return {"name": vm["name"], "id": vm["id"], "type": vm["type"], "location": vm["location"],
                "properties": {"vmId": vm["properties"]["vmId"], "instanceView": self.instance_view(key)}}

    def _expanded(self, vm):
        """A scale set instance as VirtualMachineScaleSetVMs List answers it with $expand=instanceView."""
        out = copy.deepcopy(vm)
        view = self.instance_view(vm["id"].lower())
        view.pop("computerName", None)  # a scale set instance's view is VirtualMachineScaleSetVMInstanceView
        view.update(computerName=self.sub.computer[vm["id"].lower()], platformUpdateDomain=0, platformFaultDomain=0)
        out["properties"]["instanceView"] = view
        return out

    def _in_group(self, items, rg):
        return [r for r in items if rg is None or "/resourcegroups/%s/" % rg in r["id"].lower()]

    def _get(self, path, query, raw_path):
        with self._lock:
            hooks = [action for regex, action in self.hooks if regex.search(raw_path)]
        for action in hooks:
            action()
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
        rest = low[len(sub):]
        # VirtualMachines ListAll / List, VirtualMachineScaleSets ListAll / List
        m = re.fullmatch(r"(?:/resourcegroups/([^/]+))?/providers/microsoft\.compute/"
                         r"(virtualmachines|virtualmachinescalesets)", rest)
        if m:
            rg, kind = m.groups()
            if kind == "virtualmachines" and query.get("statusOnly", [""])[0].lower() == "true":
                if rg:  # statusOnly is a parameter of ListAll only
                    return _arm_error(400, "InvalidParameter", "statusOnly is not a parameter of this operation.")
                self._count("list_vm_statuses")
                return self._page(self.sub.vms, raw_path, query, self._status_only)
            self._count("list_" + kind)
            items = self._in_group(self.sub.vms if kind == "virtualmachines" else self.sub.scale_sets, rg)
            return self._page(items, raw_path, query)
        # NetworkInterfaces ListAll / List, PublicIPAddresses ListAll / List
        m = re.fullmatch(r"(?:/resourcegroups/([^/]+))?/providers/microsoft\.network/"
                         r"(networkinterfaces|publicipaddresses)", rest)
        if m:
            rg, kind = m.groups()
            self._count("list_" + kind)
            items = [r for r in self.sub.by_id.values() if r["type"].lower() == "microsoft.network/" + kind
                     and "/virtualmachinescalesets/" not in r["id"].lower()]
            return self._page(sorted(self._in_group(items, rg), key=lambda r: r["id"]), raw_path, query)
        # a scale set's instances, network interfaces, public IPs
        m = re.fullmatch(r"(/resourcegroups/[^/]+/providers/microsoft\.compute/virtualmachinescalesets/[^/]+)"
                         r"/(virtualmachines|networkinterfaces|publicipaddresses)", rest)
        if m:
            ss_id, kind = sub + m.group(1), m.group(2)
            ss = self.sub.by_id.get(ss_id)
            if ss is None:
                return _arm_error(404, "ResourceNotFound", "The Resource '%s' was not found." % path)
            if kind != "virtualmachines" and api != VMSS_NIC_API:
                return self._vmss_network_refused(api)
            if ss["properties"]["orchestrationMode"] == "Flexible":
                return _arm_error(400, "OperationNotAllowed", "This operation is not supported for a Virtual Machine "
                                  "Scale Set with Flexible orchestration mode.")
            instances = self.sub.instances.get(ss_id, [])  # a scale set scaled to zero: an empty list
            if kind == "virtualmachines":
                self._count("list_scale_set_vms")
                expand = query.get("$expand", [""])[0].lower() == "instanceview"
                return self._page(instances, raw_path, query, self._expanded if expand else None)
            self._count("list_scale_set_" + kind)
            typ = "microsoft.network/" + kind
            items = [r for vm in instances for nic in self.sub.nics.get(vm["id"].lower(), [])
                     for r in ([nic] if kind == "networkinterfaces" else self._pips_of(nic)) if r["type"].lower() == typ]
            return self._page(items, raw_path, query)
        if low.endswith("/instanceview"):
            self._count("instance_view")
            vm_id = low[: -len("/instanceview")]
            if vm_id not in self.sub.power:
                return _arm_error(404, "ResourceNotFound", "The Resource '%s' was not found." % path)
            return 200, {}, self.instance_view(vm_id)
        if "/virtualmachinescalesets/" in low and "/networkinterfaces" in low:
            if api != VMSS_NIC_API:
                self._count("scale_set_nic_refused")
                return self._vmss_network_refused(api)
            if low.endswith("/networkinterfaces"):
                self._count("list_scale_set_vm_nics")
                return 200, {}, {"value": self.sub.nics.get(low[: -len("/networkinterfaces")], [])}
        resource = self.sub.by_id.get(low)
        if resource is None:
            self._count("not_found")
            return _arm_error(404, "ResourceNotFound", "The Resource '%s' was not found." % path)
        self._count("get_" + resource["type"].rsplit("/", 1)[1].lower())
        return 200, {}, copy.deepcopy(resource)

    def _pips_of(self, nic):
        for ipc in nic["properties"]["ipConfigurations"]:
            pip = (ipc["properties"].get("publicIPAddress") or {}).get("id")
            if pip and pip.lower() in self.sub.by_id:
                yield self.sub.by_id[pip.lower()]

    def _vmss_network_refused(self, api):
        self._count("scale_set_nic_refused")
        return _arm_error(400, "NoRegisteredProviderFound",
                          "No registered resource provider found for location 'westeurope' and API version "
                          "'%s' for type 'virtualMachineScaleSets/virtualMachines/networkInterfaces'. The "
                          "supported api-versions are '2015-05-01-preview, 2015-06-15, 2016-03-30, "
                          "2017-03-30, 2018-10-01'." % api)


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
