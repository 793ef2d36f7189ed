package pipeline

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/flowmon/flowmon/internal/testutil/sharedpcaps"
	"github.com/flowmon/flowmon/record/connlog"
)

// TestTunnelSettingsReachTheDecoder replays a VXLAN capture with the
// default settings and with VXLAN's ports set to none: the first has the
// inner HTTP connection's record, the second the carrying UDP flow's alone.
func TestTunnelSettingsReachTheDecoder(t *testing.T) {
	path := filepath.Join(sharedpcaps.Dir(t), "zeek", "tunnels", "vxlan-encapsulated-http.pcap")
	records := func(s Settings) []connlog.Record {
		s.Workers, s.Capacity, s.MaxFlows = 1, 4096, 4096
		cfg, err := s.Config()
		if err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		cfg.Sinks = connLog(&log)
		if _, err := Replay(context.Background(), []string{path}, ReplayOptions{Config: cfg}); err != nil {
			t.Fatal(err)
		}
		return readJSONLines[connlog.Record](t, log.Bytes())
	}
	has := func(recs []connlog.Record, proto string, port uint16) bool {
		for _, r := range recs {
			if r.Proto == proto && r.RespP == port {
				return true
			}
		}
		return false
	}
	on := records(DefaultSettings())
	if !has(on, "tcp", 80) {
		t.Errorf("defaults: want the inner HTTP connection, got %+v", on)
	}
	s := DefaultSettings()
	s.VXLANPorts = "none"
	off := records(s)
	if has(off, "tcp", 80) || !has(off, "udp", 4789) {
		t.Errorf("vxlan-ports none: want the UDP flow alone, got %+v", off)
	}
}
