package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestBashCompletion(t *testing.T) {
	app := newApp()
	var out bytes.Buffer
	if err := writeBashCompletion(&out, app); err != nil {
		t.Fatal(err)
	}
	script := out.String()
	for _, c := range visibleCommands(app) {
		if !strings.Contains(script, "\t"+c.Name) {
			t.Errorf("command %s is not completed", c.Name)
		}
	}
	if !strings.Contains(script, "complete -F _maka maka") || strings.Contains(script, "--criu") {
		t.Error("no complete line, or a hidden flag offered")
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		cmd := exec.Command(bash, "-n")
		cmd.Stdin = strings.NewReader(script)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("bash -n: %v: %s", err, msg)
		}
		// The function completes "maka de" to delete.
		cmd = exec.Command(bash, "-c", script+`
COMP_WORDS=(maka de); COMP_CWORD=1; _maka; echo "${COMPREPLY[*]}"`)
		if got, err := cmd.Output(); err != nil || strings.TrimSpace(string(got)) != "delete" {
			t.Fatalf("completing 'maka de': %q %v", got, err)
		}
	}
}

func TestManPages(t *testing.T) {
	app := newApp()
	dir := t.TempDir()
	if err := writeManPages(dir, app); err != nil {
		t.Fatal(err)
	}
	pages := []string{"maka.8"}
	for _, c := range visibleCommands(app) {
		pages = append(pages, "maka-"+c.Name+".8")
	}
	for _, p := range pages {
		data, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, []byte(".TH MAKA")) || !bytes.Contains(data, []byte("\n.SH NAME\n")) {
			t.Errorf("%s: not a man page", p)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(pages) {
		t.Errorf("%d pages written, want %d", len(entries), len(pages))
	}
	if got := roff(".x\n'y\na\\b"); got != "\\&.x\n\\&'y\na\\eb" {
		t.Errorf("roff = %q", got)
	}
}
