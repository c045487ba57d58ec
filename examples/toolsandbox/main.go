// Command toolsandbox is the smallest program that uses maka as an agent's
// tool sandbox: it launches a sandbox on a root filesystem, runs one
// untrusted command in it with a deadline and a bounded reply, copies the
// file it wrote out, and tears it down. Run it as root: toolsandbox ROOTFS.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/maka-runtime/maka/libmaka/sandbox"
)

func init() { sandbox.Init() } // the program is also the sandbox's init

func main() {
	m, err := sandbox.Open(sandbox.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	sb, err := m.Launch(ctx, sandbox.Request{ID: "tool-1", Spec: sandbox.DefaultSpec(os.Args[1], sandbox.IdleArgs...)})
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := sb.Destroy(); err != nil {
			log.Print(err)
		}
	}()
	res, err := sb.Exec(ctx, sandbox.Command{Shell: "uname -s > report.txt; echo done", Timeout: 30 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := sb.CopyOut("report.txt", os.Stdout); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("exit %d: %s", res.ExitCode, res.Stdout)
}
