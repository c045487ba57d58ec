package libmaka

import (
	"strings"
	"testing"
)

func TestOnViolationDefaultsAndParsing(t *testing.T) {
	for profile, want := range map[string]string{ProfileRestricted: "kill", ProfileBaseline: "deny"} {
		p, err := ParsePolicy([]byte(`{"profile": "` + profile + `"}`))
		if err != nil || p.OnViolation != want {
			t.Errorf("%s: onViolation %q (%v), want %q", profile, p.OnViolation, err, want)
		}
	}
	p, err := ParsePolicy([]byte(`{"profile": "restricted", "onViolation": "deny", "audit": "files"}`))
	if err != nil || p.OnViolation != "deny" || p.Audit != "files" {
		t.Fatalf("restricted widened to deny + audit: %+v, %v", p, err)
	}
	for _, doc := range []string{`{"onViolation": "ignore"}`, `{"onViolation": ""}`, `{"audit": "all"}`} {
		if _, err := ParsePolicy([]byte(doc)); err == nil || !strings.Contains(err.Error(), strings.Split(doc[2:], `"`)[0]) {
			t.Errorf("%s: %v, want an error naming the field", doc, err)
		}
	}
}
