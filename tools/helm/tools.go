//go:build tools

// Package tools pins Helm so `go build` can build it from this module. See tools/build-helm.sh.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
