package libmaka

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// openFuncs are the calls that open a path (for reading, writing or as a
// directory): the ones a host-side helper could aim at a path someone else
// controls. Stat, Lstat and Readlink open nothing and are not listed.
var openFuncs = map[string]bool{
	"os.Open": true, "os.OpenFile": true, "os.ReadFile": true, "os.ReadDir": true,
	"os.WriteFile": true, "os.Create": true, "os.CreateTemp": true, "os.OpenRoot": true,
	"os.DirFS": true, "os.OpenInRoot": true,
	"unix.Open": true, "unix.Openat": true, "unix.Openat2": true,
	"syscall.Open": true, "syscall.Openat": true,
}

// scanOpens lists every call of openFuncs in the module's Go sources:
// "file: function: call".
func scanOpens(t *testing.T) []string {
	t.Helper()
	var out []string
	walkCalls(t, func(file, fn string, call *ast.CallExpr) {
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return
		}
		if pkg, ok := sel.X.(*ast.Ident); ok && openFuncs[pkg.Name+"."+sel.Sel.Name] {
			out = append(out, fmt.Sprintf("%s: %s: %s.%s", file, fn, pkg.Name, sel.Sel.Name))
		}
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// walkCalls calls f for every call in a function of the module's Go
// sources (not tests, examples or test tools), with the file's path from
// the module's root and the function's name (Type.Method for a method).
func walkCalls(t *testing.T, f func(file, fn string, call *ast.CallExpr)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "tests", "examples", "testdata", "build", "scripts", "docs", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, "../"))
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			name := fn.Name.Name
			if fn.Recv != nil && len(fn.Recv.List) > 0 {
				name = recvName(fn.Recv.List[0].Type) + "." + name
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					f(rel, name, call)
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}

// Why an open outside hostfs.go needs no check: none of these paths is
// one a sandbox, an image or a bundle's author controls, except the last
// group.
const (
	ownState      = "maka's own state (--root, --state-dir, locks, records, journals, history, id leases), in root-owned directories only maka writes"
	monitorCgroup = "the monitors' cgroups (<cgroup root>/maka.monitors), maka's own"
	cgroupFiles   = "cgroupfs files of the sandbox's cgroup, which maka reads and writes by design (cgroup.kill, cgroup.events...)"
	hostFacts     = "the host's own files and the kernel's view of a pid maka tracks (/proc/PID/..., /proc/self, /dev/null, /dev/tty, the host's /etc/passwd, maka's monitor executable)"
	reopened      = "a descriptor maka holds and checked, reopened through /proc/self/fd: the same file, whatever its path names now"
	pathOnly      = "O_PATH only (statfs, a held tmpfs), never opened for reading or writing"
	callersPath   = "a path the caller names (--process, --resources, --log, --policy, a man page directory, cp's host DST)"
	bundleItem1   = "a bundle's path (root.path, the scaffold over it, config.json): issue 24 item 1's descriptor helper, not this one"
)

// otherOpens is every open in the module outside hostfs.go, and why it is
// not of a path someone else controls. A new open fails
// TestHostfsCallers: if its path is one a sandbox, an image or a bundle
// controls, go through hostfs.go (pin, OpenHostSource, OpenRootFile,
// createIn, mkdirIn, openSubdir); otherwise add it here with its reason.
var otherOpens = map[string]string{
	"libmaka/host.go: cgroupProcsIn: os.ReadFile":                  cgroupFiles,
	"libmaka/hostpath.go: NeverOf: os.ReadDir":                     ownState,
	"libmaka/hostpath.go: NeverOf: os.ReadFile":                    ownState,
	"libmaka/hostpath.go: Op.Stage: os.OpenFile":                   ownState,
	"libmaka/hostpath.go: unstage: os.ReadDir":                     ownState,
	"libmaka/hostpath.go: ancestors: unix.Openat":                  bundleItem1,
	"libmaka/hostpath.go: openNamespace: unix.Openat":              bundleItem1,
	"libmaka/hostpath.go: openNoLinks: unix.Openat2":               bundleItem1,
	"libmaka/hostpath.go: OpenBeneath: unix.Openat2":               bundleItem1,
	"libmaka/monitor/guard.go: populatedFd: unix.Openat":           cgroupFiles,
	"libmaka/monitor/moncgroup.go: capCPU: os.WriteFile":           monitorCgroup,
	"libmaka/monitor/moncgroup.go: RemoveCgroupPath: os.WriteFile": monitorCgroup,
	"libmaka/monitor/moncgroup.go: cgroupOfState: os.ReadFile":     ownState,
	"libmaka/monitor/moncgroup.go: makeCgroup: os.OpenFile":        monitorCgroup,
	"libmaka/monitor/moncgroup.go: makeCgroup: os.WriteFile":       monitorCgroup,
	"libmaka/monitor/spawn.go: Spawn: os.WriteFile":                ownState,
	"libmaka/monitor/journal.go: CopyJournal: os.Open":             ownState,
	"libmaka/monitor/journal.go: CopyJournal: os.OpenFile":         ownState,
	"libmaka/monitor/journal.go: OpenJournalLimits: os.OpenFile":   ownState,
	"libmaka/monitor/journal.go: readStats: os.ReadFile":           ownState,
	"libmaka/monitor/journal.go: writeStats: os.WriteFile":         ownState,
	"libmaka/monitor/pidfd.go: readPidFile: os.ReadFile":           ownState,
	"libmaka/monitor/pidfd.go: writePidFile: os.WriteFile":         ownState,
	"libmaka/monitor/pidfd.go: startTime: os.ReadFile":             hostFacts,
	"libmaka/monitor/spawn.go: Spawn: os.OpenFile":                 ownState,
	"libmaka/idpool.go: heldRanges: os.ReadDir":                    ownState,
	"libmaka/idpool.go: lockDir: unix.Open":                        ownState,
	"libmaka/republish.go: Op.rewriteMakaJSON: os.ReadFile":        ownState,
	"libmaka/phase/phase.go: End: os.OpenFile":                     callersPath,
	"libmaka/phase/phase.go: processStart: os.ReadFile":            hostFacts,
	// ownState
	"libmaka/container.go: Runtime.IDs: os.ReadDir":                       ownState,
	"libmaka/container.go: readRecord: os.ReadFile":                       ownState,
	"libmaka/initstatus.go: Op.initOf: os.ReadFile":                       ownState,
	"libmaka/initstatus.go: openFifo: unix.Open":                          ownState,
	"libmaka/hostpath.go: nsTypeOf: unix.Open":                            reopened,
	"libmaka/container.go: writeJSONAtomic: os.WriteFile":                 ownState,
	"libmaka/history.go: Store.History: os.ReadDir":                       ownState,
	"libmaka/history.go: Store.PruneHistory: os.ReadDir":                  ownState,
	"libmaka/history.go: copyFile: os.Open":                               ownState,
	"libmaka/history.go: copyFile: os.OpenFile":                           ownState,
	"libmaka/idpool.go: Op.LeaseIDs: os.OpenFile":                         ownState,
	"libmaka/idpool.go: reclaimLeases: os.ReadDir":                        ownState,
	"libmaka/idpool.go: reclaimLeases: os.ReadFile":                       ownState,
	"libmaka/idpool.go: releaseLease: os.ReadFile":                        ownState,
	"libmaka/monitor/peak.go: writePeak: os.WriteFile":                    ownState,
	"libmaka/monitor/record.go: ReadJournal: os.Open":                     ownState,
	"libmaka/pidfile.go: WritePidFile: os.CreateTemp":                     ownState,
	"libmaka/recover.go: Runtime.removeStaleTemps: os.ReadDir":            ownState,
	"libmaka/rootfs.go: reclaimOrphans: os.ReadDir":                       ownState,
	"libmaka/rootless_exec.go: Container.RootlessExecFilter: os.ReadFile": ownState,
	"internal/launch/bounded.go: acquireExecSlot: os.OpenFile":            ownState,
	"internal/launch/agent.go: cgroupOfPid: os.ReadFile":                  hostFacts,
	"internal/launch/agent.go: placeCommand: os.WriteFile":                cgroupFiles,
	"internal/embedexe/embedexe.go: Sealed: os.OpenFile":                  hostFacts,
	"libmaka/monitor/guard.go: guardCommand: os.Open":                     hostFacts,
	"libmaka/monitor/spawn.go: Main: os.WriteFile":                        hostFacts,
	"exec.go: execAgent: os.OpenFile":                                     hostFacts,
	"internal/launch/owner.go: Purge: os.ReadDir":                         ownState,
	"internal/launch/owner.go: Purge: os.ReadFile":                        ownState,
	"internal/launch/owner.go: LockOwner: os.OpenFile":                    ownState,
	"internal/launch/owner.go: OwnerLock.Read: os.ReadFile":               ownState,
	"internal/launch/owner.go: OwnerLock.Write: os.WriteFile":             ownState,
	"libmaka/store.go: OpenStore: os.ReadFile":                            ownState,
	"libmaka/store.go: Store.Busy: os.OpenFile":                           ownState,
	"libmaka/store.go: Store.Get: os.ReadFile":                            ownState,
	"libmaka/store.go: Store.IDs: os.ReadDir":                             ownState,
	"libmaka/store.go: Store.Lock: os.OpenFile":                           ownState,
	"libmaka/store.go: syncDir: os.Open":                                  ownState,
	"libmaka/store.go: writeFileAtomicAs: os.OpenFile":                    ownState,
	"libmaka/store.go: writeRootFile: os.CreateTemp":                      ownState,
	"violations.go: followJournal: os.Open":                               ownState,
	// cgroupFiles
	"libmaka/cgroupid.go: hasChildCgroup: os.Open":                cgroupFiles,
	"libmaka/cgroupid.go: killAt: unix.Openat":                    cgroupFiles,
	"libmaka/cgroupid.go: openOwnedCgroup: unix.Open":             cgroupFiles,
	"libmaka/cgroupid.go: readAt: unix.Openat":                    cgroupFiles,
	"libmaka/cgroupmake.go: existingCgroupError: os.ReadFile":     cgroupFiles,
	"libmaka/cgroupmake.go: processesBelow: os.ReadFile":          cgroupFiles,
	"libmaka/monitor/cgroup.go: eventCount: os.ReadFile":          cgroupFiles,
	"libmaka/monitor/cgroup.go: readInt: os.ReadFile":             cgroupFiles,
	"libmaka/monitor/kill.go: Monitor.Warm: os.WriteFile":         cgroupFiles,
	"libmaka/monitor/kill.go: killAt: unix.Openat":                cgroupFiles,
	"libmaka/monitor/monitor.go: Monitor.Attach: unix.Open":       cgroupFiles,
	"libmaka/monitor/monitor.go: Monitor.violation: os.WriteFile": cgroupFiles,
	"internal/launch/bounded.go: killCgroup: os.ReadFile":         cgroupFiles,
	"internal/launch/bounded.go: killCgroup: os.WriteFile":        cgroupFiles,
	// hostFacts
	"libmaka/hostcheck.go: CheckCgroupV2: os.ReadFile":                hostFacts,
	"libmaka/hostcheck.go: CheckHostSupport: os.ReadFile":             hostFacts,
	"libmaka/hostcheck.go: CheckHostSupport: unix.Openat2":            hostFacts,
	"libmaka/hostcheck.go: ownCgroupDir: os.ReadFile":                 hostFacts,
	"libmaka/monitor/audit.go: readMem: os.Open":                      hostFacts,
	"libmaka/monitor/audit.go: readString: os.Open":                   hostFacts,
	"libmaka/monitor/notify.go: cgroupOf: os.ReadFile":                hostFacts,
	"libmaka/monitor/notify.go: procInfo: os.ReadFile":                hostFacts,
	"libmaka/monitor/process.go: fileMappings: os.ReadFile":           hostFacts,
	"libmaka/recover.go: ownCgroup: os.Open":                          hostFacts,
	"libmaka/rootfs.go: readMountinfo: os.ReadFile":                   hostFacts,
	"libmaka/rootless.go: CheckRootless: os.ReadFile":                 hostFacts,
	"libmaka/rootless.go: firstRange: os.Open":                        hostFacts,
	"libmaka/rootless.go: ownCgroupRel: os.ReadFile":                  hostFacts,
	"libmaka/rootless.go: readTrimmed: os.ReadFile":                   hostFacts,
	"internal/launch/bounded.go: stdinOf: os.Open":                    hostFacts,
	"libmaka/sandbox/manager.go: Manager.launch: os.OpenFile":         hostFacts,
	"internal/launch/relaunch.go: Relaunch: os.OpenFile":              hostFacts,
	"libmaka/transfer.go: openRoot: unix.Open":                        hostFacts,
	"libmaka/transfer.go: procStartTime: os.ReadFile":                 hostFacts,
	"monitorexe.go: monitorExecutable: os.CreateTemp":                 hostFacts,
	"monitorexe.go: trustedMonitor: os.OpenFile":                      hostFacts,
	"monitorexe.go: readStamp: os.OpenFile":                           hostFacts,
	"monitorexe.go: trustedMonitor: os.CreateTemp":                    hostFacts,
	"libmaka/sandbox/manager.go: Manager.RecoverAndRelaunch: os.Open": callersPath,
	"libmaka/host.go: readIDUses: os.Open":                            hostFacts,
	"libmaka/host.go: readInt: os.ReadFile":                           hostFacts,
	"libmaka/host.go: kernelHasSELinux: os.ReadFile":                  hostFacts,
	"tty.go: hostConsole: os.Open":                                    hostFacts,
	// pathOnly
	"libmaka/monitor/audit.go: readOnlyTarget: unix.Open":    pathOnly,
	"libmaka/monitor/audit.go: readOnlyTarget: unix.Openat2": pathOnly,
	"libmaka/monitor/tmpfs.go: holdTmpfs: unix.Open":         pathOnly,
	"libmaka/monitor/tmpfs.go: holdTmpfs: unix.Openat2":      pathOnly,
	// callersPath
	"completion.go: writeManPages: os.WriteFile": callersPath,
	"cp.go: lazyTemp.file: os.CreateTemp":        callersPath,
	"exec.go: execSpec: os.ReadFile":             callersPath,
	"libmaka/policy.go: LoadPolicy: os.ReadFile": callersPath,
	"main.go: setupLogging: os.OpenFile":         callersPath,
	"update.go: updateResources: os.ReadFile":    callersPath,
	// bundleItem1
	"libmaka/rootfs.go: MissingMountpoints: os.Open":         bundleItem1,
	"libmaka/rootfs.go: MissingMountpoints: unix.Openat2":    bundleItem1,
	"libmaka/rootfs.go: scaffolder.allHidden: os.ReadDir":    bundleItem1,
	"libmaka/rootfs.go: Op.BuildRoot: unix.Open":             ownState,
	"libmaka/rootfs.go: Op.stageScaffold: unix.Open":         ownState,
	"libmaka/overlayroot.go: Op.BuildOverlayRoot: unix.Open": ownState,
	"libmaka/overlayroot.go: mkdirBeneath: unix.Openat":      bundleItem1,
	"libmaka/overlayroot.go: mkdirBeneath: unix.Openat2":     bundleItem1,
	"libmaka/rootfs.go: scaffolder.build: os.OpenFile":       bundleItem1,
	"libmaka/rootfs.go: scaffolder.build: os.ReadDir":        bundleItem1,
	"libmaka/rootfs.go: scaffolder.entry: os.OpenFile":       bundleItem1,
	"libmaka/rootfs.go: scaffolder.entry: os.ReadDir":        bundleItem1,
	"specconv/specconv.go: LoadSpec: os.ReadFile":            bundleItem1,
}

// hostfsCallers are the callers of the helper's entry points: every
// host-side open of a sandbox's, an image's or a bundle's path (cp in
// both directions, Stat, the directory walks, the HOME lookup).
var hostfsCallers = []string{
	"cp.go: copyInCmd: OpenHostSource",
	"internal/launch/home.go: userHome: OpenRootFile",
	"libmaka/transfer.go: copyInAt: createIn",
	"libmaka/transfer.go: copyOutAt: pin",
	"libmaka/transfer.go: openWritableParent: pin",
	"libmaka/transfer.go: statAt: pin",
	"libmaka/transfer_dir.go: copyDirInAt: pin",
	"libmaka/transfer_dir.go: copyDirOutAt: pin",
	"libmaka/transfer_dir.go: hostParent: pin",
	"libmaka/transfer_dir.go: hostSink.create: createIn",
	"libmaka/transfer_dir.go: hostSink.mkdir: mkdirIn",
	"libmaka/transfer_dir.go: removeTree: openSubdir",
	"libmaka/transfer_dir.go: sandboxSink.create: createIn",
	"libmaka/transfer_dir.go: sandboxSink.mkdir: mkdirIn",
	"libmaka/transfer_dir.go: treeCopy.entry: pin",
}

// hostfsEntries are the helper's entry points.
var hostfsEntries = map[string]bool{
	"pin": true, "OpenHostSource": true, "OpenRootFile": true,
	"createIn": true, "mkdirIn": true, "openSubdir": true,
}

// scanHostfsCallers lists the calls of hostfsEntries outside hostfs.go:
// "file: function: entry".
func scanHostfsCallers(t *testing.T) []string {
	t.Helper()
	var out []string
	walkCalls(t, func(file, fn string, call *ast.CallExpr) {
		name := ""
		switch f := call.Fun.(type) {
		case *ast.Ident:
			if file == "libmaka/"+filepath.Base(file) {
				name = f.Name
			}
		case *ast.SelectorExpr:
			if pkg, ok := f.X.(*ast.Ident); ok && pkg.Name == "libmaka" {
				name = f.Sel.Name
			}
		}
		if hostfsEntries[name] && file != "libmaka/hostfs.go" {
			out = append(out, fmt.Sprintf("%s: %s: %s", file, fn, name))
		}
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// Issue 24, item 3: every host-side open of a path a sandbox, an image or
// a bundle controls goes through hostfs.go. The module's other opens are
// listed with their reason, so that a new one cannot bypass the helper
// unnoticed, and the helper's callers are listed, so that none reverts to
// a direct open.
func TestHostfsCallers(t *testing.T) {
	for _, o := range scanOpens(t) {
		if strings.HasPrefix(o, "libmaka/hostfs.go: ") {
			continue
		}
		if _, ok := otherOpens[o]; !ok {
			t.Errorf("new open %q: a path a sandbox, an image or a bundle controls goes through libmaka/hostfs.go; anything else is added to otherOpens (hostfs_callers_test.go) with its reason", o)
		}
	}
	seen := map[string]bool{}
	for _, o := range scanOpens(t) {
		seen[o] = true
	}
	for o := range otherOpens {
		if !seen[o] {
			t.Errorf("otherOpens lists %q, which no longer exists: remove it", o)
		}
	}
	if got := scanHostfsCallers(t); !slices.Equal(got, hostfsCallers) {
		t.Errorf("the helper's callers changed:\n got  %q\n want %q\n(update hostfsCallers if a caller moved; a caller that now opens directly is a defect)", got, hostfsCallers)
	}
}
