package libmaka

import (
	"fmt"
	"strings"
)

// BindOwner is what ties a bind source to the container being created: the id
// maka was given (Podman, CRI-O and containerd pass their own container
// id) and what the engine's annotations say of its pod. baseline trusts the
// engine that writes config.json, so its annotations are trusted too; the
// placeholders of a bindPaths rule ({id}, {sandbox-id}, {pod-uid}) stand
// for these values, so a rule allows this container's own directory and no
// other container's or pod's.
type BindOwner struct {
	// ID is the container's id; "" while it is not known (`maka
	// boundary` without one): {id} then stands for any one name, and
	// specconv.Place checks again once it is.
	ID string
	// SandboxID is the pod sandbox's container id: containerd's CRI
	// plugin (io.kubernetes.cri.sandbox-id) or CRI-O
	// (io.kubernetes.cri-o.SandboxID). For the sandbox itself, its own id.
	SandboxID string
	// PodUID is the pod's uid as the kubelet names its directory
	// /var/lib/kubelet/pods/<uid> (io.kubernetes.cri.sandbox-uid, or
	// io.kubernetes.pod.uid).
	PodUID string
}

// The annotations engines set, each engine's own name first.
var (
	sandboxIDAnnotations = []string{"io.kubernetes.cri.sandbox-id", "io.kubernetes.cri-o.SandboxID"}
	podUIDAnnotations    = []string{"io.kubernetes.cri.sandbox-uid", "io.kubernetes.pod.uid"}
)

// BindOwnerOf is the owner of container id with config.json's annotations. A
// value that is not a single plain name (a slash, "..") is ignored: it
// could name no directory of this container's.
func BindOwnerOf(id string, annotations map[string]string) BindOwner {
	first := func(keys []string) string {
		for _, k := range keys {
			if v := annotations[k]; v != "" {
				if !plainName(v) {
					return ""
				}
				return v
			}
		}
		return ""
	}
	o := BindOwner{SandboxID: first(sandboxIDAnnotations), PodUID: first(podUIDAnnotations)}
	switch {
	case plainName(id):
		o.ID = id
	case id != "":
		// Known but not a plain name: {id} must match nothing (an
		// empty ID would stand for any name). No path component is "/".
		o.ID = "/"
	}
	return o
}

// plainName: one path component of 1 to 255 characters, a letter or digit
// first, then letters, digits and "_.+-" (so never "." or ".."). A loop,
// not a regular expression: `{0,254}` compiled at package init cost every
// start of maka (its init included) 24 ms in the test guest, 3358
// allocations (GODEBUG=inittrace=1).
func plainName(s string) bool {
	if len(s) == 0 || len(s) > 255 || !alnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '_' && c != '.' && c != '+' && c != '-' {
			return false
		}
	}
	return true
}

func alnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// placeholders are the names a bindPaths rule's component may hold.
var placeholders = []string{"{id}", "{sandbox-id}", "{pod-uid}"}

// checkPlaceholders: a placeholder is a whole component, and a known one.
func checkPlaceholders(rule string) error {
	for _, c := range strings.Split(rule, "/") {
		if !strings.ContainsAny(c, "{}") {
			continue
		}
		known := false
		for _, p := range placeholders {
			known = known || c == p
		}
		if !known {
			return fmt.Errorf("%q: a placeholder is a whole path component, one of %s", c, strings.Join(placeholders, ", "))
		}
	}
	return nil
}

// matches reports whether hostPath is rule (with o's values for its
// placeholders) or lies below it.
func (o BindOwner) matches(rule, hostPath string) bool {
	if !strings.Contains(rule, "{") {
		return hostPath == rule || isBelow(hostPath, rule)
	}
	rc := strings.Split(strings.TrimSuffix(rule, "/"), "/")
	hc := strings.Split(hostPath, "/")
	if len(hc) < len(rc) {
		return false
	}
	for i, c := range rc {
		var want string
		switch c {
		case "{id}":
			if o.ID == "" {
				if !plainName(hc[i]) {
					return false
				}
				continue
			}
			want = o.ID
		case "{sandbox-id}":
			want = o.SandboxID
		case "{pod-uid}":
			want = o.PodUID
		default:
			if hc[i] != c {
				return false
			}
			continue
		}
		if want == "" || hc[i] != want {
			return false
		}
	}
	return true
}

// engineBindPaths are baseline's bindPaths: where each engine keeps one
// container's or one pod's files, and only that container's or pod's.
var engineBindPaths = []PathRule{
	// Podman and CRI-O (containers/storage): a container's userdata
	// (hosts, hostname, resolv.conf, .containerenv, shm, secrets), and
	// under CRI-O its pod sandbox's (the pod's hostname, resolv.conf, shm).
	{Path: "/run/containers/storage/overlay-containers/{id}", Mode: "rw"},
	{Path: "/var/lib/containers/storage/overlay-containers/{id}", Mode: "rw"},
	{Path: "/run/containers/storage/overlay-containers/{sandbox-id}", Mode: "rw"},
	{Path: "/var/lib/containers/storage/overlay-containers/{sandbox-id}", Mode: "rw"},
	// containerd's CRI plugin: the pod sandbox's hosts, hostname,
	// resolv.conf (/var/lib) and shm (/run); a container's image volumes.
	{Path: "/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/{sandbox-id}", Mode: "rw"},
	{Path: "/run/containerd/io.containerd.grpc.v1.cri/sandboxes/{sandbox-id}", Mode: "rw"},
	{Path: "/var/lib/containerd/io.containerd.grpc.v1.cri/containers/{id}", Mode: "rw"},
	// The kubelet: the pod's volumes, etc-hosts, termination logs.
	{Path: "/var/lib/kubelet/pods/{pod-uid}", Mode: "rw"},
}
