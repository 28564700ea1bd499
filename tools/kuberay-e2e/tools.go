//go:build tools

// Package tools pins what KubeRay's e2e suites import from their module (test/support, which imports
// gomega, testify, client-go and gateway-api; controllers/ray for the RayJob suite's
// DefaultSubmitterFinishedTimeout; pkg/features), so go.sum covers `go test -c` of the suites, which
// `go mod tidy` cannot see from here. See tools/build-kuberay-e2e.sh.
package tools

import (
	_ "github.com/ray-project/kuberay/ray-operator/controllers/ray"
	_ "github.com/ray-project/kuberay/ray-operator/pkg/features"
	_ "github.com/ray-project/kuberay/ray-operator/test/support"
)
