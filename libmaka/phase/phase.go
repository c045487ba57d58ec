// Package phase times the steps of one maka command, for the phase table
// of `make bench` and for --debug: each Mark ends a phase that began at
// the previous Mark (the first at the process's start, as the kernel
// recorded it), and End writes them with the whole.
//
// It is off unless asked for, and then costs a clock read per Mark: with
// MAKA_PHASES=FILE, End appends one JSON line to FILE
// ({"command","phases":[{"name","ms"}...],"totalMs"}); with --debug each
// phase is logged at debug level.
package phase

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// Env names the file End appends to.
const Env = "MAKA_PHASES"

// Phase is one step and how long it took.
type Phase struct {
	Name string  `json:"name"`
	Ms   float64 `json:"ms"`
}

// Line is what End writes: one command's phases and its whole time, from
// the process's start to End.
type Line struct {
	Command string  `json:"command"`
	Phases  []Phase `json:"phases"`
	TotalMs float64 `json:"totalMs"`
}

var (
	mu     sync.Mutex
	on     bool
	logged bool
	start  time.Duration // CLOCK_BOOTTIME at the process's start
	last   time.Duration
	phases []Phase
)

// Enable turns timing on if MAKA_PHASES is set or debug is: call it first
// thing (the first phase, "process start", ends at the first Mark).
func Enable(debug bool) {
	mu.Lock()
	defer mu.Unlock()
	if on || (os.Getenv(Env) == "" && !debug) {
		return
	}
	on, logged = true, debug
	start = processStart()
	last = start
}

// Mark ends the current phase, naming it.
func Mark(name string) {
	mu.Lock()
	defer mu.Unlock()
	if !on {
		return
	}
	now := boottime()
	phases = append(phases, Phase{Name: name, Ms: ms(now - last)})
	last = now
}

// End ends the last phase as "end" if time passed since the last Mark,
// and writes the line (errors are logged: timing never fails a command).
func End(command string) {
	mu.Lock()
	defer mu.Unlock()
	if !on {
		return
	}
	on = false
	now := boottime()
	if d := ms(now - last); d >= 0.05 {
		phases = append(phases, Phase{Name: "end", Ms: d})
	}
	l := Line{Command: command, Phases: phases, TotalMs: ms(now - start)}
	if logged {
		for _, p := range l.Phases {
			logrus.Debugf("phase %s: %.1f ms", p.Name, p.Ms)
		}
		logrus.Debugf("phase total (%s): %.1f ms", command, l.TotalMs)
	}
	path := os.Getenv(Env)
	if path == "" {
		return
	}
	data, err := json.Marshal(l)
	if err != nil {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|unix.O_NOFOLLOW, 0o600)
	if err == nil {
		// One write of one line: concurrent commands append whole lines.
		_, err = f.Write(append(data, '\n'))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		logrus.Warnf("%s: %v", Env, err)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func boottime() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// processStart is when the kernel started this process (field 22 of
// /proc/self/stat, in clock ticks since boot: USER_HZ, 100 on Linux, so
// 10 ms granularity). Unreadable: now, so that the first phase is 0.
func processStart() time.Duration {
	data, err := os.ReadFile("/proc/self/stat")
	if err == nil {
		s := string(data)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			f := strings.Fields(s[i+1:])
			// f[0] is field 3 (state): starttime, field 22, is f[19].
			if len(f) > 19 {
				if t, err := strconv.ParseUint(f[19], 10, 64); err == nil {
					return time.Duration(t) * (time.Second / 100)
				}
			}
		}
	}
	return boottime()
}
