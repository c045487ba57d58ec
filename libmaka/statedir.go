package libmaka

import "path/filepath"

// StateDir is the container's directory under the state root: libcontainer's
// state.json, maka.json, and the monitor's socket, journal and peak usage.
func (c *Container) StateDir() string {
	return filepath.Join(c.rt.Root, c.ID())
}
