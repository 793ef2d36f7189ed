//go:build linux

package capture

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/pcapgo"
)

// TestOpenMapsOnlyClassicPcap: Open maps a regular classic pcap file, and
// reads gzip, pcapng and files too short for a header through the read
// path.
func TestOpenMapsOnlyClassicPcap(t *testing.T) {
	dir := t.TempDir()
	frames := testFrames(t, 3)
	plain := pcapBytes(binary.LittleEndian, false, 1, frames)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain)
	zw.Close()
	var ng bytes.Buffer
	w, err := pcapgo.NewNgWriter(&ng, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		w.WritePacket(gopacket.CaptureInfo{CaptureLength: len(f), Length: len(f)}, f)
	}
	w.Flush()
	for _, c := range []struct {
		name   string
		data   []byte
		mapped bool
	}{
		{"plain.pcap", plain, true},
		{"header-only.pcap", plain[:24], true},
		{"plain.pcap.gz", gz.Bytes(), false},
		{"plain.pcapng", ng.Bytes(), false},
		{"short.pcap", plain[:20], false},
	} {
		name := filepath.Join(dir, c.name)
		if err := os.WriteFile(name, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Open(name)
		if err != nil {
			if c.mapped || c.name != "short.pcap" {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if mapped := r.pcap != nil && r.pcap.m != nil; mapped != c.mapped {
			t.Errorf("%s: mapped %v, want %v", c.name, mapped, c.mapped)
		}
		r.Close()
	}
}

// TestMappedFileGrows: a file that grows while it is read (a capture
// still being written) is read on past the end of its mapping with
// read(2), including a record the mapping held only part of, and its
// damage is reported at the right offset.
func TestMappedFileGrows(t *testing.T) {
	frames := testFrames(t, 8)
	full := pcapBytes(binary.LittleEndian, false, 1, frames)
	_, recs := walkRecords(t, full)
	cut := recs[3].data + 5 // three records, and part of the fourth
	name := filepath.Join(t.TempDir(), "growing.pcap")
	if err := os.WriteFile(name, full[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.pcap.m == nil {
		t.Fatal("not mapped")
	}
	var p Packet
	for i := range 3 {
		if err := r.Next(&p); err != nil || p.Key.SrcPort != uint16(1000+i) {
			t.Fatalf("packet %d: port %d, %v", i, p.Key.SrcPort, err)
		}
	}
	// The writer finishes the fourth record and writes on, to half of the
	// last.
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	end := recs[7].data + 3
	if _, err := f.Write(full[cut:end]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for i := 3; i < 7; i++ {
		if err := r.Next(&p); err != nil || p.Key.SrcPort != uint16(1000+i) {
			t.Fatalf("packet %d after the file grew: port %d, %v", i, p.Key.SrcPort, err)
		}
	}
	if r.pcap.m != nil {
		t.Fatal("still mapped past the end of the mapping")
	}
	err = r.Next(&p)
	var re *ReadError
	if !errors.As(err, &re) || re.Offset != int64(recs[7].start) || re.Packets != 7 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err %v; want the last record cut short at %d after 7 packets", err, recs[7].start)
	}
}

// bigPcap writes a classic pcap of about size bytes of small frames and
// returns its name.
func bigPcap(t testing.TB, size int) string {
	one := pcapBytes(binary.LittleEndian, false, 1, testFrames(t, 200))
	name := filepath.Join(t.TempDir(), "big.pcap")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.Write(one)
	for n := len(one); n < size; n += len(one) - 24 {
		w.Write(one[24:])
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return name
}

// rssFile is the process's resident file-backed memory in bytes, as the
// kernel counts it (RssFile in /proc/self/status).
func rssFile(t testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("RssFile %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}

// TestMappedMemoryBounded reads a file eight windows long and wants the
// process's resident share of it to stay within a few windows: the pages
// behind the reader are dropped as it goes.
func TestMappedMemoryBounded(t *testing.T) {
	size := 8 * mapWindow
	r, err := Open(bigPcap(t, size))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.pcap.m == nil {
		t.Fatal("not mapped")
	}
	base := rssFile(t)
	var p Packet
	var most int64
	for n := 0; ; n++ {
		if err := r.Next(&p); err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		if n%5000 == 0 {
			most = max(most, rssFile(t)-base)
		}
	}
	t.Logf("%d MiB read, resident file pages grew by at most %d KiB", size>>20, most>>10)
	if limit := int64(3 * mapWindow); most > limit {
		t.Fatalf("resident file pages grew by %d bytes reading %d; want at most %d", most, size, limit)
	}
}

// TestMappedNextNoAllocs: reading from a mapping allocates nothing per
// packet, the windows' opening included.
func TestMappedNextNoAllocs(t *testing.T) {
	r, err := Open(bigPcap(t, 3*mapWindow))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.pcap.m == nil {
		t.Fatal("not mapped")
	}
	// Enough packets (about 220 bytes a record) to cross a window's end,
	// and fewer than the file holds.
	runs := 2 * mapWindow / 250
	var p Packet
	if n := testing.AllocsPerRun(runs, func() {
		if err := r.Next(&p); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("Next allocates %v times per packet", n)
	}
}

// BenchmarkReaderNextMapped reads and decodes a cached file several
// windows long from its mapping: the mapped path's per-packet cost.
func BenchmarkReaderNextMapped(b *testing.B) {
	name := bigPcap(b, 3*mapWindow)
	r, err := Open(name)
	if err != nil {
		b.Fatal(err)
	}
	var p Packet
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Next(&p); err != nil {
			r.Close()
			if r, err = Open(name); err != nil {
				b.Fatal(err)
			}
		}
	}
	r.Close()
}
