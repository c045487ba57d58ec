package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// reorderArgs moves a command's flags written after its arguments to the
// front, as runc's CLI (urfave/cli v1) does: `maka update ID --memory 1M`
// and `maka delete ID --force` mean what runc users expect, and runc's own
// integration suite relies on it. Only the command's own flags move, each
// with its value; nothing after "--" moves. exec and ps keep their
// arguments as they are (runc's SkipArgReorder): what follows the id there
// is the process's command line.
func reorderArgs(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	i := 1
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "--" {
		if takesValue(app.Flags, args[i]) {
			i++
		}
		i++
	}
	if i >= len(args) {
		return args
	}
	cmd := app.Command(args[i])
	if cmd == nil || len(cmd.Subcommands) > 0 || cmd.Name == "exec" || cmd.Name == "ps" {
		return args
	}
	rest := args[i+1:]
	var flags, others []string
	valueNext := false
	for j, a := range rest {
		switch {
		case valueNext:
			flags = append(flags, a)
			valueNext = false
		case a == "--":
			others = append(others, rest[j:]...)
			return join(args[:i+1], flags, others)
		case isFlag(cmd.Flags, a):
			flags = append(flags, a)
			valueNext = takesValue(cmd.Flags, a)
		default:
			others = append(others, a)
		}
	}
	return join(args[:i+1], flags, others)
}

func join(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// lookupFlag finds the flag an argument ("-f", "--force", "--memory=1M")
// names among flags.
func lookupFlag(flags []cli.Flag, arg string) (cli.Flag, bool) {
	if !strings.HasPrefix(arg, "-") || arg == "-" {
		return nil, false
	}
	name := strings.TrimLeft(arg, "-")
	name, _, hasValue := strings.Cut(name, "=")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f, hasValue
			}
		}
	}
	return nil, false
}

func isFlag(flags []cli.Flag, arg string) bool {
	f, _ := lookupFlag(flags, arg)
	return f != nil
}

// takesValue reports whether arg is a flag whose value is the next
// argument (not a boolean, not written --flag=value).
func takesValue(flags []cli.Flag, arg string) bool {
	f, inline := lookupFlag(flags, arg)
	if f == nil || inline {
		return false
	}
	_, isBool := f.(*cli.BoolFlag)
	return !isBool
}
