package libmaka

import (
	"strings"
	"testing"
)

// goWords are what a reader of a policy file must never meet: Go's types
// and names, which the file does not contain.
var goWords = []string{"Go ", "struct", "libmaka.", "[]string", "[]", "policyFile", "limitsFile", "idPoolFile",
	"PathRule", "IDRange", "int64", "uint32", "float64", "*string", "*bool", "map[", "json: "}

// Every wrongly typed value, wherever it is in the document, is reported
// with its key (the path from the top of the document), in JSON's words.
func TestPolicyErrorsNeverNameGoTypes(t *testing.T) {
	for doc, key := range map[string]string{
		// wrong types at the top level
		`{"profile": 5}`:             "profile",
		`{"profile": ["baseline"]}`:  "profile",
		`{"capabilities": {}}`:       "capabilities",
		`{"bindPaths": "/srv"}`:      "bindPaths",
		`{"networkModes": "closed"}`: "networkModes",
		`{"devices": true}`:          "devices",
		`{"sysctls": 1}`:             "sysctls",
		`{"hooks": 1}`:               "hooks",
		`{"writableRootfs": "true"}`: "writableRootfs",
		`{"cgroupParents": "/maka"}`: "cgroupParents",
		`{"oomScoreAdjMin": "-500"}`: "oomScoreAdjMin",
		`{"oomScoreAdjMin": 1.5}`:    "oomScoreAdjMin",
		`{"userNamespace": true}`:    "userNamespace",
		`{"idPool": 1}`:              "idPool",
		`{"delegatedIDs": {}}`:       "delegatedIDs",
		`{"defaultLimits": "small"}`: "defaultLimits",
		`{"maxLimits": [1]}`:         "maxLimits",
		`{"onViolation": 0}`:         "onViolation",
		`{"audit": false}`:           "audit",
		// nested limits and pools
		`{"maxLimits": {"memory": "8g"}}`:      "maxLimits.memory",
		`{"maxLimits": {"memory": true}}`:      "maxLimits.memory",
		`{"defaultLimits": {"cpus": "2"}}`:     "defaultLimits.cpus",
		`{"defaultLimits": {"timeout": 1e40}}`: "defaultLimits.timeout",
		`{"maxLimits": {"tmpfsSize": {}}}`:     "maxLimits.tmpfsSize",
		`{"maxLimits": {"swap": [0]}}`:         "maxLimits.swap",
		`{"idPool": {"start": -1}}`:            "idPool.start",
		`{"idPool": {"size": "65536"}}`:        "idPool.size",
		`{"idPool": {"count": 5000000000}}`:    "idPool.count",
		`{"delegatedIDs": [{"start": "1"}]}`:   "delegatedIDs.start",
		`{"delegatedIDs": [1]}`:                "delegatedIDs",
		// arrays of the wrong types
		`{"capabilities": [1]}`:                             "capabilities",
		`{"capabilities": [["CAP_KILL"]]}`:                  "capabilities",
		`{"networkModes": [null, true]}`:                    "networkModes",
		`{"devices": [{"path": "/dev/kvm"}]}`:               "devices",
		`{"sysctls": [1.5]}`:                                "sysctls",
		`{"cgroupParents": [false]}`:                        "cgroupParents",
		`{"bindPaths": ["/srv"]}`:                           "bindPaths",
		`{"bindPaths": [{"path": 1, "mode": "ro"}]}`:        "bindPaths.path",
		`{"bindPaths": [{"path": "/srv", "mode": ["ro"]}]}`: "bindPaths.mode",
		// not an object at all
		`["restricted"]`: "policy",
		`"restricted"`:   "policy",
		`42`:             "policy",
		`true`:           "policy",
	} {
		_, err := ParsePolicy([]byte(doc))
		if err == nil {
			t.Errorf("ParsePolicy(%s): no error", doc)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, key+": ") {
			t.Errorf("ParsePolicy(%s): %q does not start with the key %q", doc, msg, key)
		}
		for _, w := range goWords {
			if strings.Contains(msg, w) {
				t.Errorf("ParsePolicy(%s): %q names Go's %q", doc, msg, w)
			}
		}
	}
}

// Malformed documents: said in JSON's terms, with where it went wrong.
func TestPolicySyntaxErrorsNeverNameGoTypes(t *testing.T) {
	for doc, want := range map[string]string{
		`{"profile": "baseline"} x`:              "unexpected data after the policy object",
		`{"profile": "baseline"}]`:               "unexpected data after the policy object",
		`{"profile": "baseline"} {"a": 1}`:       "a second JSON document",
		`{"profile": "baseline"} []`:             "a second JSON document",
		`{"profile": "baseline",}`:               "malformed JSON",
		`{"profile" "baseline"}`:                 "malformed JSON",
		`{"maxLimits": {"memory": 1}`:            "malformed JSON",
		`null`:                                   "policy: expected an object, got null",
		`{"profile": "baseline", "profile2": 1}`: `unknown key "profile2"`,
		`{"idPool": {"start": 1, "blocks": 2}}`:  `unknown key "blocks"`,
		`{"profile": "strict"}`:                  "strict",
	} {
		_, err := ParsePolicy([]byte(doc))
		if err == nil {
			t.Errorf("ParsePolicy(%s): no error", doc)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, want) {
			t.Errorf("ParsePolicy(%s): %q, want one containing %q", doc, msg, want)
		}
		for _, w := range goWords {
			if strings.Contains(msg, w) {
				t.Errorf("ParsePolicy(%s): %q names Go's %q", doc, msg, w)
			}
		}
	}
}
