// Package testgate is the one switch for tests and benchmarks too long or
// too demanding for the default run (make test, which must stay a few
// minutes on a small machine): FLOWMON_LONG=1 runs them. They are the
// papers' long evaluations, benchmarks of 10M-size structures (hundreds of
// MB, minutes to build), the check of generated traces, and the
// end-to-end tests against real services (make e2e sets FLOWMON_LONG=1
// and selects them with -run E2E).
//
// Quick runs use go test -short instead: tests that take seconds but are
// worth running by default skip under testing.Short().
package testgate

import (
	"os"
	"os/exec"
	"testing"
)

// Env is the variable that runs long tests when set to 1.
const Env = "FLOWMON_LONG"

// LargeSize is the structure size (keys, elements) from which a benchmark
// is long.
const LargeSize = 10_000_000

// Enabled reports whether long tests run, for a test that is quick by
// default and long when asked (more trials).
func Enabled() bool { return os.Getenv(Env) == "1" }

// Long skips tb unless FLOWMON_LONG=1, saying how to run it.
func Long(tb testing.TB) {
	tb.Helper()
	if !Enabled() {
		tb.Skipf("long test: run with %s=1 (make e2e sets it; FLOWMON_LONG=1 make bench BENCH=/10M for benchmarks)", Env)
	}
}

// LongSize skips tb as Long does when n is LargeSize or more.
func LongSize(tb testing.TB, n uint64) {
	tb.Helper()
	if n >= LargeSize {
		Long(tb)
	}
}

// CIEnv is the variable CI sets (CI=true on the common CI services,
// .ci/run sets CI=1): there a tool a test needs must be installed.
const CIEnv = "CI"

// Tool returns the path of the program name, which the test needs.
// Without it the test skips, saying why and what installs it, unless
// CI is set: there scripts/install-deps.sh installs it, and its absence
// fails the test rather than passing it unseen.
func Tool(tb testing.TB, name, install string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if ci := os.Getenv(CIEnv); ci != "" && ci != "0" && ci != "false" {
		tb.Fatalf("%s is not installed, and %s=%s: %s", name, CIEnv, ci, install)
	}
	tb.Skipf("%s is not installed (%s); set %s=1 to fail instead", name, install, CIEnv)
	return ""
}
