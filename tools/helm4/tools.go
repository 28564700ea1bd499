//go:build tools

// Package tools pins Helm 4 so `go build` can build it from this module. See tools/build-helm.sh.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
