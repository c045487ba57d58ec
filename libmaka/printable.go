package libmaka

import "github.com/maka-runtime/maka/internal/printable"

// Printable is s escaped for a terminal or a log line: what a sandbox
// chose (a process name, a path, a syscall's arguments) can hold escape
// sequences, bidi overrides, newlines and bytes that are not UTF-8, which
// would act on the terminal of whoever reads them. Control characters and
// stray bytes become \xNN, C1 controls, bidi and other unprintable runes
// \u{N}, a backslash \\; anything else is kept. maka's own table and error
// output (violations, run's SANDBOX_BOUNDARY_VIOLATION, cp's skipped
// lines) pass every such string through it; its JSON output stays JSON,
// with the runes encoding/json leaves raw (DEL, C1 controls, bidi
// overrides) written as \u escapes.
func Printable(s string) string { return printable.String(s) }
