# kubescale.tuning — two commands do all set-up on a fresh Debian 12 machine (root):
#   make site   build the lab and converge it with playbooks/site.yml (twice: the second run must change nothing)
#   make test   every check: lint, sanity, unit and molecule beside a lab made anew and its tests, then a bake
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
VENV := $(CURDIR)/.venv
export PATH := $(VENV)/bin:$(PATH):/usr/local/go/bin:/usr/local/lib/kubescale-go/bin
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/.collections
export PY_COLORS := 0
export ANSIBLE_FORCE_COLOR := 0
PYTHON := $(VENV)/bin/python
LAB := /usr/bin/python3 -m lab

.PHONY: deps image lab lab-down lab-status site test lint sanity unit azure-inventory molecule lab-test bench bake packer-validate ee ee-test

deps:
	bash scripts/deps.sh

image: deps
	$(LAB) image

lab: deps
	$(LAB) up

lab-down: deps
	$(LAB) down

lab-status: deps
	$(LAB) status

site: lab
	bash tests/integration/site_twice.sh

# ansible-lint's syntax checks read the default inventory, which a fresh clone has only after `make lab`: ansible.cfg
# makes an unparsed inventory fatal (for the Azure inventory), so lint lets it pass.
lint: deps
	yamllint -s .
	ruff check .
	python3 scripts/role_docs.py --check
	python3 scripts/node_state_doc.py --check
	python3 scripts/docs_check.py
	antsibull-changelog lint
	antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml
	antsibull-changelog generate --output $(CURDIR)/.changelog-check.md --output-format md
	diff -u CHANGELOG.md .changelog-check.md || { echo "CHANGELOG.md is stale: run antsibull-changelog generate"; exit 1; }
	rm -f .changelog-check.md
	ANSIBLE_INVENTORY_UNPARSED_FAILED=false ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED=false ansible-lint

sanity: deps
	bash tests/sanity/run.sh

packer-validate: deps
	packer validate -var subscription_id=00000000-0000-0000-0000-000000000000 -var resource_group=placeholder packer/azure-node.json
	packer validate -var base_image=placeholder packer/lab-node.json

# The baked image needs the lab's Kubernetes build (its kubeadm and kubelet); tests/integration/test_baked_join.py then
# joins a node booted from it to the lab's cluster.
bake: image
	bash lab/k8s/build.sh >/dev/null
	bash scripts/bake.sh

# The execution environment (execution-environment.yml) built on the lab's base image, then driven by ansible-runner
# against the lab's CPU workers (tests/integration/test_ee.py).
ee: deps
	bash scripts/ee.sh --lab kubescale-tuning-ee:lab

EE_TEST = KUBESCALE_EE_IMAGE=kubescale-tuning-ee:lab pytest -q -rs --durations=3 tests/integration/test_ee.py

ee-test: lab ee
	$(EE_TEST)

unit: deps
	pytest -q -rs tests/unit

# inventories/azure/azure_rm.yml through the azure_rm plugin against the recorded ARM on loopback (tests/azure/arm_replay.py).
azure-inventory: deps
	pytest -q -rs --durations=3 tests/azure

molecule: image
	bash scripts/molecule.sh

# The integration tests run in three streams side by side, on disjoint nodes or clusters: the main etcd (then the tests
# on the controller alone, and the Events cluster's chaos rounds); the kubeadm etcd, then the control plane whose
# objects live in it (its scheduler, DNS, API server); the rest (the Events cluster, then the workers). Two locks keep
# apart the modules that must not overlap (tests/integration/conftest.py): the control plane's (kube-apiserver's
# manifest and restarts, kubeadm's record, the scheduler) and the Events cluster's (its members stopped, wiped or
# restarted). Those that stop the whole Events cluster, or need every member up, take both; those that keep its quorum
# take only its lock, beside the control plane's scheduler and DNS tests. The control plane lock's holders make most
# of the streams' time: the lab stream starts with one of them, so the lock is busy from the start while the kubeadm
# etcd's tests run beside it. Each holder prints how long it waited for its locks and held them. Every test module is
# named once in lab-test or test (tests/unit/test_make_streams.py).
# Each stream ends with its chaos rounds (tests/chaos/): ansible-playbook killed inside each transaction its nodes
# own, then a plain re-run that must converge; CHAOS_ROUNDS (1 here, 5 in make bench) rounds each, seeds printed.
# The site's second run is the kubeadm lifecycle test's (site_twice.sh leaves it there): after the real kubeadm upgraded
# every node, a site run must change nothing on any node. That is the second run on the same converged nodes, after
# kubeadm re-rendered what it manages, so one run proves both.
# The cluster's own lifecycle (the real kubeadm upgrades every node; every tuning still in force), then the whole-lab
# audit (all green, kubeadm's record included; nothing changed; the report in a browser) and, beside it, bad input for
# every variable (each class playbook refuses it all before any change), the workers' converged state (testinfra), the
# three controllers' slices and the site's tags (each runs on every node of the lab) run while nothing else does. None
# of these changes a node or an API object, so the audit's and bad input's "nothing changed" hold side by side.
lab-test: lab
	@echo "lab-test: $$(date +%T) site: --check, then the real run"
	KUBESCALE_SITE_SECOND_RUN=0 bash tests/integration/site_twice.sh
	@echo "lab-test: $$(date +%T) kubeadm upgrade, then the site's second run"
	pytest -q -rs --durations=3 tests/integration/test_kubeadm_lifecycle.py
	@echo "lab-test: $$(date +%T) the fleet audit; beside it bad input, the workers' state, the slices, the tags"
	bash scripts/parallel.sh \
	  "audit=pytest -q -rs --durations=3 tests/integration/test_audit_fleet.py" \
	  "read-only=pytest -q -rs --durations=3 tests/integration/test_bad_input.py tests/integration/test_worker_state.py tests/integration/test_slices.py tests/integration/test_tags.py"
	@echo "lab-test: $$(date +%T) three streams"
	bash scripts/parallel.sh \
	  "etcd=pytest -q -rs --durations=0 --durations-min=20 tests/integration/test_etcd.py tests/integration/test_audit_etcd.py tests/integration/test_events_pki.py tests/integration/test_disk_latency.py tests/integration/test_host_live.py tests/chaos/test_chaos_etcd.py tests/chaos/test_chaos_events.py" \
	  "etcd-static-pod=pytest -q -rs --durations=0 --durations-min=20 tests/integration/test_etcd_static_pod.py tests/integration/test_scheduler_binpack.py tests/integration/test_dns_spread.py tests/integration/test_host_network.py tests/integration/test_control_plane.py tests/integration/test_apiserver_load.py tests/chaos/test_chaos_control_plane.py" \
	  "lab=pytest -q -rs --durations=0 --durations-min=20 tests/integration/test_events_etcd.py tests/integration/test_events_members.py tests/integration/test_audit.py tests/integration/test_lab_redeploy.py tests/integration/test_node_state_drift.py tests/integration/test_preload_url.py tests/integration/test_rollout.py tests/chaos/test_chaos_workers.py"

# Two streams side by side: the checks that need no lab (one core each, mostly), molecule, then the execution
# environment's image (it needs no lab; its test does); the lab made anew, then its tests. The checks end well before
# the lab's tests, so they run at half the CPU weight (scripts/cpu_share.sh): when both want the CPU, the lab's
# controller gets it first. The base image and the Kubernetes build both use are made first, once. Then, side by side
# on the lab: the bake and the join of a node booted from it (a new node), and the execution environment's test (it
# converges the CPU workers).
test: deps image
	bash lab/k8s/build.sh >/dev/null
	@echo "make test: $$(date +%T) lint, unit, the Azure inventory, sanity, packer, molecule, the EE image; beside them the lab made anew and its tests"
	KUBESCALE_LAB_FRESH=1 bash scripts/parallel.sh \
	  "checks=bash scripts/cpu_share.sh checks 512 $(MAKE) lint unit azure-inventory sanity packer-validate molecule ee" \
	  "lab-test=$(MAKE) lab-down lab-test"
	@echo "make test: $$(date +%T) the bake and its node's join; beside them, the execution environment on the CPU workers"
	bash scripts/parallel.sh \
	  "bake=$(MAKE) bake && pytest -q -rs --durations=3 tests/integration/test_baked_join.py" \
	  "ee-test=$(EE_TEST)"
	@echo "make test: $$(date +%T) all checks passed"

# make bench BASELINE=<git revision>: the benchmarks that compare two trees (before / after columns) measure this
# checkout against it, side by side in one run (each JSON records it). By default the last commit: what the uncommitted
# change does.
BASELINE ?= HEAD

bench: deps
	LAB_CPU_NODES=$${LAB_CPU_NODES:-20} $(LAB) up
	$(PYTHON) -m bench.sysctl_one_call
	$(PYTHON) -m bench.disk_latency_vs_fio
	$(PYTHON) -m bench.preload_vs_per_image
	$(PYTHON) -m bench.azure_inventory --json bench/azure_inventory.json
	ansible-playbook playbooks/site.yml  # the audit measures a converged lab
	$(PYTHON) -m bench.audit
	$(PYTHON) -m bench.fleet --classes kube_node_cpu,kube_node_gpu --sizes 5,10,20,40 --first-sizes 20
	$(PYTHON) -m bench.fleet --classes kube_node_cpu,kube_node_gpu --sizes 20 --first-sizes '' --baseline $(BASELINE) --out bench/fleet_workers_n20
	$(PYTHON) -m bench.fleet --classes etcd_events,etcd --sizes 1,2,3 --first-sizes '' --baseline $(BASELINE) --out bench/fleet_clusters
	$(PYTHON) -m bench.fleet --classes kube_control_plane --sizes 1,2,3 --first-sizes '' --baseline $(BASELINE) --out bench/fleet_control_plane_ha
	$(PYTHON) -m bench.dns_spread_nodes --nodes 50,500,2500 --rounds 3 --baseline $(BASELINE)
	$(PYTHON) -m bench.etcd_disk
	$(PYTHON) -m bench.binpack --nodes 1000 --rounds 1
	$(PYTHON) -m bench.agent_polling --agents 200 --pods 1000
	$(PYTHON) -m bench.ansible_cfg --class kube_node_cpu --nodes 20 --rounds 2
	$(PYTHON) -m bench.check_tasks --rounds 5 --baseline $(BASELINE)
	$(PYTHON) -m bench.worker_cpu --rounds 3 --baseline $(BASELINE)
	$(PYTHON) -m bench.skip_cost --rounds 3
	$(PYTHON) -m bench.preload_url --nodes 20 --rounds 2
	ansible-playbook playbooks/site.yml  # the chaos rounds start from a converged lab
	$(PYTHON) -m tests.chaos.chaos --rounds 5
