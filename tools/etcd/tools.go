//go:build tools

// Package tools pins etcd so `go build` can build it from this module.
package tools

import _ "go.etcd.io/etcd/server/v3"
