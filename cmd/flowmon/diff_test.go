package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffFindsDroppedPackets compares the sample with a copy that lost
// every 5th record: the diff must count exactly the records removed.
func TestDiffFindsDroppedPackets(t *testing.T) {
	data, err := os.ReadFile("../../pcaps/sample.pcap")
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite the classic pcap record by record, dropping every 5th.
	out := append([]byte(nil), data[:24]...)
	dropped := 0
	for off, i := 24, 0; off+16 <= len(data); i++ {
		n := 16 + int(binary.LittleEndian.Uint32(data[off+8:]))
		if i%5 == 4 {
			dropped++
		} else {
			out = append(out, data[off:off+n]...)
		}
		off += n
	}
	lossy := filepath.Join(t.TempDir(), "lossy.pcap")
	if err := os.WriteFile(lossy, out, 0o644); err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	if code := run([]string{"diff", "../../pcaps/sample.pcap", lossy}, &o, &e); code != 0 {
		t.Fatalf("exit %d: %s", code, e.String())
	}
	want := fmt.Sprintf("packets here and not there: %d, there and not here: 0", dropped)
	if !strings.Contains(o.String(), want) {
		t.Errorf("diff output lacks %q:\n%s", want, o.String())
	}
	o.Reset()
	if code := run([]string{"diff", "../../pcaps/sample.pcap", "../../pcaps/sample.pcap"}, &o, &e); code != 0 ||
		!strings.Contains(o.String(), "with different counts: 0") {
		t.Errorf("self-diff: exit %d\n%s", code, o.String())
	}
}
