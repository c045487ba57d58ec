// Package agentexe carries maka-agent (cmd/maka-agent), the resident agent
// of a tool sandbox, inside the program that launches sandboxes, as maka
// carries maka-monitor: gzipped, with its digest, embedded when the program
// is built with the agent_embed tag (`make build` and the test fixtures
// are). The agent is exec'd by libcontainer's init inside the sandbox's
// root, so it must be a static program of its own: maka hands it over as a
// sealed memfd, never as a path in a root the sandbox could write or the
// image could lack.
package agentexe

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrNotCarried is Open's answer in a program built without the agent.
var ErrNotCarried = errors.New("this program does not carry maka's agent (build it with `make`, or with the agent_embed tag after `make agent`)")

// maxSize bounds the agent's decompressed size (it is ~0.7 MB).
const maxSize = 8 << 20

// Carried reports whether this program carries the agent.
func Carried() bool { return len(embeddedGzip) > 0 }

// Open returns a read-only descriptor of a sealed memfd that holds the
// agent, its content checked against the build's digest. The memfd is made
// once per process and shared: the caller must not close it. Its seals
// (no write, grow, shrink or further seal) keep anyone holding it, a
// sandbox's process that reached it included, from changing the program
// any later sandbox runs.
func Open() (*os.File, error) { return open() }

var open = sync.OnceValues(func() (*os.File, error) {
	digest := strings.TrimSpace(embeddedDigest)
	if !Carried() || len(digest) != sha256.Size*2 {
		return nil, ErrNotCarried
	}
	zr, err := gzip.NewReader(bytes.NewReader(embeddedGzip))
	if err != nil {
		return nil, fmt.Errorf("the agent's binary: %w", err)
	}
	prog, err := io.ReadAll(io.LimitReader(zr, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("the agent's binary: %w", err)
	}
	if len(prog) > maxSize {
		return nil, errors.New("the agent's binary: larger than 8 MiB")
	}
	if sum := sha256.Sum256(prog); hex.EncodeToString(sum[:]) != digest {
		return nil, errors.New("the agent's binary does not have the build's digest")
	}
	return sealed(prog)
})

// sealed writes prog into a memfd, seals it and returns a read-only
// descriptor of it; the writable one is closed (exec refuses a file that
// is open for writing).
func sealed(prog []byte) (*os.File, error) {
	// MFD_EXEC says so where the kernel asks (vm.memfd_noexec); older
	// kernels do not know the flag.
	fd, err := unix.MemfdCreate("maka-agent", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		fd, err = unix.MemfdCreate("maka-agent", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, fmt.Errorf("the agent's memfd: %w", err)
	}
	w := os.NewFile(uintptr(fd), "maka-agent")
	defer w.Close()
	if _, err := w.Write(prog); err != nil {
		return nil, fmt.Errorf("the agent's memfd: %w", err)
	}
	if err := unix.Fchmod(fd, 0o555); err != nil {
		return nil, fmt.Errorf("the agent's memfd: %w", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE); err != nil {
		return nil, fmt.Errorf("the agent's memfd: sealing: %w", err)
	}
	ro, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", fd), os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("the agent's memfd: %w", err)
	}
	return ro, nil
}
