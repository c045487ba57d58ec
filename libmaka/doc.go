// Package libmaka is maka's embeddable Go API: the container lifecycle on top
// of runc's libcontainer (create, load, state, signal, destroy), the host
// checks maka insists on (cgroup v2 only), and the small records maka keeps
// next to libcontainer's own state.
package libmaka
