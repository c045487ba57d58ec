package specconv

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/libmaka/egress"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// AnnotationEgress declares a sandbox's egress: a JSON list of host:port
// entries (libmaka/egress.ParseEntry) the sandbox may reach through maka's
// proxy, each inside the policy's egress ceiling.
const AnnotationEgress = "org.maka.egress"

// proxyVars are the variables that point programs at the proxy, both
// cases: tools read one or the other.
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy"}

// egressEnv is the environment a sandbox under egress declares: every
// protocol through the proxy (socks5h: names are resolved by the proxy,
// never inside), nothing exempt but loopback.
func egressEnv(proxy string) []string {
	var env []string
	for _, name := range proxyVars {
		val := "http://" + proxy
		switch strings.ToUpper(name) {
		case "ALL_PROXY":
			val = "socks5h://" + proxy
		case "NO_PROXY":
			val = "localhost,127.0.0.1,::1"
		}
		env = append(env, name+"="+val)
	}
	return env
}

// checkEgress reads org.maka.egress: each entry well formed and inside the
// policy's ceiling, the sandbox in a network namespace of its own (there is
// nothing else to put the proxy in), and the proxy's variables declared in
// the environment (a config.json that sets one of them otherwise is
// refused: a tool would go around the proxy, or into nothing).
func (c *checker) checkEgress(have map[specs.LinuxNamespaceType]int) {
	raw, ok := c.spec.Annotations[AnnotationEgress]
	if !ok {
		return
	}
	field := fmt.Sprintf("annotations[%q]", AnnotationEgress)
	var entries []string
	if err := json.Unmarshal([]byte(raw), &entries); err != nil {
		c.reject(field, "", "not a JSON list of host:port strings (e.g. [\"pypi.org:443\"])")
		return
	}
	if len(entries) == 0 {
		c.reject(field, "", "an empty list: leave the annotation out for a closed network")
		return
	}
	if len(entries) > libmaka.MaxEgressEntries {
		c.reject(field, "", "%d entries, more than the %d allowed", len(entries), libmaka.MaxEgressEntries)
		return
	}
	ceiling := c.policy.EgressCeiling()
	list := make([]string, 0, len(entries))
	for i, s := range entries {
		f := fmt.Sprintf("%s[%d]", field, i)
		e, err := egress.ParseEntry(s)
		if err != nil {
			c.reject(f, "", "%v", err)
			continue
		}
		if len(egress.List{e}.Within(ceiling)) > 0 {
			c.reject(f, fmt.Sprintf(`"egress": [..., %q]`, e.String()), "%s is not within the egress allowed by %s", e.String(), c.profile())
			continue
		}
		if !slices.Contains(list, e.String()) {
			list = append(list, e.String())
		}
	}
	if i, ok := have[specs.NetworkNamespace]; !ok || c.spec.Linux.Namespaces[i].Path != "" {
		c.reject("linux.namespaces", "", "egress needs a network namespace of the sandbox's own (add {\"type\": \"network\"} without a path)")
	}
	if !c.policy.AllowsNetwork(libmaka.NetworkClosed) {
		c.reject(field, `"networkModes": [..., "closed"]`, "egress is a closed network with a proxy, and %s does not allow closed", c.profile())
	}
	want := egressEnv(libmaka.EgressProxy)
	env := c.spec.Process.Env
	for i, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(proxyVars, name) && !slices.Contains(want, kv) {
			c.reject(fmt.Sprintf("process.env[%d]", i), "", "%s is set by maka under egress (the proxy is %s): leave it out", name, libmaka.EgressProxy)
		}
	}
	for _, kv := range want {
		if !slices.Contains(env, kv) {
			env = append(env, kv)
		}
	}
	c.spec.Process.Env = env
	c.egress = list
}

// WithEgress returns a copy of spec declaring egress to entries (the
// org.maka.egress annotation), or spec itself when entries is empty. The
// entries are checked when the spec is compiled.
func WithEgress(spec *specs.Spec, entries []string) (*specs.Spec, error) {
	if len(entries) == 0 {
		return spec, nil
	}
	data, err := json.Marshal(entries)
	if err != nil {
		return nil, err
	}
	out := *spec
	out.Annotations = make(map[string]string, len(spec.Annotations)+1)
	for k, v := range spec.Annotations {
		out.Annotations[k] = v
	}
	out.Annotations[AnnotationEgress] = string(data)
	return &out, nil
}
