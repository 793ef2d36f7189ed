package main

import (
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/internal/syncbuf"
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
	stop := drawProgress(&w, &p)
	time.Sleep(450 * time.Millisecond)
	stop()
	out := w.String()
	if !strings.Contains(out, " 25.0% 123456 packets") || !strings.HasSuffix(out, "\r\033[K") {
		t.Errorf("progress output %q", out)
	}
	if isTerminal(&w) {
		t.Error("a buffer is not a terminal")
	}
}
