package libmaka

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// placeCgroup decides the sandbox's cgroup from the policy and config.json's
// linux.cgroupsPath (Policy.CgroupPath) and points libcontainer's config at
// it. It returns the absolute directory, which must not exist yet: maka
// creates it (makeCgroup), it never joins one.
//
// The Boundary carries the path specconv.Place chose, and ToLibcontainer
// handed libcontainer; it is checked here again against the policy, and
// config is made to agree, so no other path can be joined.
func placeCgroup(id string, config *configs.Config, rec Record) (string, error) {
	// create's record holds the values it compiled: no decode here.
	policy, err := rec.Policy.Get()
	if err != nil || policy == nil {
		return "", errors.New("cgroup: no policy to place the sandbox by")
	}
	b, err := rec.Boundary.Get()
	if err != nil {
		return "", fmt.Errorf("cgroup: %w", err)
	}
	if config.Cgroups == nil {
		return "", errors.New("cgroup: no cgroup configuration")
	}
	requested := requestedCgroup(b, policy, id)
	rel, err := policy.CgroupPath(id, requested)
	if err != nil {
		return "", err
	}
	config.Cgroups.Path, config.Cgroups.Parent, config.Cgroups.Name = rel, "", ""
	config.Cgroups.Systemd = false
	abs, err := cgroupDir(config)
	if err != nil {
		return "", err
	}
	if abs != cgroupRoot+rel {
		return "", fmt.Errorf("cgroup: libcontainer would use %s, not %s", abs, cgroupRoot+rel)
	}
	if _, err := os.Lstat(abs); err == nil {
		return "", existingCgroupError(abs, rel, requested)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("cgroup %s: %w", rel, err)
	}
	return abs, nil
}

// requestedCgroup is the cgroup path config.json asked for ("" for maka's
// own /maka/<id>).
func requestedCgroup(b *Boundary, p *Policy, id string) string {
	if b == nil || b.Cgroup.Path == p.OwnParent()+"/"+id {
		return ""
	}
	return b.Cgroup.Path
}

func cgroupExistsError(rel, requested string) error {
	if requested == "" {
		return fmt.Errorf("cgroup %s already exists: maka creates its sandbox's cgroup itself (linux.cgroupsPath is not set, so the cgroup is %s/<id>: is a container of another --root using this id?)", rel, OwnCgroupParent)
	}
	return fmt.Errorf("linux.cgroupsPath: the cgroup %s already exists: maka creates its sandbox's cgroup itself", rel)
}

// existingCgroupError refuses the existing cgroup abs, and says what is in
// it in runc's words (runc refuses only a cgroup with processes or a frozen
// one; maka refuses any, but a runc user's scripts and runc's own suite look
// for these).
func existingCgroupError(abs, rel, requested string) error {
	err := cgroupExistsError(rel, requested)
	if n := processesBelow(abs); n > 0 {
		return fmt.Errorf("%w; container's cgroup is not empty: %d process(es) found", err, n)
	}
	if f, ferr := os.ReadFile(filepath.Join(abs, "cgroup.freeze")); ferr == nil && strings.TrimSpace(string(f)) == "1" {
		return fmt.Errorf("%w; container's cgroup unexpectedly frozen", err)
	}
	return err
}

// processesBelow counts the processes in cgroup dir and its descendants,
// as runc's GetAllPids does (whose cgroupfs-only reads a test cannot fake).
func processesBelow(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		if data, err := os.ReadFile(path); err == nil {
			n += len(strings.Fields(string(data)))
		}
		return nil
	})
	return n
}

// makeCgroup creates the sandbox's cgroup at path (its parents as needed;
// the cgroup itself must not exist) and publishes its id in the record. If
// it fails, the libcontainer state and the record are removed here, and
// the cgroup only if maka made it: a cgroup that was there already is
// someone else's.
func (op *Op) makeCgroup(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return op.abandon(fmt.Errorf("cgroup %s: %w", path, err))
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			// The record create published holds its values (no decode).
			b, _ := op.Record.Boundary.Get()
			p, _ := op.Record.Policy.Get()
			err = existingCgroupError(path, strings.TrimPrefix(path, cgroupRoot), requestedCgroup(b, p, op.ID))
		}
		return op.abandon(err)
	}
	CrashPoint(op.Command + ":cgroup-made")
	id, err := CgroupID(path)
	if err == nil {
		rec := *op.Record
		rec.CgroupID = id
		if err = op.lock.Publish(&rec); err == nil {
			op.Record = &rec
			return nil
		}
	}
	_ = unix.Rmdir(path) // made a moment ago, still empty
	return op.abandon(fmt.Errorf("cgroup %s: %w", path, err))
}

// abandon removes what a create made before its cgroup (libcontainer's
// state directory, the record) and returns err.
func (op *Op) abandon(err error) error {
	if rerr := os.RemoveAll(filepath.Join(op.rt.Root, op.ID)); rerr != nil {
		return fmt.Errorf("%w (and removing its state: %w)", err, rerr)
	}
	if derr := op.Drop(); derr != nil {
		return fmt.Errorf("%w (and dropping its record: %w)", err, derr)
	}
	return err
}
