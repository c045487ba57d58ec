// Command apibench times maka's Go API for `make bench` (issue 26): what an
// agent framework embedding maka pays per tool call. It prints one sample
// per line, "ROW<TAB>RUNTIME<TAB>VALUE" (µs, or KiB for memory), for
// tests/bench/bench.sh to record.
//
//	apibench round ROOTFS ROOT STATEDIR   cold launch to first reply, a
//	                                      warm pool's claim to first reply,
//	                                      Sandbox.Exec of /bin/true (median of 10)
//	apibench scale ROOTFS ROOT STATEDIR   100 sequential Execs, 20 concurrent
//	                                      on 20 sandboxes, host memory per
//	                                      idle sandbox with 50 idle
//	apibench run BUNDLE ROOT STATEDIR     `maka run BUNDLE` through the API:
//	                                      Launch, Wait (exit 0 wanted),
//	                                      Destroy (row run)
//	apibench par N BUNDLE ROOT STATEDIR   N of those at once, in one process
//	                                      (row parallelN)
//
// round and scale run under the built-in restricted profile; run and par
// under the policy the CLI would take: MAKA_POLICY's file, else
// /etc/maka/policy.json if it exists, else restricted, so that they are
// measured against `maka run` under the same policy.
//
// Everything it launches is destroyed before it exits; a leftover state
// directory is an error.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/libmaka/sandbox"
)

func init() { sandbox.Init() } // the program is also the sandbox's init

const usage = `usage: apibench round|scale ROOTFS ROOT STATEDIR
       apibench run BUNDLE ROOT STATEDIR
       apibench par N BUNDLE ROOT STATEDIR`

func main() {
	args := os.Args[1:]
	n := 1
	if len(args) == 5 && args[0] == "par" {
		var err error
		if n, err = strconv.Atoi(args[1]); err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "apibench: par %q: want a count of at least 1\n%s\n", args[1], usage)
			os.Exit(2)
		}
		args = append(args[:1], args[2:]...)
	}
	if len(args) != 4 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	mode, dir, root, stateDir := args[0], args[1], args[2], args[3]
	opts := sandbox.Options{Root: root, StateDir: stateDir}
	if mode == "run" || mode == "par" {
		// The CLI's choice (maka's --policy flag reads MAKA_POLICY): the
		// rows are ratios to `maka run` under the same policy.
		p, err := libmaka.LoadPolicy(os.Getenv("MAKA_POLICY"))
		if err != nil {
			fail(err)
		}
		opts.Policy = p
	}
	m, err := sandbox.Open(opts)
	if err != nil {
		fail(err)
	}
	// round and scale: dir is a root filesystem, launched idle.
	req := sandbox.Request{Bundle: "/", Spec: sandbox.DefaultSpec(dir, sandbox.IdleArgs...)}
	switch mode {
	case "round":
		err = round(m, req)
	case "scale":
		err = scale(m, req)
	case "run":
		err = runBundle(m, dir)
	case "par":
		err = parBundle(m, dir, n)
	default:
		err = fmt.Errorf("mode %q: want round, scale, run or par\n%s", mode, usage)
	}
	if cerr := m.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = nothingLeft(root)
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "apibench:", err)
	os.Exit(1)
}

func sample(row, rt string, v float64) { fmt.Printf("%s\t%s\t%.0f\n", row, rt, v) }

func us(d time.Duration) float64 { return float64(d.Microseconds()) }

var ctx = context.Background()

// trueCmd is the command every figure runs.
var trueCmd = sandbox.Command{Args: []string{"/bin/true"}, Timeout: time.Minute}

func execTrue(sb *sandbox.Sandbox) error {
	r, err := sb.Exec(ctx, trueCmd)
	if err == nil && r.ExitCode != 0 {
		err = fmt.Errorf("sandbox %s: /bin/true: exit %d", sb.ID(), r.ExitCode)
	}
	return err
}

// round: a cold launch to its first reply; Sandbox.Exec's median; a warm
// pool's claim to its first reply.
func round(m *sandbox.Manager, req sandbox.Request) error {
	t0 := time.Now()
	sb, err := m.Launch(ctx, req)
	if err != nil {
		return err
	}
	if err := execTrue(sb); err != nil {
		return errors.Join(err, sb.Destroy())
	}
	sample("agent-reply", "maka-api", us(time.Since(t0)))
	var times []time.Duration
	for i := 0; i < 10; i++ {
		t := time.Now()
		if err := execTrue(sb); err != nil {
			return errors.Join(err, sb.Destroy())
		}
		times = append(times, time.Since(t))
	}
	slices.Sort(times)
	sample("exec-tool", "maka-api", us(times[len(times)/2]))
	if err := sb.Destroy(); err != nil {
		return err
	}
	// The pool: one ready, claimed by a Launch of the same configuration.
	if err := m.Prewarm(ctx, req, 1); err != nil {
		return err
	}
	t0 = time.Now()
	sb, err = m.Launch(ctx, req)
	if err != nil {
		return err
	}
	err = execTrue(sb)
	sample("agent-reply", "maka-pool", us(time.Since(t0)))
	return errors.Join(err, sb.Destroy())
}

// scale: 100 sequential Execs in one sandbox; 20 concurrent, one in each
// of 20 sandboxes; the host memory an idle sandbox holds, with 50 idle.
func scale(m *sandbox.Manager, req sandbox.Request) error {
	sbs, err := launchN(m, req, 50)
	defer func() {
		for _, sb := range sbs {
			// What a failed Destroy leaves, the bench's leftover check finds.
			_ = sb.Destroy()
		}
	}()
	if err != nil {
		return err
	}
	t0 := time.Now()
	for i := 0; i < 100; i++ {
		if err := execTrue(sbs[0]); err != nil {
			return err
		}
	}
	sample("api-seq100", "maka-api", us(time.Since(t0)))
	t0 = time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = execTrue(sbs[i])
		}(i)
	}
	wg.Wait()
	sample("api-conc20", "maka-api", us(time.Since(t0)))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Memory: settled, the idle sandboxes' own (their cgroups: the agent,
	// its tmpfs, what the kernel charges them) and what this process (their
	// monitors) grew by for them.
	time.Sleep(2 * time.Second)
	var charged int64
	for _, sb := range sbs {
		charged += cgroupMemory(sb.ID())
	}
	rss := rssKiB() - baseRSS
	sample("api-idle", "maka-api", float64(charged/1024+rss)/float64(len(sbs)))
	fmt.Fprintf(os.Stderr, "apibench: %d idle sandboxes: cgroups %d KiB, this process +%d KiB, MemAvailable -%d KiB\n",
		len(sbs), charged/1024, rss, baseAvail-memAvailableKiB())
	return nil
}

// runOnce is `maka run BUNDLE` through the API: the bundle's process runs
// to its end in a new sandbox, which is then removed. An exit other than
// 0 is an error: a failed run is not a figure.
func runOnce(m *sandbox.Manager, bundle string) error {
	sb, err := m.Launch(ctx, sandbox.Request{Bundle: bundle})
	if err != nil {
		return err
	}
	code, err := sb.Wait(ctx)
	if err == nil && code != 0 {
		err = fmt.Errorf("sandbox %s: its process exited %d", sb.ID(), code)
	}
	return errors.Join(err, sb.Destroy())
}

// runBundle: one run, from Launch to the end of Destroy, in a process
// whose Manager is open (an embedder opens it once; the CLI's figure
// includes maka's own start). It is the process's first launch.
func runBundle(m *sandbox.Manager, bundle string) error {
	t0 := time.Now()
	if err := runOnce(m, bundle); err != nil {
		return err
	}
	sample("run", "maka-api", us(time.Since(t0)))
	return nil
}

// parBundle: n runs at once, one goroutine each, until the last is
// removed (the CLI's figure: n `maka run` processes at once).
func parBundle(m *sandbox.Manager, bundle string, n int) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = runOnce(m, bundle)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	sample("parallel"+strconv.Itoa(n), "maka-api", us(time.Since(t0)))
	return nil
}

var baseRSS, baseAvail int64

func launchN(m *sandbox.Manager, req sandbox.Request, n int) ([]*sandbox.Sandbox, error) {
	baseRSS, baseAvail = rssKiB(), memAvailableKiB()
	var sbs []*sandbox.Sandbox
	for i := 0; i < n; i++ {
		sb, err := m.Launch(ctx, req)
		if err != nil {
			return sbs, err
		}
		sbs = append(sbs, sb)
		if err := execTrue(sb); err != nil { // up and answering
			return sbs, err
		}
	}
	return sbs, nil
}

// cgroupMemory is the memory.current of sandbox id's cgroup (maka's
// default cgroup parent), 0 if it is not there.
func cgroupMemory(id string) int64 {
	data, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/maka", id, "memory.current"))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return n
}

func rssKiB() int64 { return fieldKiB("/proc/self/status", "VmRSS:") }

func memAvailableKiB() int64 { return fieldKiB("/proc/meminfo", "MemAvailable:") }

func fieldKiB(path, key string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), key); ok {
			n, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return n
		}
	}
	return 0
}

// nothingLeft: no sandbox's state directory is left under root.
func nothingLeft(root string) error {
	entries, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	var left []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			left = append(left, e.Name())
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("left under %s: %s", root, strings.Join(left, " "))
	}
	return nil
}
