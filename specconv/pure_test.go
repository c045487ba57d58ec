package specconv

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// hostPackages are the packages through which Go code reads the host:
// every function of theirs a specconv file calls is a host read, but for
// pureCalls.
var hostPackages = map[string]bool{"os": true, "syscall": true, "golang.org/x/sys/unix": true, "io/ioutil": true}

// pureCalls are the host packages' functions that read nothing.
var pureCalls = map[string]bool{"unix.Major": true, "unix.Minor": true, "unix.Mkdev": true, "unix.ErrnoName": true}

// hostCallsElsewhere are the host reads of packages that are otherwise
// pure (path/filepath: Abs reads the working directory).
var hostCallsElsewhere = map[string]bool{
	"filepath.EvalSymlinks": true, "filepath.Abs": true, "filepath.Glob": true,
	"filepath.Walk": true, "filepath.WalkDir": true,
}

// namedHostCalls are the calls issue 24 item 7 moved out of specconv: the
// scan must flag each (TestScanFlagsTheNamedHostCalls).
var namedHostCalls = []string{
	"os.ReadFile", "os.Open", "os.Stat", "os.Lstat", "syscall.Stat", "unix.Getrlimit",
	"unix.ClockGettime", "filepath.EvalSymlinks", "os.Geteuid",
}

// loadingTheInput are the host reads specconv may make: LoadSpec reads the
// bundle's config.json (the input, not a fact of the host).
var loadingTheInput = []string{
	"specconv.go: LoadSpec: filepath.Abs",
	"specconv.go: LoadSpec: os.ReadFile",
	"specconv.go: LoadSpec: os.Stat",
}

// scanHostCalls lists the host reads in a Go source: "file: function:
// pkg.Func", for calls and for function values (read := os.ReadFile).
// Code outside a function (a package variable's func literal) is in
// function "var".
func scanHostCalls(t *testing.T, name string, file *ast.File) []string {
	t.Helper()
	local := map[string]string{} // the file's name for a package: its path
	for _, imp := range file.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		n := p[strings.LastIndexByte(p, '/')+1:]
		if imp.Name != nil {
			n = imp.Name.Name
		}
		local[n] = p
	}
	var out []string
	check := func(fn string, sel *ast.SelectorExpr, called bool) {
		x, ok := sel.X.(*ast.Ident)
		if !ok {
			return
		}
		path, ok := local[x.Name]
		if !ok {
			return // a variable's field or method
		}
		short := path[strings.LastIndexByte(path, '/')+1:] + "." + sel.Sel.Name
		host := hostCallsElsewhere[short]
		if hostPackages[path] && !pureCalls[short] {
			// A host package's function called, or one of the named
			// calls taken as a value (its constants, variables and
			// types are no reads).
			host = (called && !conversions[sel.Sel.Name]) || slices.Contains(namedHostCalls, short)
		}
		if host {
			out = append(out, fmt.Sprintf("%s: %s: %s", name, fn, short))
		}
	}
	walk := func(fn string, n ast.Node) {
		called := map[*ast.SelectorExpr]bool{}
		ast.Inspect(n, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
					called[sel] = true
				}
			case *ast.SelectorExpr:
				check(fn, n, called[n])
			}
			return true
		})
	}
	for _, decl := range file.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok {
			name := fn.Name.Name
			if fn.Recv != nil && len(fn.Recv.List) > 0 {
				name = receiverName(fn.Recv.List[0].Type) + "." + name
			}
			walk(name, fn)
		} else {
			walk("var", decl)
		}
	}
	return out
}

// conversions are the host packages' types a value may be converted to
// (os.FileMode(m)): a call in syntax, no read.
var conversions = map[string]bool{"FileMode": true, "Signal": true, "Errno": true}

func receiverName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return receiverName(x.X)
	case *ast.IndexExpr:
		return receiverName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}

// Issue 24, item 7: specconv is pure. What its rules compare with on the
// host (maka's own limits and ids, the clocks, the host's accounts, paths
// resolved and stat'ed, a cgroup's processes) is asked of the
// libmaka.Host it is handed; none of its files reads the host itself but
// LoadSpec, which reads its input.
func TestSpecconvReadsNoHost(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, scanHostCalls(t, name, file)...)
	}
	slices.Sort(got)
	got = slices.Compact(got)
	for _, g := range got {
		if !slices.Contains(loadingTheInput, g) {
			t.Errorf("%s reads the host: ask a libmaka.Host (libmaka/host.go) passed in by the caller", g)
		}
	}
	for _, a := range loadingTheInput {
		if !slices.Contains(got, a) {
			t.Errorf("loadingTheInput lists %q, which no longer exists: remove it", a)
		}
	}
}

// The scan flags each of the calls specconv once made, called or taken as
// a value, through any import name, in a function or a package variable,
// and nothing pure.
func TestScanFlagsTheNamedHostCalls(t *testing.T) {
	var src strings.Builder
	src.WriteString("package x\n\nimport (\n\t\"os\"\n\tsys \"syscall\"\n\t\"path/filepath\"\n\t\"golang.org/x/sys/unix\"\n)\n\nfunc f() {\n")
	var want []string
	for _, c := range namedHostCalls {
		src.WriteString("\t" + strings.Replace(c, "syscall.", "sys.", 1) + "()\n")
		want = append(want, "x.go: f: "+c)
	}
	src.WriteString("\t_ = unix.Major(1)\n\t_ = filepath.Join()\n\t_ = os.FileMode(0)\n\t_ = os.ErrNotExist\n\t_ = unix.RLIMIT_STACK\n}\n\nvar g = os.Geteuid\n")
	want = append(want, "x.go: var: os.Geteuid")
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "x.go", src.String(), 0)
	if err != nil {
		t.Fatal(err)
	}
	got := scanHostCalls(t, "x.go", file)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the scan found\n %q\nwant\n %q", got, want)
	}
}
