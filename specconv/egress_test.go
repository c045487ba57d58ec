package specconv

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runtime-spec/specs-go"
)

const egressPolicy = `{"profile": "restricted", "egress": ["pypi.org:443", "*.pythonhosted.org:443", "192.0.2.0/24:80"]}`

func TestEgressDeclaredWithinTheCeiling(t *testing.T) {
	s, err := WithEgress(sandboxSpec(t), []string{"pypi.org:443", "files.pythonhosted.org:443", "192.0.2.7:80", "PyPI.org:443"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ToBoundary(testHost, s, mustPolicy(t, egressPolicy))
	if err != nil {
		t.Fatal(err)
	}
	want := libmaka.Network{Mode: libmaka.NetworkEgress, Egress: []string{"pypi.org:443", "files.pythonhosted.org:443", "192.0.2.7:80"}, Proxy: "127.0.0.1:3128"}
	if fmt.Sprint(b.Network) != fmt.Sprint(want) {
		t.Errorf("network = %+v, want %+v", b.Network, want)
	}
	for _, kv := range []string{"HTTP_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "ALL_PROXY=socks5h://127.0.0.1:3128", "no_proxy=localhost,127.0.0.1,::1"} {
		if !slices.Contains(b.Process.Env, kv) {
			t.Errorf("env lacks %s: %v", kv, b.Process.Env)
		}
	}
	// The caller's spec is not changed.
	if _, ok := sandboxSpec(t).Annotations[AnnotationEgress]; ok {
		t.Error("WithEgress changed its input")
	}
	// Without the annotation: closed, no proxy variables.
	b, err = ToBoundary(testHost, sandboxSpec(t), mustPolicy(t, egressPolicy))
	if err != nil {
		t.Fatal(err)
	}
	if b.Network.Mode != libmaka.NetworkClosed || slices.ContainsFunc(b.Process.Env, func(kv string) bool { return strings.HasPrefix(kv, "HTTP_PROXY=") }) {
		t.Errorf("without egress: network %+v env %v", b.Network, b.Process.Env)
	}
}

func TestEgressRefusals(t *testing.T) {
	field := `annotations["org.maka.egress"]`
	for _, tc := range []struct {
		name   string
		policy string
		annot  string
		edit   func(*specs.Spec)
		want   []string // field: message fragment, one per item
	}{
		{"restricted allows none", `{"profile": "restricted"}`, `["pypi.org:443"]`, nil,
			[]string{field + "[0]: pypi.org:443 is not within the egress allowed by profile restricted"}},
		{"outside the ceiling", egressPolicy, `["pypi.org:443", "pypi.org:80", "evil.example:443", "pythonhosted.org:443", "192.0.3.1:80"]`, nil,
			[]string{field + "[1]: pypi.org:80 is not within", field + "[2]: evil.example:443 is not within", field + "[3]: pythonhosted.org:443 is not within", field + "[4]: 192.0.3.1:80 is not within"}},
		{"malformed entries", egressPolicy, `["pypi.org", "*:443", "pypi.org:0"]`, nil,
			[]string{field + "[0]: ", field + "[1]: ", field + "[2]: "}},
		{"not a list", egressPolicy, `"pypi.org:443"`, nil, []string{field + ": not a JSON list"}},
		{"empty", egressPolicy, `[]`, nil, []string{field + ": an empty list"}},
		{"too many", egressPolicy, "[" + strings.Repeat(`"pypi.org:443",`, 256) + `"pypi.org:443"]`, nil, []string{field + ": 257 entries"}},
		{"no network namespace", `{"profile": "baseline", "networkModes": ["closed", "host"], "egress": ["pypi.org:443"]}`, `["pypi.org:443"]`,
			func(s *specs.Spec) {
				s.Linux.Namespaces = slices.DeleteFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.NetworkNamespace })
			},
			[]string{"linux.namespaces: egress needs a network namespace of the sandbox's own"}},
		{"a joined network namespace", `{"profile": "baseline", "egress": ["pypi.org:443"]}`, `["pypi.org:443"]`,
			func(s *specs.Spec) {
				for i := range s.Linux.Namespaces {
					if s.Linux.Namespaces[i].Type == specs.NetworkNamespace {
						s.Linux.Namespaces[i].Path = "/var/run/netns/x"
					}
				}
			},
			[]string{"linux.namespaces: egress needs a network namespace of the sandbox's own"}},
		{"a proxy variable of its own", egressPolicy, `["pypi.org:443"]`,
			func(s *specs.Spec) { s.Process.Env = append(s.Process.Env, "https_proxy=http://10.0.0.1:8080") },
			[]string{"process.env[2]: https_proxy is set by maka under egress"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sandboxSpec(t)
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			s.Annotations[AnnotationEgress] = tc.annot
			if tc.edit != nil {
				tc.edit(s)
			}
			_, err := ToBoundary(testHost, s, mustPolicy(t, tc.policy))
			var got []string
			for _, it := range rejectedItems(t, err) {
				if strings.HasPrefix(it.Field, "annotations") || it.Field == "linux.namespaces" || strings.HasPrefix(it.Field, "process.env") {
					got = append(got, it.Field+": "+it.Message)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("items %q, want %d like %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) && !strings.Contains(got[i], w) {
					t.Errorf("item %d = %q, want %q", i, got[i], w)
				}
			}
		})
	}
}

// A proxy variable with maka's own value is accepted (a config.json
// written from a boundary's env).
func TestEgressOwnProxyValuesAccepted(t *testing.T) {
	s, _ := WithEgress(sandboxSpec(t), []string{"pypi.org:443"})
	s.Process.Env = append(s.Process.Env, "HTTP_PROXY=http://127.0.0.1:3128")
	b, err := ToBoundary(testHost, s, mustPolicy(t, egressPolicy))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, kv := range b.Process.Env {
		if strings.HasPrefix(kv, "HTTP_PROXY=") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("HTTP_PROXY %d times: %v", n, b.Process.Env)
	}
}
