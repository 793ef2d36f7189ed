package capture

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/flowmon/flowmon/internal/testutil/sharedpcaps"
)

// truncCaptures are the shared captures TestTruncatedCounts cuts: one of
// each file kind the reader has a path for, and link types other than
// Ethernet (the record walk does not depend on the link type, but the
// decode of the last whole record does).
var truncCaptures = []struct {
	name string
	gzip bool // also cut a gzip-compressed copy
}{
	{"arkime/IKEv1.pcap", true},                                     // pcap LE, Ethernet, larger than the read buffer
	{"suricata-verify/nfs3-01/input.pcap", false},                   // pcap BE, version 2.1 (swapped-length era)
	{"zeek/vntag.pcap", false},                                      // pcap nanosecond LE, Ethernet
	{"tcpdump/forces3.pcap", false},                                 // pcap LE, Linux cooked (SLL)
	{"derived-caida-style/zeek-wikipedia.rawip.snap64.pcap", false}, // raw IP, caplen < wire length
	{"tcpdump/of13_ericsson.pcapng", true},                          // pcapng, Ethernet, larger than the read buffer
	{"ndpi/reasm_crash_anon.pcapng", false},                         // pcapng, Linux cooked (SLL)
}

// walkedRecord is one packet record as walkRecords finds it.
type walkedRecord struct{ start, data, end int }

// walkRecords lists a capture's packet records by their headers alone,
// without the reader under test: first is where records begin (after the
// pcap file header, or after the first pcapng section header block).
func walkRecords(t *testing.T, b []byte) (first int, recs []walkedRecord) {
	t.Helper()
	if len(b) < 24 {
		t.Fatalf("%d bytes: too short to walk", len(b))
	}
	if binary.LittleEndian.Uint32(b) == 0x0A0D0D0A { // pcapng
		var order binary.ByteOrder = binary.LittleEndian
		for off := 0; off < len(b); {
			if off+12 > len(b) {
				t.Fatalf("pcapng block at %d cut short", off)
			}
			typ := binary.LittleEndian.Uint32(b[off:])
			if typ == 0x0A0D0D0A {
				order = binary.LittleEndian
				if binary.BigEndian.Uint32(b[off+8:]) == 0x1A2B3C4D {
					order = binary.BigEndian
				}
			}
			typ = order.Uint32(b[off:])
			n := int(order.Uint32(b[off+4:]))
			if n < 12 || off+n > len(b) {
				t.Fatalf("pcapng block at %d: length %d", off, n)
			}
			switch typ {
			case 0x0A0D0D0A:
				if first == 0 {
					first = off + n
				}
			case 6, 2: // enhanced packet, obsolete packet: 20 bytes of fields
				recs = append(recs, walkedRecord{off, off + 28, off + n})
			case 3: // simple packet: the original length
				recs = append(recs, walkedRecord{off, off + 12, off + n})
			}
			off += n
		}
		return first, recs
	}
	var order binary.ByteOrder = binary.BigEndian
	if m := binary.LittleEndian.Uint32(b); m == 0xA1B2C3D4 || m == 0xA1B23C4D {
		order = binary.LittleEndian
	}
	lenAt := 8 // captured length; before version 2.3 it came second
	if order.Uint16(b[6:]) < 3 {
		lenAt = 12
	}
	off := 24
	for off+16 <= len(b) {
		end := off + 16 + int(order.Uint32(b[off+lenAt:]))
		if end > len(b) {
			t.Fatalf("pcap record at %d runs past the end", off)
		}
		recs = append(recs, walkedRecord{off, off + 16, end})
		off = end
	}
	if off != len(b) {
		t.Fatalf("%d bytes after the last record", len(b)-off)
	}
	return 24, recs
}

// truncCut is a length to cut a capture to, and what it cuts through.
type truncCut struct {
	where string
	n     int
}

func truncCuts(first int, recs []walkedRecord, size int, ng bool) []truncCut {
	i, j := recs[len(recs)/3], recs[2*len(recs)/3]
	cuts := []truncCut{
		{"file header", min(20, first-1)},
		{"before the first record", first},
		{fmt.Sprintf("record %d header", len(recs)/3), i.start + 5},
		{fmt.Sprintf("between records %d and %d", len(recs)/3, len(recs)/3+1), i.end},
		{fmt.Sprintf("record %d data", 2*len(recs)/3), j.data + (j.end-j.data)/2},
		{"last byte", size - 1},
	}
	if ng {
		// Past the block header but inside the fixed fields before the data.
		cuts = append(cuts, truncCut{fmt.Sprintf("record %d fields", len(recs)/3), i.start + 20})
	}
	return cuts
}

// wholeBefore counts the records that end at or before n, and says where
// the last of them ends (first when there is none).
func wholeBefore(first int, recs []walkedRecord, n int) (count, end int) {
	end = first
	for _, r := range recs {
		if r.end > n {
			break
		}
		count, end = count+1, r.end
	}
	return count, end
}

// capinfosCount runs capinfos on name and returns the packet count and
// the file type it reports; ok is false when it reports no count (it
// exits 2 on files it cannot open, and 1, still counting, on files cut
// short).
func capinfosCount(t *testing.T, name string) (n int, typ string, ok bool) {
	out, _ := exec.Command("capinfos", "-t", "-c", "-M", name).CombinedOutput()
	if m := regexp.MustCompile(`File type:\s+(.*)`).FindSubmatch(out); m != nil {
		typ = string(m[1])
	}
	m := regexp.MustCompile(`Number of packets:\s+(\d+)`).FindSubmatch(out)
	if m == nil {
		return 0, typ, false
	}
	n, err := strconv.Atoi(string(m[1]))
	if err != nil {
		t.Fatalf("capinfos %s: %v\n%s", name, err, out)
	}
	return n, typ, true
}

// TestTruncatedCounts cuts real captures at record headers, record data,
// record boundaries and the file header, and checks that the reader
// returns exactly the whole records before the cut (counted by walking the
// record headers here) and then the damage at the end of the last of
// them, and that capinfos counts the same when it is installed.
func TestTruncatedCounts(t *testing.T) {
	dir := sharedpcaps.Dir(t)
	_, err := exec.LookPath("capinfos")
	haveCapinfos := err == nil
	if !haveCapinfos {
		t.Log("capinfos not found (scripts/install-deps.sh test installs tshark): checking against the record walk only")
	}
	tmp := t.TempDir()
	for _, c := range truncCaptures {
		full, err := os.ReadFile(filepath.Join(dir, c.name))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		ng := binary.LittleEndian.Uint32(full) == 0x0A0D0D0A
		first, recs := walkRecords(t, full)
		// The walk and the reader agree on the whole file.
		if st, err := readAll(filepath.Join(dir, c.name)); err != nil || st.Packets != uint64(len(recs)) {
			t.Errorf("%s: the walk finds %d records; reading the whole file: %v, err %v", c.name, len(recs), st, err)
			continue
		}
		for _, cut := range truncCuts(first, recs, len(full), ng) {
			name := filepath.Join(tmp, fmt.Sprintf("%s-%d%s", filepath.Base(c.name), cut.n, filepath.Ext(c.name)))
			if err := os.WriteFile(name, full[:cut.n], 0o644); err != nil {
				t.Fatal(err)
			}
			want, end := wholeBefore(first, recs, cut.n)
			got := checkCut(t, c.name, cut, name, first, want, end, cut.n == end)
			if !haveCapinfos {
				continue
			}
			ci, typ, ok := capinfosCount(t, name)
			switch {
			case got < 0 && (!ok || typ == "mime"):
				// capinfos fails on a cut pcap header, and reads a cut
				// pcapng header as a one-"packet" MIME file.
				t.Logf("%s cut at %d (%s): flowmon refuses the file; capinfos: type %q, count %v", c.name, cut.n, cut.where, typ, ok)
			case !ok || ci != got:
				t.Errorf("%s cut at %d (%s): flowmon reads %d packets, capinfos %d (type %q, count found %v)", c.name, cut.n, cut.where, got, ci, typ, ok)
			default:
				t.Logf("%s cut at %d (%s): %d packets, as capinfos", c.name, cut.n, cut.where, got)
			}
		}
		if c.gzip {
			checkGzipCuts(t, c.name, full, first, recs, tmp, haveCapinfos)
		}
	}
}

// checkCut reads the cut file and checks the count and the error; it
// returns the count, or -1 when the reader refused the file, as it must
// when the cut is inside the file header.
func checkCut(t *testing.T, capture string, cut truncCut, name string, first, want, end int, clean bool) int {
	t.Helper()
	st, err := readAll(name)
	if cut.n < first {
		if st != nil {
			t.Errorf("%s cut at %d (%s): opened, %d packets, err %v; want the file refused", capture, cut.n, cut.where, st.Packets, err)
			return int(st.Packets)
		}
		return -1
	}
	if st == nil {
		t.Errorf("%s cut at %d (%s): %v", capture, cut.n, cut.where, err)
		return -1
	}
	if st.Packets != uint64(want) {
		t.Errorf("%s cut at %d (%s): %d packets, want the %d whole records before the cut (err %v)", capture, cut.n, cut.where, st.Packets, want, err)
	}
	checkDamage(t, fmt.Sprintf("%s cut at %d (%s)", capture, cut.n, cut.where), err, clean, want, end)
	return int(st.Packets)
}

// checkDamage checks the error that ended a read of a cut capture: none
// for a cut between records, else a *ReadError after the want packets, at
// the end of the last of them, saying the input ended early.
func checkDamage(t *testing.T, what string, err error, clean bool, want, end int) {
	t.Helper()
	if clean {
		if err != nil {
			t.Errorf("%s: cut between records, but err %v", what, err)
		}
		return
	}
	var re *ReadError
	if !errors.As(err, &re) || re.Packets != uint64(want) || re.Offset != int64(end) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("%s: err %v; want damage at offset %d after %d packets, wrapping io.ErrUnexpectedEOF", what, err, end, want)
	}
}

// checkGzipCuts cuts a gzip-compressed copy of full: in the middle of the
// deflate stream twice, and in the trailer. The whole records expected are
// those within what the cut stream decompresses to.
func checkGzipCuts(t *testing.T, capture string, full []byte, first int, recs []walkedRecord, tmp string, haveCapinfos bool) {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(full)
	zw.Close()
	for _, n := range []int{z.Len() / 3, 2 * z.Len() / 3, z.Len() - 4} {
		zr, err := gzip.NewReader(bytes.NewReader(z.Bytes()[:n]))
		if err != nil {
			t.Fatal(err)
		}
		prefix, err := io.ReadAll(zr)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("gzip of %s cut at %d: decompressing ends in %v", capture, n, err)
		}
		want, end := wholeBefore(first, recs, len(prefix))
		name := filepath.Join(tmp, fmt.Sprintf("%s-%d.gz", filepath.Base(capture), n))
		if err := os.WriteFile(name, z.Bytes()[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("gzip of %s cut at %d of %d (%d bytes decompressed)", capture, n, z.Len(), len(prefix))
		st, err := readAll(name)
		if st == nil {
			t.Errorf("%s: %v", what, err)
			continue
		}
		if st.Packets != uint64(want) {
			t.Errorf("%s: %d packets, want the %d whole records before the cut (err %v)", what, st.Packets, want, err)
		}
		// Even when every record came through, the stream was cut.
		checkDamage(t, what, err, false, want, end)
		if !haveCapinfos {
			continue
		}
		if ci, typ, ok := capinfosCount(t, name); !ok || uint64(ci) != st.Packets {
			t.Errorf("%s: flowmon reads %d packets, capinfos %d (type %q, count found %v)", what, st.Packets, ci, typ, ok)
		} else {
			t.Logf("%s: %d packets, as capinfos", what, ci)
		}
	}
}
