package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/maka-runtime/maka/internal/launch"
	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/libmaka/monitor"
	"github.com/maka-runtime/maka/libmaka/phase"
	"github.com/maka-runtime/maka/specconv"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"
)

// Flags shared by create and run.
var launchFlags = []cli.Flag{
	&cli.StringFlag{Name: "bundle", Aliases: []string{"b"}, Value: "", Usage: "path to the root of the bundle directory (default: the current directory)"},
	&cli.StringFlag{Name: "console-socket", Usage: "path to an AF_UNIX socket which will receive a file descriptor referencing the master end of the console's pseudoterminal"},
	&cli.StringFlag{Name: "pid-file", Usage: "file to write the container's init pid to (written atomically)"},
	&cli.BoolFlag{Name: "no-pivot", Usage: "do not use pivot_root to jail the process inside the rootfs (needed when the rootfs is on a ramdisk)"},
	&cli.BoolFlag{Name: "no-new-keyring", Usage: "do not create a new session keyring for the container"},
	&cli.IntFlag{Name: "preserve-fds", Usage: "pass N additional file descriptors (3..3+N-1, after any LISTEN_FDS) to the container"},
}

type launchMode int

const (
	modeCreate launchMode = iota // create: init waits for `start`
	modeRun                      // run: create + start
)

// launchCommand creates (and for run, starts) the container named by the first
// argument. It returns the exit status to use: 0 for create and detached
// runs, the container's for a foreground run.
func launchCommand(c *cli.Context, mode launchMode, detach bool) (int, error) {
	if err := checkArgs(c, 1, exactArgs); err != nil {
		return 1, err
	}
	id := c.Args().First()
	if err := checkHostSupport(c); err != nil {
		return 1, err
	}
	if mode == modeRun && detach && c.Bool("keep") {
		return 1, errors.New("--keep: only a foreground run removes its container when it exits; a detached one is kept anyway (drop --keep or --detach)")
	}
	rt, err := runtimeOf(c)
	if err != nil {
		return 1, err
	}
	// Paths the caller gave are relative to its cwd; we chdir to the bundle.
	// maka's own state (the never-list no sandbox may bind) is rt's: --root
	// and --state-dir made absolute from the caller's cwd.
	never := launch.NeverPaths(rt.Root, rt.StateDir)
	pidFile, err := absPath(c.String("pid-file"))
	if err != nil {
		return 1, err
	}
	consoleSocket, err := absPath(c.String("console-socket"))
	if err != nil {
		return 1, err
	}
	bundle, err := absPath(c.String("bundle"))
	if err != nil {
		return 1, err
	}
	if bundle == "" {
		if bundle, err = os.Getwd(); err != nil {
			return 1, err
		}
	}
	spec, err := specconv.LoadSpec(bundle)
	if err != nil {
		return 1, err
	}
	if err := os.Chdir(bundle); err != nil {
		return 1, fmt.Errorf("bundle %s: %w", bundle, err)
	}
	// From here on only the boundary is read, never config.json.
	policy, err := loadPolicy(c)
	if err != nil {
		return 1, err
	}
	boundary, policy, err := launch.Compile(spec, policy, id, bundle, never, hostChecks())
	if err != nil {
		return 1, err
	}
	phase.Mark("compile and check")
	process, err := launch.InitProcess(boundary)
	if err != nil {
		return 1, err
	}
	if err := passListenFds(process); err != nil {
		return 1, err
	}
	if err := passFds(process, c.Int("preserve-fds")); err != nil {
		return 1, err
	}
	io, err := setupStdio(process, boundary.Process.Terminal, detach, consoleSocket)
	if err != nil {
		return 1, err
	}
	defer io.close()
	phase.Mark("process and stdio")

	var fwd *signalForwarder
	if !detach {
		if fwd, err = newSignalForwarder(!c.Bool("no-subreaper")); err != nil {
			return 1, err
		}
		defer fwd.stop()
	}
	// Only a detached sandbox's monitor is a process of its own: a
	// foreground run watches in this process and needs no program.
	var monitors []*os.File
	if detach {
		monitors = monitorExecutables(rt.Root)
		phase.Mark("monitor executable")
	}
	s, err := launch.Run(rt, launch.Launch{
		ID:       id,
		Bundle:   bundle,
		Boundary: boundary,
		Policy:   policy,
		Options:  libmaka.LaunchOptions{NoPivot: c.Bool("no-pivot"), NoNewKeyring: c.Bool("no-new-keyring")},
		Command:  c.Command.Name,
		Start:    mode == modeRun,
		// A foreground run is attached: the container dies with it, and
		// `maka recover` reaps it if this process dies first.
		Attached: !detach,
		Monitors: monitors,
		Process:  process,
		Started:  io.afterStart,
		PidFile:  pidFile,
	})
	// A poststart hook that failed has stopped the sandbox (s is still
	// there): it is removed as runc removes it, and run fails with the
	// hook's error.
	var postErr error
	if err != nil && s != nil {
		postErr, err = err, nil
		if detach {
			endForeground(rt, s.Container, false)
			return 1, postErr
		}
	}
	if err != nil {
		return 1, err
	}
	if detach {
		return 0, nil
	}
	status := fwd.forward(s.Pid, io)
	io.close()
	phase.Mark("wait")
	// The monitor records the peak usage before the cgroup goes, and says
	// whether it killed the sandbox.
	werr := s.Finish()
	phase.Mark("monitor finish")
	// Under deny the run went on: say once what was refused on the way
	// (the records outlive the container: maka violations ID).
	if recs, err := monitor.ReadJournal(filepath.Join(s.Container.StateDir(), monitor.JournalFile)); err == nil && werr == nil {
		if sum := denialSummary(recs); sum != "" {
			fmt.Fprintf(os.Stderr, "maka: run %s: %s (maka violations %s)\n", id, sum, id)
		}
	}
	endForeground(rt, s.Container, c.Bool("keep"))
	if postErr != nil {
		return 1, postErr
	}
	return status, werr
}

// endForeground ends a foreground run once its process has exited, under
// the id's lock, unless the container was replaced meanwhile (deleted and
// created again by another command): it removes the container or, with
// keep (run --keep, runc's), leaves it stopped for `maka delete`, its
// record no longer attached to this process so that recover does not reap
// it when maka exits.
func endForeground(rt *libmaka.Runtime, ctr *libmaka.Container, keep bool) {
	op, err := rt.Begin(ctr.ID(), "run")
	if err != nil {
		logrus.Warn(err)
		return
	}
	defer op.End()
	if !op.OwnedBySelf() {
		return
	}
	if keep {
		err = op.Commit(libmaka.StageRunning, false)
	} else {
		// A teardown that fails keeps the record and the lease: this
		// process's end makes it an orphan that recover reaps.
		err = op.Teardown(ctr, nil)
	}
	if err != nil {
		logrus.Warn(err)
	}
}

// passListenFds hands the caller's socket-activation fds to the container, as
// runc does for create and run (not exec): only when LISTEN_PID names this
// process (systemd sets it so; a stale LISTEN_FDS inherited from elsewhere is
// ignored). The container gets fds 3..3+LISTEN_FDS-1, LISTEN_FDS and
// LISTEN_PID=1. Call it before passFds.
func passListenFds(p *libcontainer.Process) error {
	s := os.Getenv("LISTEN_FDS")
	if s == "" || os.Getenv("LISTEN_PID") != strconv.Itoa(os.Getpid()) {
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("LISTEN_FDS: invalid value %q", s)
	}
	if n == 0 {
		return nil
	}
	p.Env = append(p.Env, "LISTEN_FDS="+s, "LISTEN_PID=1")
	for fd := 3; fd < 3+n; fd++ {
		p.ExtraFiles = append(p.ExtraFiles, os.NewFile(uintptr(fd), "listen-fd"+strconv.Itoa(fd)))
	}
	return nil
}

// passFds hands --preserve-fds N to the container: the N fds that follow
// stdio and any fds already in p.ExtraFiles (LISTEN_FDS).
func passFds(p *libcontainer.Process, preserve int) error {
	if preserve < 0 {
		return fmt.Errorf("--preserve-fds: %d is negative", preserve)
	}
	first := 3 + len(p.ExtraFiles)
	for fd := first; fd < first+preserve; fd++ {
		p.ExtraFiles = append(p.ExtraFiles, os.NewFile(uintptr(fd), "fd"+strconv.Itoa(fd)))
	}
	return nil
}
