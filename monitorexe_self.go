//go:build !monitor_embed

package main

// Without the monitor_embed tag (a plain `go build`), a detached container's
// monitor is maka itself: `maka monitor`.
var (
	embeddedMonitorGzip   []byte
	embeddedMonitorDigest string
)
