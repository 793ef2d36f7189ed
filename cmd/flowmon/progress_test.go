package main

import (
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/internal/testutil/syncbuf"
	"github.com/flowmon/flowmon/pipeline"
)

// lockedBuffer is the buffer the test reads while goroutines write it.
type lockedBuffer = syncbuf.Buffer

// TestProgressBar draws the bar from a replay's published progress and
// clears the line when stopped; a non-terminal gets none.
func TestProgressBar(t *testing.T) {
	var p pipeline.Progress
	p.Packets.Store(123456)
	p.BytesRead.Store(50)
	p.BytesAll.Store(200)
	var w lockedBuffer
	stop := drawProgress(&statusLine{term: &w}, &p)
	time.Sleep(450 * time.Millisecond)
	stop()
	out := w.String()
	if !strings.Contains(out, " 25.0% 123456 packets") || !strings.HasSuffix(out, "\r\033[K") {
		t.Errorf("progress output %q", out)
	}
	if isTerminal(&w) || newStatusLine(&w) != nil {
		t.Error("a buffer is not a terminal")
	}
}

// TestStatusLineClearedForOtherLines: a line written to the terminal
// while the bar is drawn (an alert, a log line) starts at the left margin
// on an erased line, not after the bar; the next draw puts the bar back.
func TestStatusLineClearedForOtherLines(t *testing.T) {
	var term lockedBuffer
	l := &statusLine{term: &term}
	alerts := &lineWriter{l: l, w: &term}
	l.draw("[=====     ]  50.0% 3664022 pkt/s")
	alerts.Write([]byte("2024-01-01T00:00:18Z FIRING PortScan\n"))
	alerts.Write([]byte("2024-01-01T00:00:19Z FIRING PortScan\n"))
	l.draw("[======    ]  60.0% 3664022 pkt/s")
	want := clearLine + "[=====     ]  50.0% 3664022 pkt/s" + clearLine +
		"2024-01-01T00:00:18Z FIRING PortScan\n2024-01-01T00:00:19Z FIRING PortScan\n" +
		clearLine + "[======    ]  60.0% 3664022 pkt/s"
	if got := term.String(); got != want {
		t.Errorf("terminal got %q\nwant %q", got, want)
	}
}
