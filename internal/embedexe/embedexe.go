// Package embedexe carries a small static program inside a Go program
// (gzipped, with its digest, embedded by the caller's build), and hands it
// out as a sealed memfd: never as a path someone else could write. maka
// carries two this way: the resident agent of a tool sandbox
// (internal/agentexe) and a detached monitor's guard (internal/guardexe).
package embedexe

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

// maxSize bounds a carried program's decompressed size.
const maxSize = 8 << 20

// Program is one carried program.
type Program struct {
	name       string
	gzip       []byte
	digest     string
	notCarried error
	open       func() (*os.File, error)
}

// New describes the program name, carried as gz with its SHA-256 digest
// (hex, as sha256sum prints it). Open answers notCarried when gz is empty.
func New(name string, gz []byte, digest string, notCarried error) *Program {
	p := &Program{name: name, gzip: gz, digest: strings.TrimSpace(digest), notCarried: notCarried}
	p.open = sync.OnceValues(p.unpack)
	return p
}

// Carried reports whether this program carries p.
func (p *Program) Carried() bool { return len(p.gzip) > 0 }

// Open returns a read-only descriptor of a sealed memfd that holds the
// program, its content checked against the build's digest. The memfd is
// made once per process and shared: the caller must not close it. Its
// seals (no write, grow, shrink or further seal) keep anyone holding it
// from changing the program anyone later runs.
func (p *Program) Open() (*os.File, error) { return p.open() }

func (p *Program) unpack() (*os.File, error) {
	if !p.Carried() || len(p.digest) != sha256.Size*2 {
		return nil, p.notCarried
	}
	zr, err := gzip.NewReader(bytes.NewReader(p.gzip))
	if err != nil {
		return nil, fmt.Errorf("the %s binary: %w", p.name, err)
	}
	prog, err := io.ReadAll(io.LimitReader(zr, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("the %s binary: %w", p.name, err)
	}
	if len(prog) > maxSize {
		return nil, fmt.Errorf("the %s binary: larger than 8 MiB", p.name)
	}
	if sum := sha256.Sum256(prog); hex.EncodeToString(sum[:]) != p.digest {
		return nil, fmt.Errorf("the %s binary does not have the build's digest", p.name)
	}
	return Sealed(p.name, prog)
}

// Sealed writes prog into a memfd named name, seals it and returns a
// read-only descriptor of it; the writable one is closed (exec refuses a
// file that is open for writing).
func Sealed(name string, prog []byte) (*os.File, error) {
	// MFD_EXEC says so where the kernel asks (vm.memfd_noexec); older
	// kernels do not know the flag.
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, fmt.Errorf("the %s memfd: %w", name, err)
	}
	w := os.NewFile(uintptr(fd), name)
	defer w.Close()
	if _, err := w.Write(prog); err != nil {
		return nil, fmt.Errorf("the %s memfd: %w", name, err)
	}
	if err := unix.Fchmod(fd, 0o555); err != nil {
		return nil, fmt.Errorf("the %s memfd: %w", name, err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE); err != nil {
		return nil, fmt.Errorf("the %s memfd: sealing: %w", name, err)
	}
	ro, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", fd), os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("the %s memfd: %w", name, err)
	}
	return ro, nil
}
