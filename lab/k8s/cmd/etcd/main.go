// etcd is the etcd server of the release kubeadm pins for this Kubernetes version (constants.DefaultEtcdVersion),
// built from the same module graph as the control plane: kubeadm's etcd static pods (`kubeadm init phase etcd
// local`, stacked members) run it in the lab, where a real cluster runs the registry.k8s.io/etcd image. Their
// manifests carry flags Debian's etcd 3.4 does not know (--feature-gates=InitialCorruptCheck=true).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
