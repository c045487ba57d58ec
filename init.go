package main

import "github.com/maka-runtime/maka/libmaka/sandbox"

// libcontainer re-executes this binary as "maka init" inside the new
// namespaces; that process must never reach the CLI.
func init() { sandbox.Init() }
