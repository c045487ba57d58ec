// Command maka is an OCI runtime for code that must not be trusted. It speaks
// runc's command line so that containerd, Podman and Kubernetes can drive it
// unchanged. main.go only wires the global flags, logging and the command
// list; each command lives in a file of its own.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/maka-runtime/maka/internal/printable"
	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/libmaka/phase"
	"github.com/maka-runtime/maka/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"
)

// Set at build time by the Makefile (-ldflags -X).
var (
	version   = "0.1.0-dev"
	gitCommit = ""
)

const usage = `an OCI runtime for running untrusted code inside a declared boundary

maka speaks runc's command line: containerd (BinaryName), Podman (--runtime)
and Kubernetes (RuntimeClass) can drive it unchanged.

To start a new instance of a container:

    # maka run [ -b bundle ] <container-id>

Where "<container-id>" is your name for the instance of the container that you
are starting. The name you provide for the container instance must be unique on
your host. Providing the bundle directory using "-b" is optional. The default
value for "bundle" is the current directory.`

func main() {
	// MAKA_PHASES=FILE: the bench's phase table (--debug logs them too).
	phase.Enable(false)
	phase.Mark("process start")
	app := newApp()
	err := app.Run(reorderArgs(app, os.Args))
	phase.End(command)
	if err != nil {
		var st *exitCodeError
		if errors.As(err, &st) {
			if st.err == nil {
				os.Exit(st.code)
			}
			fatalWithCode(st.err, st.code)
		}
		fatal(err)
	}
}

func versionText() string {
	commit := commitOf()
	return fmt.Sprintf("%s\ncommit: %s\nspec: %s", version, commit, specs.Version)
}

func newApp() *cli.App {
	cli.VersionPrinter = func(c *cli.Context) {
		fmt.Fprintf(c.App.Writer, "%s version %s\n", c.App.Name, versionText())
	}
	app := &cli.App{
		Name:                 "maka",
		Usage:                usage,
		Version:              versionText(),
		EnableBashCompletion: true,
		// As runc: `exec --env A=1,2` is one variable, not "A=1" and "2".
		DisableSliceFlagSeparator: true,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "debug", Usage: "enable debug logging"},
			&cli.StringFlag{Name: "log", Usage: "write the log to this file instead of stderr (default: stderr)"},
			&cli.StringFlag{Name: "log-format", Value: "text", Usage: "log format: text or json"},
			&cli.StringFlag{Name: "root", Value: defaultRoot(), Usage: "directory holding the containers' runtime state (must be on tmpfs)"},
			&cli.BoolFlag{Name: "systemd-cgroup", Usage: "use systemd to manage cgroups (not supported by maka: refused when a container would use it)"},
			&cli.StringFlag{Name: "rootless", Value: "auto", Usage: "rootless mode: true, false or auto (rootless when not run as root; see docs/security.md)"},
			&cli.StringFlag{Name: "state-dir", Value: defaultStateDir(), EnvVars: []string{"MAKA_STATE_DIR"}, Usage: "contract store: each container's persisted boundary, owner and stage, and its lock (created 0700; see docs/recovery.md)"},
			&cli.StringFlag{Name: "policy", EnvVars: []string{"MAKA_POLICY"}, Usage: "boundary policy file (default: /etc/maka/policy.json if it exists, else the built-in restricted profile)"},
			&cli.StringFlag{Name: "criu", Hidden: true, Usage: "accepted for runc compatibility; checkpoint/restore is not supported"},
		},
		Before: setupLogging,
		Commands: []*cli.Command{
			boundaryCommand,
			checkCommand,
			completionCommand,
			cpCommand,
			manCommand,
			checkpointCommand,
			createCommand,
			deleteCommand,
			eventsCommand,
			execCommand,
			featuresCommand,
			killCommand,
			listCommand,
			monitorCommand,
			pauseCommand,
			policyCommand,
			psCommand,
			recoverCommand,
			purgeCommand,
			restoreCommand,
			resumeCommand,
			runCommand,
			specCommand,
			startCommand,
			stateCommand,
			updateCommand,
			violationsCommand,
		},
		// Errors are printed by fatal, in the log format the caller chose.
		ExitErrHandler: func(*cli.Context, error) {},
	}
	return app
}

// defaultRoot is /run/maka for root, and $XDG_RUNTIME_DIR/maka otherwise (as runc).
func defaultRoot() string {
	if os.Geteuid() != 0 {
		if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
			return d + "/maka"
		}
	}
	return "/run/maka"
}

// defaultStateDir is /var/lib/maka for root, the user's own data
// directory ($XDG_DATA_HOME/maka, ~/.local/share/maka) otherwise.
func defaultStateDir() string {
	if os.Geteuid() != 0 {
		if d := os.Getenv("XDG_DATA_HOME"); d != "" {
			return d + "/maka"
		}
		if h, err := os.UserHomeDir(); err == nil {
			return h + "/.local/share/maka"
		}
	}
	return libmaka.DefaultStateDir
}

// logToStderr is true when the log goes to stderr; fatal then writes the
// error once instead of once in the log and once on stderr.
var logToStderr = true

func setupLogging(c *cli.Context) error {
	command = c.Args().First()
	if c.Bool("debug") {
		logrus.SetLevel(logrus.DebugLevel)
		phase.Enable(true)
	}
	if path := c.String("log"); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_SYNC, 0o644)
		if err != nil {
			return fmt.Errorf("open log file %s: %w", path, err)
		}
		logrus.SetOutput(f)
		logToStderr = false
	}
	var f logrus.Formatter
	switch strings.ToLower(c.String("log-format")) {
	case "text", "":
		f = &logrus.TextFormatter{DisableColors: true}
	case "json":
		// Nanoseconds: a --debug log is read as a timeline of the start
		// path (docs/dev/performance.md), and clients parse RFC 3339 with
		// or without the fraction.
		f, logJSON = &logrus.JSONFormatter{TimestampFormat: time.RFC3339Nano}, true
	default:
		return fmt.Errorf("--log-format: unknown format %q (want text or json)", c.String("log-format"))
	}
	logrus.SetFormatter(withoutFuncHookNotes{f})
	return nil
}

// logJSON is true when the log is JSON (--log-format json).
var logJSON bool

// withoutFuncHookNotes drops libcontainer's "cannot serialize hook of type
// configs.FuncHook, skipping": maka's own hooks in libcontainer's config
// (the prestart hooks' wrapper, libmaka.PrestartAsCreated) are functions
// that run in this process and are meant to stay out of state.json and
// the init's copy. Every other line passes unchanged.
type withoutFuncHookNotes struct{ logrus.Formatter }

func (w withoutFuncHookNotes) Format(e *logrus.Entry) ([]byte, error) {
	if e.Level == logrus.WarnLevel && strings.HasPrefix(e.Message, "cannot serialize hook of type configs.FuncHook") {
		return nil, nil
	}
	return w.Formatter.Format(e)
}

// command is the command's name, for the phase table.
var command string

// fatal reports err the way runc does (containerd and conmon read the last
// error line of the log), and exits 1.
func fatal(err error) {
	fatalWithCode(err, 1)
}

func fatalWithCode(err error, code int) {
	isJSON := logJSON
	entry := logrus.NewEntry(logrus.StandardLogger())
	text := ""
	var rejected *specconv.RejectedError
	if errors.As(err, &rejected) {
		// The code leads whatever wrapped it, and the JSON log carries
		// the items for machines. The text clients pass on (conmon, the
		// shims) is bounded, whatever was refused.
		err = rejected
		text = rejected.ClientText(specconv.ClientTextMax)
		entry = entry.WithFields(logrus.Fields{"code": specconv.RejectedCode, "items": rejected.Verdict.Items})
	}
	if killed := killedError(err); killed != nil {
		// The monitor destroyed the sandbox: the first violation's record.
		err = killed
		entry = entry.WithFields(logrus.Fields{"code": killed.Code(), "details": killed.Record})
		if ms, ok := killed.EmptyAfterMs(); ok {
			entry = entry.WithField("emptyAfterMs", ms)
		}
	}
	if text == "" {
		text = errorText(err)
	}
	if logToStderr && !isJSON {
		// Plain text on stderr: the message itself, so that it can start
		// with a machine-readable code (BOUNDARY_REJECTED: ...).
		fmt.Fprintln(os.Stderr, text)
	} else {
		entry.Error(text)
		if !logToStderr {
			fmt.Fprintln(os.Stderr, text)
		}
	}
	os.Exit(code)
}

// exitCodeError carries the exit status a command documents (`maka boundary`:
// 1 refused, 2 unusable input). A nil err means the command has printed
// all it had to say and only the status is left.
type exitCodeError struct {
	code int
	err  error
}

func (e *exitCodeError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitCodeError) Unwrap() error { return e.err }

// errorText is err's message as fatal prints it on stderr: the strings a
// sandbox chose are escaped where they enter a message (the violation's
// record), and whatever else would act on a terminal (ESC, C1 controls,
// bidi overrides, bytes that are not UTF-8) is escaped here; its lines are
// kept.
func errorText(err error) string {
	return printable.Text(err.Error())
}
