//go:build tools

// Package tools pins crictl so `go build` can build it from this module.
package tools

import _ "sigs.k8s.io/cri-tools/cmd/crictl"
