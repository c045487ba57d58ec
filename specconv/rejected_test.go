package specconv

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/maka-runtime/maka/internal/printable"
)

// Podman's default capabilities: what a default `podman run` asks for.
var podmanCaps = []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
	"CAP_NET_BIND_SERVICE", "CAP_SETFCAP", "CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID", "CAP_SYS_CHROOT"}

// A default container refused by restricted: the first line has the count
// and the reasons, each capability is one line naming its sets, and the
// verdict keeps one item per field.
func TestRejectionGroupsCapabilities(t *testing.T) {
	s := exampleSpec(t)
	s.Process.Capabilities.Bounding = podmanCaps
	s.Process.Capabilities.Effective = podmanCaps
	s.Process.Capabilities.Permitted = podmanCaps
	s.Process.Capabilities.Ambient = nil
	s.Process.Capabilities.Inheritable = nil
	s.Linux.Sysctl = map[string]string{"kernel.panic": "1"}
	_, err := ToBoundary(testHost, s, policy(t, "restricted"))
	items := rejectedItems(t, err)
	if want := 3*len(podmanCaps) + 1; len(items) != want {
		t.Fatalf("%d items, want %d (one per field): %v", len(items), want, items)
	}
	lines := strings.Split(err.Error(), "\n")
	// Items keep the checks' order: the capabilities (checkProcess)
	// before the sysctl (checkLinux).
	want := fmt.Sprintf("BOUNDARY_REJECTED: %d items refused by profile restricted: process.capabilities (%d capabilities), linux.sysctl[\"kernel.panic\"]", len(items), len(podmanCaps))
	if lines[0] != want {
		t.Errorf("first line:\n got %q\nwant %q", lines[0], want)
	}
	if len(lines) != 1+len(podmanCaps)+1 {
		t.Errorf("%d lines, want the first, one per capability and the sysctl's:\n%s", len(lines), err)
	}
	wantLine := `  process.capabilities: CAP_CHOWN (bounding, effective, permitted) is not allowed by profile restricted (policy: "capabilities": [..., "CAP_CHOWN"])`
	if lines[1] != wantLine {
		t.Errorf("capability line:\n got %q\nwant %q", lines[2], wantLine)
	}
	for _, l := range lines[1:] {
		if strings.Contains(l, "process.capabilities.") {
			t.Errorf("a line per capability set: %q", l)
		}
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "  linux.sysctl") {
		t.Errorf("last line %q, want the sysctl's", last)
	}
	// The JSON (maka boundary's verdict.items, the JSON log's items) is
	// unchanged: one item per field, no grouping keys.
	data, err := json.Marshal(items[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := string(data); got != `{"field":"process.capabilities.bounding[0]","message":"CAP_CHOWN is not allowed by profile restricted","allow":"\"capabilities\": [..., \"CAP_CHOWN\"]"}` {
		t.Errorf("item JSON = %s", got)
	}
}

func TestRejectionOfOneCapabilityNamesIt(t *testing.T) {
	s := exampleSpec(t)
	s.Process.Capabilities.Bounding = []string{"CAP_SYS_ADMIN"}
	s.Process.Capabilities.Effective = nil
	s.Process.Capabilities.Permitted = nil
	s.Process.Capabilities.Ambient = nil
	s.Process.Capabilities.Inheritable = nil
	_, err := ToBoundary(testHost, s, policy(t, "baseline"))
	rejectedItems(t, err)
	want := "BOUNDARY_REJECTED: 1 item refused by profile baseline: process.capabilities (CAP_SYS_ADMIN)\n" +
		`  process.capabilities: CAP_SYS_ADMIN (bounding) is not allowed by profile baseline (policy: "capabilities": [..., "CAP_SYS_ADMIN"])`
	if err.Error() != want {
		t.Errorf("got\n%s\nwant\n%s", err, want)
	}
}

// However many and however long the reasons, the first line stays within
// firstLineMax and says how many it left out.
func TestRejectionFirstLineIsBounded(t *testing.T) {
	for _, n := range []int{1, 2, 5, 40, 400} {
		var items []Item
		for i := 0; i < n; i++ {
			items = append(items, Item{Field: fmt.Sprintf("mounts[%d].options[%d]", i, i), Message: "is not allowed"})
		}
		items = append(items, Item{Field: "process.capabilities.ambient[0]", Message: "CAP_KILL is not allowed", Capability: "CAP_KILL", CapSet: "ambient"})
		e := &RejectedError{Verdict: Verdict{Profile: "restricted", Items: items, Source: "the exec'd process"}}
		lines := strings.Split(e.Error(), "\n")
		first := lines[0]
		if len(first) > firstLineMax {
			t.Errorf("%d items: first line has %d bytes: %q", n, len(first), first)
		}
		prefix := fmt.Sprintf("BOUNDARY_REJECTED: the exec'd process: %d items refused by profile restricted: mounts[0].options[0]", n+1)
		if !strings.HasPrefix(first, prefix) {
			t.Errorf("%d items: first line %q, want the prefix %q", n, first, prefix)
		}
		// Every reason is on the first line or counted in "and N more".
		shown := strings.Count(first, "mounts[") + strings.Count(first, "process.capabilities")
		more := 0
		if i := strings.LastIndex(first, ", and "); i >= 0 {
			fmt.Sscanf(first[i:], ", and %d more", &more)
		}
		if shown+more != n+1 {
			t.Errorf("%d items: %d reasons shown and %d more in %q", n, shown, more, first)
		}
		if len(lines) != n+2 {
			t.Errorf("%d items: %d lines", n, len(lines))
		}
	}
}

// A huge field name does not push the first line past its bound.
func TestRejectionFirstLineWithAHugeField(t *testing.T) {
	e := &RejectedError{Verdict: Verdict{Profile: "restricted", Items: []Item{{Field: strings.Repeat("x", 500), Message: "no"}}}}
	first, _, _ := strings.Cut(e.Error(), "\n")
	if first != "BOUNDARY_REJECTED: 1 item refused by profile restricted" {
		t.Errorf("first line %q", first)
	}
}

// What a client passes on (conmon reads up to 8191 bytes of stderr once
// and puts them in a JSON line of its own): whatever was refused, the text
// is bounded, valid UTF-8 with no control character but newlines, starts
// with the code and the count, keeps whole item lines only, and says how
// many were left out and where they all are.
func TestClientTextBounded(t *testing.T) {
	for _, n := range []int{1, 3, 30, 100, 1000} {
		for _, width := range []int{10, 300, 5000} {
			var items []Item
			for i := range n {
				items = append(items, Item{Field: fmt.Sprintf("mounts[%d].source", i),
					Message: fmt.Sprintf("%q is not a path the policy allows: …é \x1b[31m %s", "/bind/ünïcode", strings.Repeat("x", width))})
			}
			items = append(items, Item{Field: "process.capabilities.bounding[0]", Message: "CAP_SYS_ADMIN is not allowed by profile restricted", Capability: "CAP_SYS_ADMIN", CapSet: "bounding"})
			e := &RejectedError{Verdict: Verdict{Profile: "restricted", Items: items}}
			got := e.ClientText(ClientTextMax)
			if len(got) > ClientTextMax {
				t.Errorf("%d items of %d: %d bytes, over %d", n, width, len(got), ClientTextMax)
			}
			if !utf8.ValidString(got) {
				t.Fatalf("%d items of %d: not UTF-8", n, width)
			}
			for i := 0; i < len(got); i++ {
				if got[i] < 0x20 && got[i] != '\n' {
					t.Fatalf("%d items of %d: byte %#x at %d", n, width, got[i], i)
				}
			}
			if !strings.HasPrefix(got, fmt.Sprintf("BOUNDARY_REJECTED: %d items refused by profile restricted: ", n+1)) {
				t.Errorf("%d items of %d: first line %q", n, width, strings.SplitN(got, "\n", 2)[0])
			}
			full := strings.Split(printable.Text(e.Error()), "\n")
			lines := strings.Split(got, "\n")
			kept := len(lines) - 1
			if last := lines[len(lines)-1]; strings.HasPrefix(last, "  ... and ") {
				var left int
				fmt.Sscanf(last, "  ... and %d more", &left)
				kept--
				if kept+left != len(full)-1 || !strings.Contains(last, "maka boundary") {
					t.Errorf("%d items of %d: kept %d, note %q, of %d lines", n, width, kept, last, len(full)-1)
				}
			} else if got != strings.Join(full, "\n") {
				t.Errorf("%d items of %d: not cut, yet not the whole text", n, width)
			}
			for i := 1; i <= kept; i++ {
				if lines[i] != full[i] {
					t.Errorf("%d items of %d: line %d cut: %q", n, width, i, lines[i])
				}
			}
			if n <= 3 && width <= 300 && kept != len(full)-1 {
				t.Errorf("%d short items: cut (%d kept)", n, kept)
			}
		}
	}
}
