//go:build tools

// Package tools pins kwok so `go build` can build it from this module. See tools/build-kwok.sh.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
