package pipeline

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen"
)

// cutSource truncates its file to half once it has read after packets,
// as an operator's script might while a replay reads it.
type cutSource struct {
	*capture.Reader
	name  string
	after int
	n     int
}

func (c *cutSource) Next(p *capture.Packet) error {
	if c.n++; c.n == c.after {
		st, err := os.Stat(c.name)
		if err != nil {
			return err
		}
		if err := os.Truncate(c.name, st.Size()/2); err != nil {
			return err
		}
	}
	return c.Reader.Next(p)
}

// TestReplayFileCutWhileRead: a pcap file cut to half its size while a
// replay reads it from its mapping ends the replay with ErrChanged and
// the packets read before, not the process with SIGBUS.
func TestReplayFileCutWhileRead(t *testing.T) {
	name := genTrace(t, gen.Options{Flows: 3000, Seed: 7, Duration: 20 * time.Second})
	st, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() < 8<<20 {
		t.Fatalf("the trace is %d bytes: too small to span several of the reader's windows", st.Size())
	}
	r, err := capture.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	src := &cutSource{Reader: r, name: name, after: 100}
	set := DefaultSettings()
	cfg, err := set.Config()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Run(context.Background(), src, ReplayOptions{Config: cfg})
	if !errors.Is(err, ErrChanged) {
		t.Fatalf("replay of a file cut while read: %v, want ErrChanged", err)
	}
	if s == nil || s.Packets < 100 || s.ReadError == "" {
		t.Fatalf("summary %+v: want the packets before the cut and the error", s)
	}
	t.Logf("%d packets read before the fault: %v", s.Packets, err)
}
