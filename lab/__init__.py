"""The lab: real systemd nodes, an emulated Azure resource disk each, the etcd clusters and the Kubernetes cluster
the real kubeadm makes (docs/lab.md). `python3 -m lab COMMAND` is its CLI (lab/cli.py)."""
