// Package specconv turns an OCI bundle's config.json into what libcontainer
// runs. It is pure: it reads no host state beyond the bundle path it is given,
// so it can be unit-tested without root.
package specconv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/opencontainers/runc/libcontainer/configs"
	rspecconv "github.com/opencontainers/runc/libcontainer/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// LoadSpec reads and decodes <bundle>/config.json. A malformed document
// gives an error naming the file and where it broke.
func LoadSpec(bundle string) (*specs.Spec, error) {
	if fi, err := os.Stat(bundle); err != nil {
		return nil, fmt.Errorf("bundle %s: %w", bundle, errors.Unwrap(err))
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("bundle %s: not a directory", bundle)
	}
	path := filepath.Join(bundle, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("bundle %s: config.json not found", bundle)
		}
		return nil, fmt.Errorf("bundle %s: %w", bundle, err)
	}
	return ParseSpec(path, data)
}

// ParseSpec decodes a config.json document; name is used in errors.
func ParseSpec(name string, data []byte) (*specs.Spec, error) {
	var spec specs.Spec
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&spec); err != nil {
		return nil, fmt.Errorf("%s: malformed JSON: %s", name, describeJSONError(data, err))
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: malformed JSON: trailing data after the document", name)
	}
	return &spec, nil
}

// describeJSONError adds the line and column to a decoding error.
func describeJSONError(data []byte, err error) string {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "(document)"
		}
		return fmt.Sprintf("field %s: cannot use a JSON %s as %s (%s)", field, typ.Value, typ.Type, lineCol(data, typ.Offset))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("unexpected end of data, the document is truncated (%s)", lineCol(data, int64(len(data))))
	}
	if off < 0 {
		return err.Error()
	}
	return fmt.Sprintf("%v (%s)", err, lineCol(data, off))
}

func lineCol(data []byte, off int64) string {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}

// Validate checks what libcontainer would otherwise reject late or
// obscurely; each error names the config.json field.
func Validate(spec *specs.Spec) error {
	var errs []string
	add := func(field, format string, args ...any) {
		errs = append(errs, field+": "+fmt.Sprintf(format, args...))
	}
	if spec.Version == "" {
		add("ociVersion", "must be set")
	}
	if spec.Root == nil || spec.Root.Path == "" {
		add("root.path", "must be set")
	}
	if spec.Linux == nil {
		add("linux", "must be set (maka runs Linux containers)")
	}
	if p := spec.Process; p == nil {
		add("process", "must be set")
	} else {
		errs = append(errs, validateProcess("process", p)...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid config.json: %s", strings.Join(errs, "; "))
	}
	return nil
}

func validateProcess(field string, p *specs.Process) []string {
	var errs []string
	if len(p.Args) == 0 && p.CommandLine == "" {
		errs = append(errs, field+".args: must not be empty")
	}
	if p.Cwd == "" {
		errs = append(errs, field+".cwd: must be set")
	} else if !filepath.IsAbs(p.Cwd) {
		errs = append(errs, fmt.Sprintf("%s.cwd: %q is not an absolute path", field, p.Cwd))
	}
	for i, rl := range p.Rlimits {
		if _, ok := rlimitTypes[rl.Type]; !ok {
			errs = append(errs, fmt.Sprintf("%s.rlimits[%d].type: unknown rlimit %q", field, i, rl.Type))
		}
	}
	return errs
}

// Options are the runtime's choices that config.json does not make.
type Options struct {
	ID           string
	NoPivotRoot  bool
	NoNewKeyring bool
}

// Converted is a container configuration ready for libcontainer, plus the
// hooks maka runs itself.
type Converted struct {
	Config    *configs.Config
	Poststart []specs.Hook
}

// ToLibcontainer converts spec. The bundle must be the current directory:
// libcontainer resolves a relative root.path against it.
func ToLibcontainer(spec *specs.Spec, opts Options) (*Converted, error) {
	if err := Validate(spec); err != nil {
		return nil, err
	}
	cfg, err := rspecconv.CreateLibcontainerConfig(&rspecconv.CreateOpts{
		CgroupName:   opts.ID,
		NoPivotRoot:  opts.NoPivotRoot,
		NoNewKeyring: opts.NoNewKeyring,
		Spec:         spec,
	})
	if err != nil {
		return nil, fmt.Errorf("invalid config.json: %w", err)
	}
	out := &Converted{Config: cfg}
	if spec.Hooks != nil && len(spec.Hooks.Poststart) > 0 {
		out.Poststart = spec.Hooks.Poststart
		delete(cfg.Hooks, configs.Poststart)
	}
	return out, nil
}
