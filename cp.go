package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	units "github.com/docker/go-units"
	"github.com/maka-runtime/maka/libmaka"
	"github.com/urfave/cli/v2"
)

var cpCommand = &cli.Command{
	Name:      "cp",
	Usage:     "copy a file or a directory into or out of a running container",
	ArgsUsage: "SRC ID:PATH | ID:PATH DST",
	Description: `Copies a regular file, or a directory and what it holds, between the host and
the container, as docker cp's basic forms: "maka cp SRC ID:PATH" copies in,
"maka cp ID:PATH DST" copies out. SRC "-" reads a file from stdin; DST "-"
writes a file to stdout. A relative PATH is under /maka/work. A PATH (or DST)
that is an existing directory, or that ends in "/", receives the copy under
the other side's base name; otherwise it is the name of the copy.

A directory is copied as a new directory (its name must not exist yet: maka cp
never merges into nor replaces one) holding its regular files and
directories with their permission bits; symbolic links, FIFOs, sockets,
devices and the files of kernel filesystems in it are skipped, never followed nor opened, and each is reported on
stderr ("cp: skipped PATH: REASON"). A directory copy is capped by --limit
on its files' bytes together, and at 10000 entries and 64 levels of
directories; over a cap, or on any error, it leaves nothing behind.

The container's PATH is resolved inside the container and no symbolic link in
it is ever followed (a link anywhere in PATH fails the copy; a link at the
destination of a copy in is replaced by the file, not written through), so a
program inside cannot redirect a copy to a host file. Copies in go only to the
container's writable mounts (a read-only one is refused) and only where the
container's root may write, as a new file owned by the container's root and
with SRC's permission bits (0644 from stdin).
A device, FIFO or socket named as SRC or PATH is refused, as is a file or a
directory of a kernel filesystem (proc, sysfs, cgroup, debugfs...), on either
side: maka checks what a path is on a descriptor that opens nothing before it
reads or writes it, so /proc/kallsyms or /proc/kmsg in the container is never
read as host root, and a refused copy leaves nothing. Each copy is capped
by --limit (default 8MiB): a larger file fails, leaving nothing behind (with
DST "-", a file that grows past the limit while it is read leaves what was
already written to stdout). The container must not be stopped.

EXAMPLE:
       # maka cp ./input.csv box1:input.csv
       # maka cp box1:/maka/work/report.txt .
       # maka cp ./dataset box1:/maka/work/
       # maka cp box1:/maka/work/results ./results
       # echo hello | maka cp - box1:/tmp/greeting`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "limit", Value: "8MiB", Usage: "largest file copied, or a directory's files together (a size in bytes: 1048576, 512k, 16MiB, 1g)"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 2, exactArgs); err != nil {
			return err
		}
		limit, err := units.RAMInBytes(c.String("limit"))
		if err != nil || limit <= 0 {
			return fmt.Errorf("--limit: %q is not a positive size in bytes (e.g. 1048576, 512k, 16MiB)", c.String("limit"))
		}
		src, dst := c.Args().Get(0), c.Args().Get(1)
		sid, spath, sIn := splitContainerArg(src)
		did, dpath, dIn := splitContainerArg(dst)
		switch {
		case sIn && dIn:
			return fmt.Errorf("cp: %q and %q both name a container; one side must be a host path (or -)", src, dst)
		case !sIn && !dIn:
			return fmt.Errorf("cp: neither %q nor %q is ID:PATH; one side must name the container's file as ID:PATH", src, dst)
		case sIn && spath == "":
			return fmt.Errorf("cp: %q: no path after %q", src, sid+":")
		case dIn && dpath == "":
			return fmt.Errorf("cp: %q: no path after %q", dst, did+":")
		case sIn:
			return copyOutCmd(c, sid, spath, dst, limit)
		default:
			return copyInCmd(c, src, did, dpath, limit)
		}
	},
}

// splitContainerArg reads ID:PATH. A host path that contains ":" is written
// with a "/" or "." before it (./a:b, /x/a:b), as with docker cp.
func splitContainerArg(arg string) (id, p string, ok bool) {
	if arg == "-" || strings.HasPrefix(arg, "/") || strings.HasPrefix(arg, ".") {
		return "", "", false
	}
	id, p, ok = strings.Cut(arg, ":")
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", "", false
	}
	return id, p, true
}

// transferTarget takes the id's lock and reads the container's init (with
// its start time, so a reused pid is refused) and user namespace mappings.
// The caller ends the returned op.
func transferTarget(c *cli.Context, id string) (*libmaka.Op, libmaka.Target, error) {
	rt, err := runtimeOf(c)
	if err != nil {
		return nil, libmaka.Target{}, err
	}
	op, err := rt.Begin(id, c.Command.Name)
	if err != nil {
		return nil, libmaka.Target{}, err
	}
	fail := func(err error) (*libmaka.Op, libmaka.Target, error) {
		op.End()
		return nil, libmaka.Target{}, err
	}
	ctr, err := rt.Load(op.ID)
	if err != nil {
		return fail(err)
	}
	st, err := ctr.State()
	if err != nil {
		return fail(err)
	}
	if st.Status == libmaka.Stopped || st.Pid <= 0 {
		return fail(fmt.Errorf("cannot copy files with a stopped container %s: %w", id, libmaka.ErrNotRunning))
	}
	base, err := ctr.Container.State()
	if err != nil {
		return fail(fmt.Errorf("container %s: %w", id, err))
	}
	return op, libmaka.Target{
		Pid:         st.Pid,
		StartTime:   base.InitProcessStartTime,
		UIDMappings: st.UIDMappings,
		GIDMappings: st.GIDMappings,
	}, nil
}

// copyInCmd: maka cp SRC ID:PATH.
func copyInCmd(c *cli.Context, src, id, dpath string, limit int64) error {
	var r io.Reader = os.Stdin
	mode := fs.FileMode(0o644)
	if src != "-" {
		// Checked on an O_PATH descriptor before it is opened: a FIFO
		// does not block, a device's driver is not called, a proc
		// file is not read.
		f, err := libmaka.OpenHostSource(src)
		if err != nil {
			return fmt.Errorf("cp: source %w", err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("cp: source %w", err)
		}
		if fi.IsDir() {
			return copyDirInCmd(c, src, id, dpath, limit)
		}
		if fi.Size() > limit {
			return fmt.Errorf("cp: source %w", &libmaka.TransferTooLargeError{Path: src, Size: fi.Size(), Limit: limit})
		}
		r, mode = f, fi.Mode().Perm()
	}
	op, t, err := transferTarget(c, id)
	if err != nil {
		return err
	}
	defer op.End()
	if strings.HasSuffix(dpath, "/") || isSandboxDir(t, dpath) {
		if src == "-" {
			return fmt.Errorf("cp: %s:%s is a directory; with SRC - name the file to write", id, dpath)
		}
		dpath = path.Join(dpath, filepath.Base(src))
	}
	if _, err := libmaka.CopyIn(t, dpath, r, mode, limit); err != nil {
		return fmt.Errorf("cp: into container %s: %w", id, err)
	}
	return nil
}

// copyDirInCmd: maka cp DIR ID:PATH.
func copyDirInCmd(c *cli.Context, src, id, dpath string, limit int64) error {
	op, t, err := transferTarget(c, id)
	if err != nil {
		return err
	}
	defer op.End()
	if strings.HasSuffix(dpath, "/") || isSandboxDir(t, dpath) {
		// The absolute path's base: "maka cp . ID:/tmp" names the copy
		// after the current directory, not ".".
		abs, err := filepath.Abs(src)
		if err != nil {
			return fmt.Errorf("cp: source %s: %w", src, err)
		}
		dpath = path.Join(dpath, filepath.Base(abs))
	}
	res, err := libmaka.CopyDirIn(t, src, dpath, limit)
	if err != nil {
		return fmt.Errorf("cp: into container %s: %w", id, err)
	}
	reportSkipped(os.Stderr, res)
	return nil
}

// reportSkipped lists on stderr, one line each, what a directory copy did
// not copy: the copy succeeded, but the user should know what is missing.
// The names are the sandbox's: escaped.
func reportSkipped(w io.Writer, res libmaka.DirResult) {
	for _, s := range res.Skipped {
		fmt.Fprintf(w, "cp: skipped %s: %s\n", libmaka.Printable(s.Path), libmaka.Printable(s.Reason))
	}
}

// isSandboxDir: whether p is a directory in the sandbox (no link followed).
// Only a hint for naming the destination: CopyIn resolves again safely.
func isSandboxDir(t libmaka.Target, p string) bool {
	fi, err := libmaka.Stat(t, p)
	return err == nil && fi.Mode.IsDir()
}

// copyOutCmd: maka cp ID:PATH DST. A host DST is written under a temporary
// name in its directory and renamed into place only once the copy is
// complete: a refused or failed copy leaves nothing.
func copyOutCmd(c *cli.Context, id, spath, dst string, limit int64) error {
	op, t, err := transferTarget(c, id)
	if err != nil {
		return err
	}
	defer op.End()
	// Stat is a hint for choosing the form: each copy resolves the path
	// again, safely, and refuses what is not what it copies.
	if fi, err := libmaka.Stat(t, spath); err == nil && fi.Mode.IsDir() {
		if dst == "-" {
			return fmt.Errorf("cp: from container %s: %s: a directory, which cannot be written to stdout (name a host directory as DST)", id, fi.Path)
		}
		return copyDirOutCmd(t, id, spath, fi.Path, dst, limit)
	}
	if dst == "-" {
		if _, err := libmaka.CopyOut(t, spath, os.Stdout, limit); err != nil {
			return fmt.Errorf("cp: from container %s: %w", id, err)
		}
		return nil
	}
	if st, err := os.Stat(dst); (err == nil && st.IsDir()) || strings.HasSuffix(dst, "/") {
		dst = filepath.Join(dst, path.Base(path.Clean("/"+spath)))
	}
	lazy := &lazyTemp{dst: dst}
	done := false
	defer func() {
		if !done && lazy.f != nil {
			lazy.f.Close()
			os.Remove(lazy.f.Name())
		}
	}()
	fi, err := libmaka.CopyOut(t, spath, lazy, limit)
	if err != nil {
		return fmt.Errorf("cp: from container %s: %w", id, err)
	}
	// An empty file: nothing was written, so nothing was made yet.
	tmp, err := lazy.file()
	if err != nil {
		return fmt.Errorf("cp: %w", err)
	}
	if err := tmp.Chmod(fi.Mode.Perm()); err != nil {
		return fmt.Errorf("cp: destination %s: %w", dst, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("cp: destination %s: %w", dst, err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		var le *os.LinkError
		if errors.As(err, &le) {
			err = le.Err
		}
		return fmt.Errorf("cp: destination %s: %w", dst, err)
	}
	done = true
	return nil
}

// lazyTemp is DST's temporary file (.maka-cp-* in DST's directory),
// created at the first write: a copy refused before any data is read (a
// FIFO, a device, a kernel file, over the limit) leaves nothing behind,
// not even a temporary file, even if maka is killed meanwhile.
type lazyTemp struct {
	dst string
	f   *os.File
}

func (l *lazyTemp) file() (*os.File, error) {
	if l.f == nil {
		f, err := os.CreateTemp(filepath.Dir(l.dst), ".maka-cp-*")
		if err != nil {
			return nil, fmt.Errorf("destination %s: %w", l.dst, err)
		}
		l.f = f
	}
	return l.f, nil
}

func (l *lazyTemp) Write(b []byte) (int, error) {
	f, err := l.file()
	if err != nil {
		return 0, err
	}
	return f.Write(b)
}

// copyDirOutCmd: maka cp ID:DIR DST. abs is DIR's absolute path in the
// container.
func copyDirOutCmd(t libmaka.Target, id, spath, abs, dst string, limit int64) error {
	if st, err := os.Stat(dst); (err == nil && st.IsDir()) || strings.HasSuffix(dst, "/") {
		dst = filepath.Join(dst, path.Base(abs))
	}
	res, err := libmaka.CopyDirOut(t, spath, dst, limit)
	if err != nil {
		return fmt.Errorf("cp: from container %s: %w", id, err)
	}
	reportSkipped(os.Stderr, res)
	return nil
}
