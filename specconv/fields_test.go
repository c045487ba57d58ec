package specconv

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"
)

// specPaths walks runtime-spec's types and returns every field's JSON path
// (without indexes), stopping below a row that covers its subtree.
func specPaths(t reflect.Type, prefix string, out *[]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := jsonName(f)
		if name == "" {
			specPaths(f.Type, prefix, out)
			continue
		}
		p := join(prefix, name)
		*out = append(*out, p)
		if c, ok := fieldClassIndex[p]; ok && (c.Whole || c.Class != Modelled) {
			continue
		}
		specPaths(f.Type, p, out)
	}
}

// A runtime-spec upgrade that adds a field fails here until the field is
// classified in fieldClasses (and docs/contract.md regenerated).
func TestFieldClassesComplete(t *testing.T) {
	var paths []string
	specPaths(reflect.TypeOf(specs.Spec{}), "", &paths)
	seen := map[string]bool{}
	for _, p := range paths {
		seen[p] = true
		if c := classOf(p); c.Note == "not classified by this version of maka" {
			t.Errorf("%s: not classified: add it to fieldClasses as modelled, refused or ignored", p)
		}
	}
	for _, c := range fieldClasses {
		if !seen[c.Path] {
			t.Errorf("fieldClasses has %s, which runtime-spec's Spec does not (or which a Whole row above covers)", c.Path)
		}
		if c.Class != Modelled && c.Class != Refused && c.Class != Ignored {
			t.Errorf("%s: unknown class %q", c.Path, c.Class)
		}
		if c.Class != Modelled && c.Note == "" {
			t.Errorf("%s: a %s field needs its reason", c.Path, c.Class)
		}
	}
}

func TestRefuseUnmodelled(t *testing.T) {
	one := int64(1)
	s := &specs.Spec{
		Process: &specs.Process{Args: []string{"x"}, CommandLine: "x"},
		Linux: &specs.Linux{
			Resources:  &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &one, Kernel: &one}, Network: &specs.LinuxNetwork{}},
			NetDevices: map[string]specs.LinuxNetDevice{"eth0": {}},
			IntelRdt:   &specs.LinuxIntelRdt{ClosID: "x"},
		},
		Mounts:  []specs.Mount{{Destination: "/a"}, {Destination: "/b", UIDMappings: []specs.LinuxIDMapping{{Size: 1}}}},
		Windows: &specs.Windows{},
	}
	var got []string
	refuseUnmodelled(reflect.ValueOf(s), "", "", func(field, note string) { got = append(got, field) })
	want := []string{"process.commandLine", "mounts[1].uidMappings", "linux.resources.memory.kernel",
		"linux.resources.network", "linux.netDevices", "linux.intelRdt", "windows"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("refused %v, want %v", got, want)
	}
}

// docs/contract.md's table is generated from fieldClasses; MAKA_UPDATE_DOCS=1
// rewrites it.
func TestContractDocCurrent(t *testing.T) {
	const path = "../docs/contract.md"
	const begin, end = "<!-- fields:begin -->\n", "<!-- fields:end -->"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s: no %q ... %q block", path, begin, end)
	}
	var b strings.Builder
	b.WriteString("| field | class | why |\n| --- | --- | --- |\n")
	for _, c := range FieldClasses() {
		p := "`" + c.Path + "`"
		if c.Whole {
			p += " (and below)"
		}
		b.WriteString("| " + p + " | " + c.Class + " | " + strings.ReplaceAll(c.Note, "|", "\\|") + " |\n")
	}
	want := doc[:i+len(begin)] + b.String() + doc[j:]
	if want == doc {
		return
	}
	if os.Getenv("MAKA_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is out of date: run MAKA_UPDATE_DOCS=1 go test ./specconv -run TestContractDocCurrent", path)
}
