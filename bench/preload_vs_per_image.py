"""Benchmark: kubespray's per-image preload vs one image_archive, with the bare pipe as the floor.

Builds, on this machine's docker, a ~300 MB base image (real files from /usr, so it compresses like a real
base) and 4 images FROM it, each adding a 10 MB layer of its own. Then, alternating the three paths in each
round so they see the same machine load:

  kubespray   per image: docker save IMG | gzip -1 > IMG.tar.gz; load: docker load -i IMG.tar.gz, per image
  archive     kubescale.tuning.image_archive (the module itself, run as Ansible runs it on a node):
              state=saved into one zstd archive; state=loaded (sha256 of the archive first, then the load)
  floor       docker save A B C D | zstd > f.tar.zst; load: zstd -dc f.tar.zst | docker load

Every load starts from a store without any of the five images. Reports the archive sizes, median load times,
their ratios, and the archive's re-run (images present: digest comparison only) time and bytes read.

    .venv/bin/python -m bench.preload_vs_per_image [--rounds 3] [--base-mb 300]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULE = os.path.join(REPO, "plugins", "modules", "image_archive.py")
BASE = "kubescale-bench/base:1"
APPS = ["kubescale-bench/app%d:1" % i for i in range(1, 5)]


def sh(argv, **kw):
    return subprocess.run(argv, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def pipeline(cmd):
    # the benchmark's own measuring harness (not collection code): a shell pipe is the thing being measured
    subprocess.run(["bash", "-o", "pipefail", "-c", cmd], check=True, stdout=subprocess.DEVNULL)


def build_images(work, base_mb):
    """A base of real /usr files up to base_mb, then four apps with a 10 MB layer each."""
    root = os.path.join(work, "rootfs")
    budget = base_mb << 20
    used = 0
    for top in ("/usr/lib", "/usr/share", "/usr/bin"):
        for d, _dirs, files in os.walk(top):
            for name in files:
                src = os.path.join(d, name)
                if os.path.islink(src) or not os.path.isfile(src):
                    continue
                size = os.path.getsize(src)
                if used + size > budget:
                    continue
                dst = os.path.join(root, os.path.relpath(src, "/"))
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                try:
                    shutil.copyfile(src, dst)
                except OSError:
                    continue
                used += size
            if used >= budget * 0.98:
                break
    shutil.copy("/bin/busybox", os.path.join(root, "busybox"))
    tar = os.path.join(work, "base.tar")
    sh(["tar", "-C", root, "-cf", tar, "."])
    shutil.rmtree(root)
    sh(["docker", "import", tar, BASE])
    os.unlink(tar)
    for i, app in enumerate(APPS, 1):
        ctx = os.path.join(work, "ctx%d" % i)
        os.makedirs(ctx)
        with open(os.path.join(ctx, "data"), "wb") as f:
            f.write(os.urandom(10 << 20))
        with open(os.path.join(ctx, "Dockerfile"), "w") as f:
            f.write("FROM %s\nCOPY data /app%d.data\n" % (BASE, i))
        sh(["docker", "build", "-q", "-t", app, ctx])
        shutil.rmtree(ctx)
    return used


def remove_images():
    subprocess.run(["docker", "rmi", "-f"] + APPS + [BASE], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def run_module(args):
    """Run image_archive the way Ansible runs it on a node (its args file), return its JSON result."""
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, ".collections"))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, f)
    try:
        out = subprocess.run([sys.executable, MODULE, f.name], env=env, stdout=subprocess.PIPE, check=False).stdout
    finally:
        os.unlink(f.name)
    result = json.loads(out)
    if result.get("failed"):
        raise SystemExit("image_archive failed: %s" % result.get("msg"))
    return result


def timed(fn):
    t = time.monotonic()
    fn()
    return time.monotonic() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--base-mb", type=int, default=300)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="kubescale-bench-preload.", dir="/var/tmp")
    try:
        remove_images()
        used = build_images(work, args.base_mb)
        refs = APPS
        # archives
        ks = {}
        for app in refs:
            ks[app] = os.path.join(work, app.replace("/", "_").replace(":", "_") + ".tar.gz")
            pipeline("docker save %s | gzip -1 > %s" % (app, ks[app]))
        ks_size = sum(os.path.getsize(p) for p in ks.values())
        ours = os.path.join(work, "preload.tar.zst")
        saved = run_module({"state": "saved", "path": ours, "images": refs})
        floor = os.path.join(work, "floor.tar.zst")
        pipeline("docker save %s | zstd -q -T0 -3 > %s" % (" ".join(refs), floor))

        def load_kubespray():
            for app in refs:
                sh(["docker", "load", "-i", ks[app]])

        def load_archive():
            res = run_module({"state": "loaded", "path": ours})
            assert res["changed"] and len(res["loaded"]) == 4, res

        def load_floor():
            pipeline("zstd -dcq %s | docker load" % floor)

        paths = [("kubespray", load_kubespray), ("archive", load_archive), ("floor", load_floor)]
        times = dict((name, []) for name, _fn in paths)
        for r in range(args.rounds):
            for name, fn in paths[r % 3:] + paths[:r % 3]:
                remove_images()
                times[name].append(timed(fn))
        # re-run: images present (the last load left them), the archive's index only
        reruns = []
        rerun = None
        for _round in range(5):
            t = time.monotonic()
            rerun = run_module({"state": "loaded", "path": ours})
            reruns.append(time.monotonic() - t)
            assert not rerun["changed"], rerun
        med = dict((k, statistics.median(v)) for k, v in times.items())
        print("image set: base %d MB of /usr files + 4 apps x 10 MB, %d alternated rounds (median)" % (used >> 20, args.rounds))
        print("%-12s %14s %12s" % ("", "archive MB", "load s"))
        print("%-12s %14.1f %12.2f" % ("kubespray", ks_size / 1e6, med["kubespray"]))
        print("%-12s %14.1f %12.2f" % ("archive", saved["size"] / 1e6, med["archive"]))
        print("%-12s %14.1f %12.2f" % ("floor", os.path.getsize(floor) / 1e6, med["floor"]))
        print()
        print("size  archive/kubespray: %.2fx (target <= 0.35x)" % (saved["size"] / ks_size))
        print("load  archive/kubespray: %.2fx (target <= 0.35x)" % (med["archive"] / med["kubespray"]))
        print("load  archive/floor:     %.2fx (target <= 1.3x)" % (med["archive"] / med["floor"]))
        print("re-run (images present): %.3f s median, %d archive bytes read (the index; %d-byte archive), "
              "target <= 1 s and no layer bytes" % (statistics.median(reruns), rerun["bytes_read"], saved["size"]))
    finally:
        remove_images()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
