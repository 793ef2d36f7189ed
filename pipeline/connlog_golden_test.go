package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/record/connlog"
)

// TestConnLogGolden replays the bundled traces (pcaps/README.md) with one
// and two workers and compares the conn.log lines, byte for byte, with
// the golden files under testdata/connlog, written by the flow log's
// encoding/json encoder before record/connlog replaced it: the records,
// their order and their bytes must not change. The lines have since
// gained community_id, which the golden files lack: it is cut from each
// line, and checked against the Community ID of the line's own 5-tuple.
// scripts/compare-outputs.sh makes the same comparison on the real
// captures of ../shared and the bench traces, against a binary.
func TestConnLogGolden(t *testing.T) {
	for _, trace := range []string{"sample", "zeek-wikipedia", "zeek-wikipedia.rawip.snap64"} {
		for _, workers := range []int{1, 2} {
			want, err := os.ReadFile(filepath.Join("testdata", "connlog", fmt.Sprintf("%s.w%d.jsonl", trace, workers)))
			if err != nil {
				t.Fatal(err)
			}
			cfg := DefaultConfig()
			cfg.Workers = workers
			var got bytes.Buffer
			cfg.Sinks = connLog(&got)
			if _, err := Replay(context.Background(), []string{filepath.Join("..", "pcaps", trace+".pcap")}, ReplayOptions{Config: cfg}); err != nil {
				t.Fatal(err)
			}
			var lines [][]byte
			for _, line := range bytes.SplitAfter(got.Bytes(), []byte("\n")) {
				if len(line) == 0 {
					continue
				}
				i := bytes.LastIndex(line, []byte(`,"community_id":"`))
				if i < 0 {
					t.Fatalf("%s: no community_id in %s", trace, line)
				}
				var r connlog.Record
				if err := json.Unmarshal(line, &r); err != nil {
					t.Fatal(err)
				}
				proto := map[string]uint8{"tcp": capture.ProtoTCP, "udp": capture.ProtoUDP}[r.Proto]
				if proto != 0 {
					k := capture.Key{Src: r.OrigH, Dst: r.RespH, SrcPort: r.OrigP, DstPort: r.RespP, Proto: proto}
					if want := capture.CommunityID(&k, 0); r.CommunityID != want {
						t.Errorf("%s: community_id %s, want %s for %v", trace, r.CommunityID, want, k)
					}
				}
				lines = append(lines, append(line[:i:i], "}\n"...))
			}
			stripped := bytes.Join(lines, nil)
			if !bytes.Equal(stripped, want) {
				g, w := bytes.Split(stripped, []byte("\n")), bytes.Split(want, []byte("\n"))
				for i := range min(len(g), len(w)) {
					if !bytes.Equal(g[i], w[i]) {
						t.Errorf("%s, %d workers: line %d\n got %s\nwant %s", trace, workers, i+1, g[i], w[i])
						break
					}
				}
				t.Errorf("%s, %d workers: %d lines, golden %d", trace, workers, len(g)-1, len(w)-1)
			}
		}
	}
}
