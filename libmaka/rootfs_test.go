package libmaka

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckMountpoints(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"proc", "tmp", "maka/work"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A symlink that escapes the root resolves inside it, where the target is missing.
	if err := os.Symlink("/etc", filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := CheckMountpoints(root, []string{"/proc", "/tmp/", "/maka/work", "/"}, nil); err != nil {
		t.Fatalf("existing mount points refused: %v", err)
	}
	err := CheckMountpoints(root, []string{"/proc", "/run", "/escape/passwd"}, []string{"mounts[0]", "mounts[1]", "mounts[2]"})
	if err == nil || !strings.Contains(err.Error(), "mounts[1]: /run does not exist") || !strings.Contains(err.Error(), "mounts[2]: /escape/passwd") {
		t.Fatalf("err = %v", err)
	}
	if _, statErr := os.Stat(filepath.Join(root, "run")); statErr == nil {
		t.Fatal("the check created a mount point")
	}
}
