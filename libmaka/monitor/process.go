package monitor

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"

	"golang.org/x/sys/unix"
)

// Info is what a detached monitor learns, on its info pipe, once the
// container's init runs. An empty pipe means the create failed.
type Info struct {
	Cgroup  string   `json:"cgroup"`
	InitPid int      `json:"initPid"`
	Tmpfs   []string `json:"tmpfs"`
}

// RunDetached is the whole life of a detached container's monitor process
// (`maka monitor`, or the small maka-monitor binary): it serves the seccomp
// listener from the start, attaches to the cgroup once create sends Info,
// and returns when the container is gone or on SIGTERM/SIGINT (delete).
// It takes ownership of both files.
func RunDetached(cfg Config, listener, info *os.File) error {
	// It lives as long as the container: keep it small.
	debug.SetGCPercent(25)
	debug.SetMemoryLimit(4 << 20)
	ln, err := net.FileListener(listener)
	listener.Close()
	if err != nil {
		info.Close()
		return fmt.Errorf("monitor %s: %w", cfg.ID, err)
	}
	m, err := New(cfg)
	if err != nil {
		ln.Close()
		info.Close()
		return err
	}
	defer m.Close()
	m.Serve(ln.(*net.UnixListener))
	data, _ := io.ReadAll(info)
	info.Close()
	var in Info
	if json.Unmarshal(data, &in) != nil || in.Cgroup == "" {
		return nil // create failed: nothing to watch
	}
	if err := m.Attach(in.Cgroup, in.InitPid, in.Tmpfs); err != nil {
		return err
	}
	TrimMemory()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT)
	select {
	case <-m.Done():
	case <-sigs:
	}
	return nil
}

// TrimMemory gives back what the monitor's start-up touched and its loops
// never touch again: the garbage of the set-up, and the pages of the
// binary's code and data read from the file (clean: the kernel reads them
// again if they are ever needed). The monitor then holds about its own
// working set for the rest of the container's life.
func TrimMemory() {
	debug.FreeOSMemory()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		// Only file-backed mappings (a path) that are not writable.
		if len(f) < 6 || !strings.HasPrefix(f[5], "/") || f[1][1] == 'w' {
			continue
		}
		var start, end uintptr
		if _, err := fmt.Sscanf(f[0], "%x-%x", &start, &end); err != nil || end <= start {
			continue
		}
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, start, end-start, unix.MADV_PAGEOUT)
	}
}
