package libmaka

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/maka-runtime/maka/libmaka/monitor"
)

// failClosedReason decides, from what the state directory and record say,
// whether a sandbox with processes is killed: its detached monitor dead,
// or its timeout passed while no monitor can be verified. A live monitor
// enforces everything itself; a foreground run's monitor lives in its
// owner (orphanReason covers a dead owner).
func TestFailClosedReason(t *testing.T) {
	now := time.Unix(10000, 0)
	rec := func(attached bool, stage Stage, timeout int64, age time.Duration) *ContainerRecord {
		return &ContainerRecord{ID: "b", Attached: attached, Stage: stage, Created: now.Add(-age),
			Boundary: Hold(&Boundary{Limits: Limits{Timeout: timeout}})}
	}
	for _, tc := range []struct {
		name string
		rec  *ContainerRecord
		mon  monitor.MonitorState
		want string // a substring of the reason, "" for none
		kind string
	}{
		{"alive", rec(false, StageRunning, 5, time.Hour), monitor.MonitorAlive, "", ""},
		{"dead", rec(false, StageRunning, 0, time.Second), monitor.MonitorDead, "monitor", MonitorLost},
		{"dead, created", rec(false, StageCreated, 0, time.Second), monitor.MonitorDead, "monitor", MonitorLost},
		{"dead, mid-start", rec(false, StageStarting, 0, time.Second), monitor.MonitorDead, "", ""},
		{"dead, attached", rec(true, StageRunning, 0, time.Second), monitor.MonitorDead, "", ""},
		{"unverifiable, within its timeout", rec(false, StageRunning, 60, time.Second), monitor.MonitorUnknown, "", ""},
		{"unverifiable, past its timeout", rec(false, StageRunning, 60, time.Hour), monitor.MonitorUnknown, "timeout of 60 s", monitor.LimitTimeout},
		{"none, past its timeout", rec(false, StageRunning, 60, time.Hour), monitor.MonitorNone, "timeout of 60 s", monitor.LimitTimeout},
		{"none, no timeout", rec(false, StageRunning, 0, time.Hour), monitor.MonitorNone, "", ""},
	} {
		reason, kind := failClosedReason(tc.rec, tc.mon, now)
		if (tc.want == "") != (reason == "") || !strings.Contains(reason, tc.want) || kind != tc.kind {
			t.Errorf("%s: reason %q (%s), want %q (%s)", tc.name, reason, kind, tc.want, tc.kind)
		}
	}
}

// A record whose boundary cannot be read fails closed with its own reason
// when no monitor is verified, and never when the monitor is alive.
func TestFailClosedUnreadableBoundary(t *testing.T) {
	var b Lazy[Boundary]
	if err := json.Unmarshal([]byte(`{"limits":"x"}`), &b); err != nil {
		t.Fatal(err)
	}
	rec := &ContainerRecord{ID: "b", Stage: StageRunning, Created: time.Unix(0, 0), Boundary: b}
	reason, kind := failClosedReason(rec, monitor.MonitorUnknown, time.Unix(10, 0))
	if !strings.Contains(reason, "cannot be read") || kind != MonitorLost || strings.Contains(reason, "timeout of") {
		t.Errorf("unverified monitor: %q (%s)", reason, kind)
	}
	if reason, _ := failClosedReason(rec, monitor.MonitorAlive, time.Unix(10, 0)); reason != "" {
		t.Errorf("a live monitor: %q", reason)
	}
}
