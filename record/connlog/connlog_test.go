package connlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/testutil/cputime"
	"github.com/flowmon/flowmon/record"
)

// reference is what encoding/json writes for f, the bytes the log has
// always had: Record's fields from f, one Encode a line.
func reference(t testing.TB, f *record.Flow) []byte {
	r := Record{
		TS: float64(f.Start) / 1e9, UID: record.UIDString(f.UID),
		OrigH: f.Orig, OrigP: f.OrigPort, RespH: f.Resp, RespP: f.RespPort,
		Proto: Proto(f.Proto), Duration: time.Duration(f.End - f.Start).Seconds(),
		OrigBytes: f.OrigBytes, RespBytes: f.RespBytes, ConnState: f.State.String(),
		MissedBytes: f.MissedBytes, History: f.History.String(),
		OrigPkts: f.OrigPkts, OrigIPBytes: f.OrigIPBytes, RespPkts: f.RespPkts, RespIPBytes: f.RespIPBytes,
		CommunityID: string(f.CommunityID[:]), Interim: f.EndReason == record.EndActive,
	}
	if f.TunnelParent != 0 {
		r.TunnelParents = []string{record.UIDString(f.TunnelParent)}
	}
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(&r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// randomFlow is a record with every field drawn over its whole range,
// times and durations over the scales the float formatting switches at.
func randomFlow(r *rand.Rand) record.Flow {
	addr := func() netip.Addr {
		if r.IntN(3) == 0 {
			var a [16]byte
			for i := range a {
				a[i] = byte(r.Uint32())
			}
			if r.IntN(4) == 0 {
				a = [16]byte{10: 0xff, 11: 0xff, 12: byte(r.Uint32()), 15: 1} // IPv4-mapped
			}
			return netip.AddrFrom16(a)
		}
		return netip.AddrFrom4([4]byte{byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())})
	}
	u64 := func() uint64 { return r.Uint64() >> r.IntN(64) }
	start := r.Int64N(1 << 62)
	if r.IntN(4) == 0 {
		start = r.Int64N(1e9) // the epoch's first second
	}
	dur := []int64{0, 1, 999, 1000, 1e3 + 1, 123456, 1e9, r.Int64N(1e12), r.Int64N(1 << 40)}[r.IntN(9)]
	f := record.Flow{
		Start: start, End: start + dur, UID: r.Uint64(), Hash: r.Uint64(),
		Orig: addr(), Resp: addr(), OrigPort: uint16(r.Uint32()), RespPort: uint16(r.Uint32()),
		Proto:    []uint8{capture.ProtoTCP, capture.ProtoUDP, capture.ProtoICMP, capture.ProtoICMPv6, 47, 132}[r.IntN(6)],
		State:    acsm.ConnState(r.IntN(int(acsm.ConnUnknown) + 1)),
		OrigPkts: u64(), RespPkts: u64(), OrigBytes: u64(), RespBytes: u64(),
		OrigIPBytes: u64(), RespIPBytes: u64(), MissedBytes: u64(),
	}
	for range r.IntN(record.HistoryMax + 3) {
		f.History.AppendLetter("SHADFRIQTWG^shadfriqtwg"[r.IntN(23)])
	}
	setCommunityID(&f)
	f.EndReason = record.EndReason(1 + r.IntN(5))
	if r.IntN(4) == 0 {
		f.TunnelParent = r.Uint64() | 1
	}
	return f
}

// setCommunityID gives f the Community ID of its 5-tuple, as the pipeline
// does.
func setCommunityID(f *record.Flow) {
	k := capture.Key{Src: f.Orig, Dst: f.Resp, SrcPort: f.OrigPort, DstPort: f.RespPort, Proto: f.Proto}
	capture.AppendCommunityID(f.CommunityID[:0], &k, 0, false)
}

// TestAppendJSONIsEncodingJSON: the encoder writes encoding/json's bytes
// for every field's range.
func TestAppendJSONIsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var b []byte
	for i := range 200_000 {
		f := randomFlow(r)
		b = AppendJSON(b[:0], &f)
		if want := reference(t, &f); !bytes.Equal(b, want) {
			t.Fatalf("flow %d %+v:\n got %s\nwant %s", i, f, b, want)
		}
	}
}

// TestAppendFloat: the float formatting at the edges where encoding/json
// switches between plain and exponent forms.
func TestAppendFloat(t *testing.T) {
	for _, v := range []float64{0, 1e-7, 1e-6, 9.99999e-7, 1e-10, 1.5e-9, 0.5, 1, 1e20, 1e21, 123456789.123456789, 1704067200.009974, math.SmallestNonzeroFloat64, math.MaxFloat64} {
		want, _ := json.Marshal(v)
		if got := appendFloat(nil, v); !bytes.Equal(got, want) {
			t.Errorf("%g: %s, encoding/json %s", v, got, want)
		}
	}
}

// FuzzAppendJSON: any record's line parses as JSON and reads back (as
// Record) into the record's fields.
func FuzzAppendJSON(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Add(uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		fl := randomFlow(rand.New(rand.NewPCG(a, b)))
		line := AppendJSON(nil, &fl)
		if line[len(line)-1] != '\n' || bytes.Count(line, []byte("\n")) != 1 {
			t.Fatalf("not one line: %q", line)
		}
		var r Record
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if r.UID != record.UIDString(fl.UID) || r.OrigH != fl.Orig || r.RespH != fl.Resp || r.OrigP != fl.OrigPort ||
			r.RespP != fl.RespPort || r.Proto != Proto(fl.Proto) || r.ConnState != fl.State.String() ||
			r.History != fl.History.String() || r.OrigPkts != fl.OrigPkts || r.RespPkts != fl.RespPkts ||
			r.OrigBytes != fl.OrigBytes || r.RespBytes != fl.RespBytes || r.OrigIPBytes != fl.OrigIPBytes ||
			r.RespIPBytes != fl.RespIPBytes || r.MissedBytes != fl.MissedBytes ||
			r.TS != float64(fl.Start)/1e9 || r.Duration != fl.Duration() || r.CommunityID != string(fl.CommunityID[:]) {
			t.Fatalf("read back %+v from %s", r, line)
		}
	})
}

// TestWriterBatches: a batch is written in one write, so that a write
// that fails loses the batch the sink counts failed and no more, and the
// next batch goes on.
func TestWriterBatches(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	flows := make([]record.Flow, 1000)
	var want []byte
	for i := range flows {
		flows[i] = randomFlow(r)
		want = AppendJSON(want, &flows[i])
	}
	var w chunks
	c := NewWriter(&w)
	if err := c.WriteFlows(flows[:600]); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteFlows(flows[600:]); err != nil {
		t.Fatal(err)
	}
	if got := bytes.Join(w.writes, nil); !bytes.Equal(got, want) {
		t.Fatalf("wrote %d bytes, want %d", len(got), len(want))
	}
	if len(w.writes) != 2 || !bytes.Equal(w.writes[0], want[:len(w.writes[0])]) || bytes.Count(w.writes[0], []byte("\n")) != 600 {
		t.Errorf("%d writes for two batches, want one a batch", len(w.writes))
	}
	w.fail = errors.New("disk full")
	if err := c.WriteFlows(flows[:10]); !errors.Is(err, w.fail) {
		t.Errorf("failed write: %v", err)
	}
	w.fail = nil
	n := len(w.writes)
	if err := c.WriteFlows(flows[:1]); err != nil || len(w.writes) != n+1 || !bytes.Equal(w.writes[n], AppendJSON(nil, &flows[0])) {
		t.Errorf("after a failure: %v, %d writes", err, len(w.writes)-n)
	}
}

type chunks struct {
	writes [][]byte
	fail   error
}

func (c *chunks) Write(b []byte) (int, error) {
	if c.fail != nil {
		return 0, c.fail
	}
	c.writes = append(c.writes, bytes.Clone(b))
	return len(b), nil
}

func TestAppendJSONNoAllocs(t *testing.T) {
	f := randomFlow(rand.New(rand.NewPCG(5, 6)))
	b := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(1000, func() { b = AppendJSON(b[:0], &f) }); n != 0 {
		t.Errorf("%v allocations a record", n)
	}
}

// typicalFlow is a record with the values of a generated trace's flows
// (flowmon gen's defaults, the eth bench trace): times of 2024 in
// microseconds, durations up to a minute, tens of packets, kilobytes to
// megabytes, 80% IPv4.
func typicalFlow(r *rand.Rand) record.Flow {
	f := randomFlow(r)
	f.Start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano() + r.Int64N(60e6)*1000
	f.End = f.Start + r.Int64N(60e6)*1000
	if r.IntN(5) != 0 {
		f.Orig = netip.AddrFrom4([4]byte{10, byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())})
		f.Resp = netip.AddrFrom4([4]byte{198, 18, byte(r.Uint32()), byte(r.Uint32())})
	}
	f.OrigPkts, f.RespPkts = r.Uint64N(50), r.Uint64N(50)
	f.OrigBytes, f.RespBytes = r.Uint64N(1<<20), r.Uint64N(1<<24)
	f.OrigIPBytes, f.RespIPBytes = f.OrigBytes+40*f.OrigPkts, f.RespBytes+40*f.RespPkts
	f.MissedBytes = 0
	f.History = record.History{}
	for _, c := range []byte("ShADadFf") {
		f.History.AppendLetter(c)
	}
	setCommunityID(&f)
	return f
}

// BenchmarkAppendJSON is the encoder's cost a record, over typical
// records (BenchmarkAppendJSONWide: over every field's whole range).
func BenchmarkAppendJSON(b *testing.B) { benchAppend(b, typicalFlow) }

func BenchmarkAppendJSONWide(b *testing.B) { benchAppend(b, randomFlow) }

func benchAppend(b *testing.B, draw func(*rand.Rand) record.Flow) {
	r := rand.New(rand.NewPCG(7, 8))
	flows := make([]record.Flow, 1024)
	for i := range flows {
		flows[i] = draw(r)
	}
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	m := cputime.Start()
	for i := 0; b.Loop(); i++ {
		buf = AppendJSON(buf[:0], &flows[i&1023])
	}
	m.Report(b)
}

// BenchmarkEncodingJSON is the typical records through encoding/json, the
// encoder AppendJSON replaced, for comparison.
func BenchmarkEncodingJSON(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	recs := make([]Record, 1024)
	for i := range recs {
		f := typicalFlow(r)
		recs[i] = Record{TS: float64(f.Start) / 1e9, UID: record.UIDString(f.UID), OrigH: f.Orig, OrigP: f.OrigPort,
			RespH: f.Resp, RespP: f.RespPort, Proto: Proto(f.Proto), Duration: f.Duration(), OrigBytes: f.OrigBytes,
			RespBytes: f.RespBytes, ConnState: f.State.String(), History: f.History.String(), OrigPkts: f.OrigPkts,
			CommunityID: string(f.CommunityID[:])}
	}
	enc := json.NewEncoder(io.Discard)
	b.ReportAllocs()
	m := cputime.Start()
	for i := 0; b.Loop(); i++ {
		if err := enc.Encode(&recs[i&1023]); err != nil {
			b.Fatal(err)
		}
	}
	m.Report(b)
}

// BenchmarkAppendFloat is a record time's formatting by appendFloat and by
// strconv's shortest formatting, which it falls back to.
func BenchmarkAppendFloat(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 9))
	vs := make([]float64, 1024)
	for i := range vs {
		vs[i] = float64(typicalFlow(r).Start) / 1e9
	}
	buf := make([]byte, 0, 64)
	b.Run("appendFloat", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			buf = appendFloat(buf[:0], vs[i&1023])
		}
	})
	b.Run("strconv", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			buf = strconv.AppendFloat(buf[:0], vs[i&1023], 'f', -1, 64)
		}
	})
}
