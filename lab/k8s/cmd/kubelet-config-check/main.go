// kubelet-config-check loads a KubeletConfiguration file the way kubelet's own start-up does (the kubelet's
// file loader with its defaulting and codec, the default eviction thresholds, feature gates from the file) and
// runs the kubelet's own validation on it. The kubelet binary cannot run in the lab's unprivileged
// containers; this is the part of its start-up that decides whether a config file is accepted.
//
// Usage: kubelet-config-check FILE
// Exit 0 and a JSON summary of the pull settings on stdout when the kubelet would accept FILE; exit 1 and the
// kubelet's own error on stderr when it would refuse it.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	kubeletconfigvalidation "k8s.io/kubernetes/pkg/kubelet/apis/config/validation"
	"k8s.io/kubernetes/pkg/kubelet/eviction"
	"k8s.io/kubernetes/pkg/kubelet/kubeletconfig/configfiles"
	utilfs "k8s.io/kubernetes/pkg/util/filesystem"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kubelet-config-check FILE")
		os.Exit(2)
	}
	name, err := filepath.Abs(os.Args[1])
	if err != nil {
		fail(err)
	}
	loader, err := configfiles.NewFsLoader(&utilfs.DefaultFs{}, name)
	if err != nil {
		fail(err)
	}
	kc, err := loader.Load(context.Background())
	if err != nil {
		fail(fmt.Errorf("failed to load kubelet config file %s: %w", name, err))
	}
	// As cmd/kubelet/app.loadConfigFile: no evictionHard in the file means the OS defaults.
	if kc.EvictionHard == nil {
		kc.EvictionHard = eviction.DefaultEvictionHard
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(kc.FeatureGates); err != nil {
		fail(fmt.Errorf("failed to set feature gates from the config file: %w", err))
	}
	if err := kubeletconfigvalidation.ValidateKubeletConfiguration(kc, utilfeature.DefaultFeatureGate); err != nil {
		fail(fmt.Errorf("failed to validate kubelet configuration: %w", err))
	}
	var maxParallel any
	if kc.MaxParallelImagePulls != nil {
		maxParallel = *kc.MaxParallelImagePulls
	}
	out, _ := json.Marshal(map[string]any{
		"valid":                 true,
		"serializeImagePulls":   kc.SerializeImagePulls,
		"maxParallelImagePulls": maxParallel,
		"runtimeRequestTimeout": kc.RuntimeRequestTimeout.Duration.String(),
	})
	fmt.Println(string(out))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
