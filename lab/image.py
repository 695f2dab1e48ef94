"""The lab's node images: the mirror this machine uses, the Debian 12 base image (debootstrap -> docker import,
cached by content), the Debian 11 image of the toml_legacy scenario, and the lab's pause image."""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from .common import LABEL, REPO, LabError, docker, log, run

# The Azure udev rules make /dev/disk/azure/resource point at the temp disk; in the lab the node gets its emulated
# resource disk as /dev/sdb, and this unit (lab/fixtures/lab-azure-resource-link.service) recreates the link at boot.
with open(os.path.join(REPO, "lab", "fixtures", "lab-azure-resource-link.service")) as _f:
    AZURE_LINK_UNIT = _f.read()


IMAGE_REPO = "kubescale-lab-base"
SUITE = "bookworm"
# Installed by debootstrap itself: enough to boot systemd and be reached by Ansible.
BOOT_PACKAGES = [
    "systemd", "systemd-sysv", "dbus", "openssh-server", "python3", "python3-apt", "sudo",
    "iproute2", "procps", "kmod", "udev", "ca-certificates",
]
# Installed in a second stage with apt (services masked from starting): what later roles need.
ROLE_PACKAGES = [
    "docker.io", "containerd", "etcd-server", "etcd-client", "fio", "zstd", "e2fsprogs",
    "xfsprogs", "rsync", "ntfs-3g", "util-linux", "gdisk", "python3-yaml", "busybox-static", "haproxy", "openssl",
]
# Services the roles enable themselves: off in the base image so a node boots clean.
DISABLED_UNITS = ["docker.service", "docker.socket", "containerd.service", "etcd.service", "haproxy.service"]
# Units that cannot work in a container.
MASKED_UNITS = [
    "systemd-udevd.service", "systemd-udevd-control.socket", "systemd-udevd-kernel.socket",
    "systemd-udev-trigger.service", "systemd-modules-load.service", "getty@tty1.service",
    "console-getty.service", "systemd-firstboot.service",
]


def parse_apt_sources(sources_list_text, deb822_texts):
    """Return the first Debian mirror URI that serves the bookworm suite (not security)."""
    candidates = []
    for line in sources_list_text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line.startswith("deb "):
            continue
        parts = re.sub(r"\[[^]]*\]", "", line).split()
        if len(parts) >= 3:
            candidates.append((parts[1], [parts[2]]))
    for text in deb822_texts:
        for stanza in re.split(r"\n\s*\n", text):
            fields = {}
            for line in stanza.splitlines():
                if line.startswith("#") or ":" not in line or line[0].isspace():
                    continue
                key, value = line.split(":", 1)
                fields[key.strip().lower()] = value.strip()
            if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes") == "no":
                continue
            for uri in fields.get("uris", "").split():
                candidates.append((uri, fields.get("suites", "").split()))
    for uri, suites in candidates:
        if SUITE in suites and "security" not in uri:
            return uri.rstrip("/")
    raise LabError("no Debian %s mirror found in this machine's apt sources" % SUITE)


def machine_mirror():
    sources = ""
    if os.path.exists("/etc/apt/sources.list"):
        with open("/etc/apt/sources.list") as f:
            sources = f.read()
    deb822 = []
    d = "/etc/apt/sources.list.d"
    if os.path.isdir(d):
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            with open(path) as f:
                if name.endswith(".sources"):
                    deb822.append(f.read())
                elif name.endswith(".list"):
                    sources += "\n" + f.read()
    return parse_apt_sources(sources, deb822)


def image_tag():
    """The cache key: everything that shapes the image, not the mirror it came from."""
    h = hashlib.sha256()
    for part in (SUITE, BOOT_PACKAGES, ROLE_PACKAGES, DISABLED_UNITS, MASKED_UNITS, AZURE_LINK_UNIT,
                 "recipe-3"):
        h.update(json.dumps(part).encode())
    return "%s:%s" % (IMAGE_REPO, h.hexdigest()[:12])


def image_exists(tag):
    return docker("image", "inspect", tag, check=False).returncode == 0


def docker_import(root, tag, cmd, kind):
    """The root filesystem at `root` as the image `tag` (its CMD `cmd`, labelled as the lab's `kind` image)."""
    tar = subprocess.Popen(["tar", "-C", root, "--numeric-owner", "-cf", "-", "."], stdout=subprocess.PIPE)
    imp = subprocess.run(["docker", "import", "--change", "CMD " + cmd, "--change", "LABEL %s=%s" % (LABEL, kind),
                          "-", tag], stdin=tar.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         check=False)
    tar.stdout.close()
    if tar.wait() != 0 or imp.returncode != 0:
        raise LabError("docker import failed: %s" % imp.stderr.strip())
    log("built %s" % tag)


def needs_build(tag, force, what):
    """Whether the image `tag` is to be built (not cached, or forced); debootstrap must be there to build it."""
    if image_exists(tag) and not force:
        log("%s image %s is cached" % (what, tag))
        return False
    if shutil.which("debootstrap") is None:
        raise LabError("debootstrap is not installed (make deps installs it)")
    return True


def build_image(force=False):
    tag = image_tag()
    if not needs_build(tag, force, "base"):
        return tag
    mirror = machine_mirror()
    log("building %s with debootstrap from this machine's mirror (a few minutes)" % tag)
    work = tempfile.mkdtemp(prefix="kslab-rootfs-", dir=os.environ.get("LAB_BUILD_DIR", "/var/tmp"))
    root = os.path.join(work, "rootfs")
    mounted = []
    try:
        run(["debootstrap", "--variant=minbase", "--include=" + ",".join(BOOT_PACKAGES),
             SUITE, root, mirror], capture=False)
        with open(os.path.join(root, "etc/apt/sources.list"), "w") as f:
            f.write("deb %s %s main\n" % (mirror, SUITE))
        # No service may start inside the chroot.
        policy = os.path.join(root, "usr/sbin/policy-rc.d")
        with open(policy, "w") as f:
            f.write("#!/bin/sh\nexit 101\n")
        os.chmod(policy, 0o755)
        for fs, target in (("proc", "proc"), ("sysfs", "sys")):
            path = os.path.join(root, target)
            run(["mount", "-t", fs, fs, path])
            mounted.append(path)
        env = "DEBIAN_FRONTEND=noninteractive"
        run(["chroot", root, "env", env, "apt-get", "update"], capture=False)
        run(["chroot", root, "env", env, "apt-get", "install", "-y", "--no-install-recommends"]
            + ROLE_PACKAGES, capture=False)
        run(["chroot", root, "apt-get", "clean"])
        for path in reversed(mounted):
            run(["umount", path])
        mounted = []
        os.remove(policy)
        for unit in DISABLED_UNITS:
            run(["chroot", root, "systemctl", "disable", unit], check=False)
        for unit in MASKED_UNITS:
            run(["chroot", root, "systemctl", "mask", unit], check=False)
        with open(os.path.join(root, "etc/systemd/system/lab-azure-resource-link.service"), "w") as f:
            f.write(AZURE_LINK_UNIT)
        run(["chroot", root, "systemctl", "enable", "lab-azure-resource-link.service"])
        with open(os.path.join(root, "etc/ssh/sshd_config.d/lab.conf"), "w") as f:
            f.write("UseDNS no\nPermitRootLogin prohibit-password\nMaxStartups 200\nMaxSessions 50\n")
        os.makedirs(os.path.join(root, "root/.ssh"), mode=0o700, exist_ok=True)
        for path in ("etc/machine-id", "var/lib/dbus/machine-id"):
            full = os.path.join(root, path)
            if os.path.lexists(full):
                os.remove(full)
        open(os.path.join(root, "etc/machine-id"), "w").close()
        shutil.rmtree(os.path.join(root, "var/lib/apt/lists"), ignore_errors=True)
        os.makedirs(os.path.join(root, "var/lib/apt/lists/partial"), exist_ok=True)
        docker_import(root, tag, '["/sbin/init"]', "base")
        return tag
    finally:
        for path in reversed(mounted):
            run(["umount", "-l", path], check=False)
        shutil.rmtree(work, ignore_errors=True)


# An older Debian whose python3 (3.9) has no tomllib: the molecule scenario toml_legacy runs the collection's TOML
# code there for real (the vendored tomli), as on Ubuntu 22.04's 3.10 nodes. No systemd, no sshd: molecule reaches
# it through docker.
LEGACY_REPO = "kubescale-lab-legacy"
LEGACY_SUITE = "bullseye"
LEGACY_PACKAGES = ["python3", "python3-yaml"]


def legacy_image_tag():
    h = hashlib.sha256(json.dumps([LEGACY_SUITE, LEGACY_PACKAGES, "recipe-1"]).encode())
    return "%s:%s" % (LEGACY_REPO, h.hexdigest()[:12])


def build_legacy_image(force=False):
    tag = legacy_image_tag()
    if not needs_build(tag, force, "legacy"):
        return tag
    log("building %s (Debian %s) with debootstrap from this machine's mirror" % (tag, LEGACY_SUITE))
    work = tempfile.mkdtemp(prefix="kslab-legacy-", dir=os.environ.get("LAB_BUILD_DIR", "/var/tmp"))
    root = os.path.join(work, "rootfs")
    try:
        run(["debootstrap", "--variant=minbase", "--include=" + ",".join(LEGACY_PACKAGES), LEGACY_SUITE, root,
             machine_mirror()], capture=False)
        shutil.rmtree(os.path.join(root, "var/lib/apt/lists"), ignore_errors=True)
        docker_import(root, tag, '["sleep", "infinity"]', "legacy")
        return tag
    finally:
        shutil.rmtree(work, ignore_errors=True)


PAUSE_IMAGE = "kubescale-lab/pause:3.9"


def ensure_pause_image():
    """The lab's pause image on the controller's docker (image_preload's builder in the lab): no registry here.

    A static busybox that sleeps, built FROM scratch; the lab inventory names it image_preload_pause_image.
    """
    if docker("image", "inspect", PAUSE_IMAGE, check=False).returncode == 0:
        return
    if not os.path.exists("/bin/busybox"):
        sys.exit("lab: /bin/busybox (busybox-static) is needed to build %s" % PAUSE_IMAGE)
    docker_build(PAUSE_IMAGE, ["FROM scratch", "COPY pause /pause", 'ENTRYPOINT ["/pause", "sleep", "2147483647"]'],
                 {"pause": "/bin/busybox"})


def docker_build(tag, steps, files):
    """Build `tag` from these Dockerfile lines, its context the controller's `files` ({name in the context: path})."""
    with tempfile.TemporaryDirectory() as d:
        for name, path in files.items():
            shutil.copy(path, os.path.join(d, name))
        with open(os.path.join(d, "Dockerfile"), "w") as f:
            f.write("\n".join(steps) + "\n")
        docker("build", "-q", "-t", tag, d)
    log("built %s" % tag)


# The execution environment's base image in the lab (scripts/ee.sh): the node base image with pip and venv (which
# ansible-builder's stages use) and this machine's CA bundle and pip configuration, so that pip inside the build
# reaches the package index the way this machine does. ansible-builder's default base images are RPM-based and come
# from a registry, which the lab cannot reach.
EE_BASE_REPO = "kubescale-lab-ee-base"
EE_BASE_PACKAGES = ["python3-pip", "python3-venv", "python3-wheel", "openssh-client"]
HOST_FILES = ["/etc/ssl/certs/ca-certificates.crt", "/etc/pip.conf"]


def ee_base_image_tag():
    h = hashlib.sha256(json.dumps([image_tag(), EE_BASE_PACKAGES, "recipe-1"]).encode())
    for path in HOST_FILES:
        if os.path.exists(path):
            with open(path, "rb") as f:
                h.update(path.encode() + b"\0" + f.read())
    return "%s:%s" % (EE_BASE_REPO, h.hexdigest()[:12])


def build_ee_base_image(force=False):
    tag = ee_base_image_tag()
    if image_exists(tag) and not force:
        log("execution environment base image %s is cached" % tag)
        return tag
    steps = ["FROM %s" % build_image()]
    files = {}
    for index, path in enumerate(HOST_FILES):
        if os.path.exists(path):
            files["host-%d" % index] = path
            steps.append("COPY host-%d %s" % (index, path))
    steps.append("RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends %s"
                 " && apt-get clean && rm -rf /var/lib/apt/lists/*" % " ".join(EE_BASE_PACKAGES))
    steps.append('CMD ["/bin/bash"]')
    docker_build(tag, steps, files)
    return tag
