package launch

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// A tmpfs at a mount point the root lacks gets tmpfs's default mode
// (1777), as under runc, not the 0755 of the directory maka makes; a
// mount point the root has keeps its own mode (libcontainer copies it),
// and a mode config.json gives is kept.
func TestPlanRootTmpfsModeAtMissingMountpoint(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := &libmaka.Boundary{
		Rootfs: libmaka.Rootfs{Path: root, Readonly: true},
		Mounts: []specs.Mount{
			{Destination: "/scratch/a", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid"}},
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs"},
			{Destination: "/run", Type: "tmpfs", Source: "tmpfs", Options: []string{"mode=0700"}},
		},
	}
	if err := PlanRoot(b, &libmaka.Policy{Profile: libmaka.ProfileBaseline}); err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]string{{"nosuid", "mode=1777"}, nil, {"mode=0700"}} {
		if got := b.Mounts[i].Options; !slices.Equal(got, want) {
			t.Errorf("%s: options %q, want %q", b.Mounts[i].Destination, got, want)
		}
	}
}
