//go:build kubeletcheck

// Command checkconfig loads a KubeletConfiguration file the way the kubelet
// does (its file loader: strict decoding, defaults, relative paths) and
// validates it with the kubelet's own validation, on the host: a mistake in
// tests/kubelet/kubelet.yaml shows here, not after a guest has booted.
// Built by hand in the kubelet's build module (build/kubelet/mod), with
// -tags kubeletcheck: the tag keeps it out of maka's own module (go build
// ./...), which has none of its dependencies.
//
//	checkconfig FILE
package main

import (
	"context"
	"fmt"
	"os"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/kubelet/apis/config/validation"
	"k8s.io/kubernetes/pkg/kubelet/kubeletconfig/configfiles"
	utilfs "k8s.io/kubernetes/pkg/util/filesystem"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: checkconfig FILE")
		os.Exit(2)
	}
	loader, err := configfiles.NewFsLoader(&utilfs.DefaultFs{}, os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "checkconfig:", err)
		os.Exit(1)
	}
	kc, err := loader.Load(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "checkconfig:", err)
		os.Exit(1)
	}
	if err := validation.ValidateKubeletConfiguration(kc, utilfeature.DefaultFeatureGate); err != nil {
		fmt.Fprintln(os.Stderr, "checkconfig: invalid:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: valid (staticPodPath %s, cgroupDriver %s, runtime %s, readOnlyPort %d)\n",
		os.Args[1], kc.StaticPodPath, kc.CgroupDriver, kc.ContainerRuntimeEndpoint, kc.ReadOnlyPort)
}
