package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/record"
)

// TestFlowLogAppendsForTheLiveAgent: the live agent's flow log keeps the
// records of the runs before it, less a partial last line a crash left
// (said on the log), where a replay's starts anew.
func TestFlowLogAppendsForTheLiveAgent(t *testing.T) {
	const before = `{"uid":"C1"}` + "\n" + `{"uid":"C2"` // the second cut short
	rot := config.Default().FlowLogRotation.Options()
	for _, live := range []bool{true, false} {
		name := filepath.Join(t.TempDir(), "flows.jsonl")
		if err := os.WriteFile(name, []byte(before), 0o644); err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		cfg := pipeline.Config{Logger: slog.New(slog.NewTextHandler(&log, nil))}
		o := &rot
		if !live {
			o = nil
		}
		fl, err := openFlowLog(name, o, io.Discard, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Sinks) != 1 || cfg.Sinks[0].Name != "connlog" {
			t.Fatalf("sinks %v", cfg.Sinks)
		}
		if (fl.live != nil) != live {
			t.Errorf("live %v: live log %v", live, fl.live)
		}
		if live {
			if err := fl.live.openAt(nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := fl.close(); err != nil {
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

// TestFlowLogRotates: the live agent's flow log rotates as the config
// says; the files hold every record once, as whole conn.log lines, in
// order, none past the size but the last line's file; and the log's mark
// rewinds it to the records written before it.
func TestFlowLogRotates(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "flows.jsonl")
	c := config.Default()
	c.FlowLog = name
	if err := c.Set("flow-log-rotation.max-size", "64KiB"); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("flow-log-rotation.max-files", "3"); err != nil {
		t.Fatal(err)
	}
	rot := c.FlowLogRotation.Options()
	var cfg pipeline.Config
	fl, err := openFlowLog(c.FlowLog, &rot, io.Discard, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer fl.close()
	if err := fl.live.openAt(nil); err != nil {
		t.Fatal(err)
	}
	sink := cfg.Sinks[0].Sink
	flows := func(from, to int) []record.Flow {
		var fs []record.Flow
		for i := from; i < to; i++ {
			var id [capture.CommunityIDLen]byte
			copy(id[:], fmt.Sprintf("1:%028d", i))
			fs = append(fs, record.Flow{CommunityID: id, Start: int64(i) * 1e9, End: int64(i)*1e9 + 5e8, UID: uint64(i) + 1, Hash: uint64(i),
				Orig: netip.MustParseAddr("192.0.2.1"), Resp: netip.MustParseAddr("198.51.100.7"),
				OrigPort: uint16(1024 + i%60000), RespPort: 443, Proto: 6, Confidence: 1})
		}
		return fs
	}
	// About 300 bytes a line: 1000 records are some 300 KB, four files
	// of 64 KiB and more.
	const n, marked = 1000, 900
	for i := 0; i < marked; i += 100 {
		if err := sink.WriteFlows(flows(i, i+100)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := fl.live.mark()
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.WriteFlows(flows(marked, n)); err != nil {
		t.Fatal(err)
	}
	if err := fl.close(); err != nil {
		t.Fatal(err)
	}
	starts := readFlowLog(t, name, 3, 64<<10)
	if len(starts) == 0 || starts[len(starts)-1] != n-1 {
		t.Fatalf("the files end with record %v, want %d", starts[len(starts)-1:], n-1)
	}
	if _, err := os.Stat(name + ".3"); err != nil {
		t.Errorf("no third rotated file: %v", err)
	}
	if _, err := os.Stat(name + ".4"); err == nil {
		t.Errorf("%s.4 kept, past max-files 3", name)
	}
	// The restart that restores the snapshot holding the mark.
	var log bytes.Buffer
	cfg2 := pipeline.Config{Logger: slog.New(slog.NewTextHandler(&log, nil))}
	fl2, err := openFlowLog(c.FlowLog, &rot, io.Discard, &cfg2)
	if err != nil {
		t.Fatal(err)
	}
	if err := fl2.live.openAt(m); err != nil {
		t.Fatal(err)
	}
	if err := fl2.close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "cut the records written after the restored snapshot") {
		t.Errorf("the rewind is not said: %q", log.String())
	}
	starts = readFlowLog(t, name, 3, 64<<10)
	if starts[len(starts)-1] != marked-1 {
		t.Errorf("after the rewind the log ends with record %d, want %d", starts[len(starts)-1], marked-1)
	}
}

// readFlowLog reads the flow log's files oldest first, checks each is
// whole lines of conn.log within maxSize bytes, and returns the records'
// start seconds, which must run on by one.
func readFlowLog(t *testing.T, name string, files int, maxSize int64) []int {
	t.Helper()
	var starts []int
	for i := files; i >= 0; i-- {
		p := name
		if i > 0 {
			p = fmt.Sprintf("%s.%d", name, i)
		}
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b)) > maxSize || (len(b) > 0 && b[len(b)-1] != '\n') {
			t.Errorf("%s: %d bytes, last %q", p, len(b), b[max(len(b)-1, 0):])
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			var r struct {
				TS float64 `json:"ts"`
			}
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("%s: %q: %v", p, sc.Text(), err)
			}
			if k := len(starts); k > 0 && int(r.TS) != starts[k-1]+1 {
				t.Fatalf("%s: record %v after %d", p, r.TS, starts[k-1])
			}
			starts = append(starts, int(r.TS))
		}
	}
	return starts
}
