//go:build tools

// Package tools pins KubeRay's ray-operator so `go build` can build it from this module.
// See tools/build-kuberay.sh.
package tools

import _ "github.com/ray-project/kuberay/ray-operator"
