package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestConnLogGolden replays the bundled traces (pcaps/README.md) with one
// and two workers and compares the conn.log lines, byte for byte, with
// the golden files under testdata/connlog, written by the flow log's
// encoding/json encoder before record/connlog replaced it: the records,
// their order and their bytes must not change.
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
			if !bytes.Equal(got.Bytes(), want) {
				g, w := bytes.Split(got.Bytes(), []byte("\n")), bytes.Split(want, []byte("\n"))
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
