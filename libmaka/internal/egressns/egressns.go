// Package egressns links in the constructor that makes a sandbox's egress
// listener inside its network namespace (egressns.c). A program that
// launches sandboxes under egress (maka, or one embedding libmaka) gets it
// by importing libmaka, which imports this package; libmaka.EgressListen
// re-executes the program with Env set.
package egressns

// #cgo CFLAGS: -Wall -Werror
import "C"

// Env is the variable that makes the program the listener's helper: "PORT"
// or "PORT:user" (join the init's user namespace first).
const Env = "_MAKA_EGRESS_LISTEN"

// Inherited descriptors: the init's pidfd and the socket the listener is
// sent on.
const (
	PidfdFd = 3
	SendFd  = 4
)

// ExitFailed is the helper's exit status when it could not make the
// listener (its stderr says why).
const ExitFailed = 3
