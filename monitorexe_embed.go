//go:build monitor_embed

package main

import _ "embed" // the small monitor binary

// Built by `make build` (cmd/maka-monitor) before maka itself.
var (
	//go:embed build/maka-monitor.gz
	embeddedMonitorGzip []byte
	//go:embed build/maka-monitor.sha256
	embeddedMonitorDigest string
)
