package libmaka

import (
	"errors"
	"strings"
	"testing"
)

func TestHostUnfit(t *testing.T) {
	checks := []HostCheck{
		{Name: "kernel", OK: true, Required: true},
		{Name: "cgroup v2", OK: false, Required: true, Detail: "no cgroup.kill"},
		{Name: "user namespaces", OK: false, Detail: "user.max_user_namespaces is 0"},
		{Name: "idmapped mounts", OK: false, Detail: "mount_setattr is missing"},
	}
	err := HostUnfit(checks, false)
	if !errors.Is(err, ErrHostUnfit) || !strings.HasSuffix(err.Error(), "(see maka check):\n  cgroup v2: no cgroup.kill") {
		t.Fatalf("err = %v", err)
	}
	// A sandbox with a user namespace needs them; idmapped mounts are never required.
	err = HostUnfit(checks, true)
	if err == nil || !strings.HasSuffix(err.Error(), "\n  cgroup v2: no cgroup.kill\n  user namespaces: user.max_user_namespaces is 0") {
		t.Fatalf("err = %v", err)
	}
	checks[1].OK = true
	if err := HostUnfit(checks, false); err != nil {
		t.Fatalf("only optional pieces missing: %v", err)
	}
}

// The checks are the ones maka check documents, in its order, each with
// something to say.
func TestCheckHostSupport(t *testing.T) {
	var names []string
	for _, c := range CheckHostSupport() {
		if c.Detail == "" {
			t.Errorf("%s: no detail", c.Name)
		}
		names = append(names, c.Name)
	}
	want := "kernel,cgroup v2,seccomp user notification,openat2,pidfd,user namespaces,idmapped mounts"
	if got := strings.Join(names, ","); got != want {
		t.Fatalf("checks %s, want %s", got, want)
	}
}
