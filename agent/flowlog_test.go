package agent

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/pipeline"
)

// TestFlowLogAppendsForTheLiveAgent: the live agent's flow log keeps the
// records of the runs before it, less a partial last line a crash left
// (said on the log), where a replay's starts anew.
func TestFlowLogAppendsForTheLiveAgent(t *testing.T) {
	const before = `{"uid":"C1"}` + "\n" + `{"uid":"C2"` // the second cut short
	for _, live := range []bool{true, false} {
		name := filepath.Join(t.TempDir(), "flows.jsonl")
		if err := os.WriteFile(name, []byte(before), 0o644); err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		var cfg pipeline.Config
		closeLog, err := openFlowLog(name, live, io.Discard, &log, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Sinks) != 1 || cfg.Sinks[0].Name != "connlog" {
			t.Fatalf("sinks %v", cfg.Sinks)
		}
		if err := closeLog(); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(name)
		switch {
		case live && (string(got) != `{"uid":"C1"}`+"\n" || !strings.Contains(log.String(), "partial last line")):
			t.Errorf("live: file %q, log %q", got, log.String())
		case !live && len(got) != 0:
			t.Errorf("replay: file %q, want a new one", got)
		}
	}
}
