// Package acsmeval reproduces Section VI of the kBF paper ("Application
// case study: TCP flow analysis"): a trace is replayed through an exact
// state tracker and through kbf, sbf and fcf trackers at several target
// error rates p, all at once, and the approximate answers are compared
// with the exact ones.
//
// Like the paper, the filters are sized for n = the number of flows in the
// trace, flows are deleted when they end and never aged, and every flow of
// the trace is queried at the end. Three errors are counted per flow:
//
//   - false positive: the flow's first packet found state in the filter
//     (a new flow taken for an existing one);
//   - false negative: no state (absent or "don't know") for the flow at the
//     end, where the exact tracker has one;
//   - incorrect: a state that differs from the exact tracker's (conn_state
//     or orientation).
//
// A flow's answer is the state its tracker reported when the flow ended
// (the flow record an agent would emit), or, for flows still open, the
// answer to a query at the end of the trace. Total error is the sum of the
// three over the number of flows (a flow can count twice, as in the paper).
//
// The sbf and fcf filters get the same number of bytes as kbf at each p
// (the comparison at equal memory); a second table sizes each backend from
// p by its own formulas, to compare bytes per flow at similar error.
package acsmeval

import (
	"errors"
	"fmt"
	"io"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
)

// Config is one evaluation.
type Config struct {
	Traces    []string
	Backends  []acsm.BackendKind // approximate backends (default kbf, sbf, fcf)
	Ps        []float64
	Machine   acsm.MachineKind
	KeepEnded bool
	// ConnOut, if set, receives one JSON line per flow as ConnBackend at
	// ConnP answers it (exact when ConnBackend is exact).
	ConnOut     io.Writer
	ConnBackend acsm.BackendKind
	ConnP       float64
	// Truth is a flowmon gen truth sidecar (JSON lines); ZeekTruth Zeek's
	// conn.log rows as shared/pcaps/real/groundtruth/zeek_conn.tsv holds
	// them. Both optional.
	Truth     string
	ZeekTruth string
	Progress  io.Writer // optional progress lines
	// PairKey identifies a flow by its address pair (and protocol) instead
	// of its 5-tuple, as the paper does ("the pair of the source and
	// destination IP address is used as flow-id").
	PairKey bool
}

// run is one tracker of the evaluation.
type run struct {
	name   string
	kind   acsm.BackendKind
	p      float64
	native bool // sized from p by its own formula (else at kbf's memory)
	tr     *acsm.Tracker
	ans    []uint16 // per flow: the machine value, or unset / noAnswer
	memory int64
	fp     uint64
	fn     uint64
	wrong  uint64
	flows  uint64
}

const (
	unset    = 0xFFFF // no answer yet
	noAnswer = 0xFFFE // the backend had no state ("-")
)

// traceFlows is pass 1: the distinct flows of a trace.
type traceFlows struct {
	index   map[capture.Key]int32
	keys    []capture.Key
	hashes  []uint64
	packets uint64
}

// rekey turns a packet's key into its address pair when pair is set.
func rekey(p *capture.Packet, pair bool) {
	if !pair {
		return
	}
	k := p.Directed()
	k.SrcPort, k.DstPort = 0, 0
	p.Key, p.Reversed = k.Canonical()
	p.Hash = p.Key.Hash()
}

func scan(name string, pair bool) (*traceFlows, error) {
	r, err := capture.Open(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	tf := &traceFlows{index: map[capture.Key]int32{}}
	var p capture.Packet
	for {
		err := r.Next(&p)
		if err == io.EOF {
			break
		}
		if err != nil {
			var re *capture.ReadError
			if errors.As(err, &re) {
				break // keep the packets before the damage
			}
			return nil, fmt.Errorf("scan %s: %w", name, err)
		}
		if skip(&p) {
			continue
		}
		rekey(&p, pair)
		tf.packets++
		if _, ok := tf.index[p.Key]; !ok {
			tf.index[p.Key] = int32(len(tf.keys))
			tf.keys = append(tf.keys, p.Key)
			tf.hashes = append(tf.hashes, p.Hash)
		}
	}
	return tf, nil
}

func skip(p *capture.Packet) bool {
	return p.Fragment == capture.LaterFragment || (p.Key.Proto == capture.ProtoTCP && !p.HasTCP) || !p.Key.IsValid()
}

// buildRuns makes the exact tracker (first) and the approximate ones.
func buildRuns(cfg *Config, n int) ([]*run, error) {
	base := acsm.Config{Machine: cfg.Machine, Capacity: n, NoAging: true, KeepEnded: cfg.KeepEnded, ShadowRate: -1, ExactCap: 1 << 30}
	mk := func(kind acsm.BackendKind, p float64, mem int, native bool) (*run, error) {
		c := base
		c.Backend, c.FPRate, c.MemoryBytes = kind, p, mem
		tr, err := acsm.New(c)
		if err != nil {
			return nil, fmt.Errorf("%s at p=%g: %w", kind, p, err)
		}
		r := &run{name: kind.String(), kind: kind, p: p, native: native, tr: tr, ans: make([]uint16, n)}
		for i := range r.ans {
			r.ans[i] = unset
		}
		return r, nil
	}
	exact, err := mk(acsm.BackendExact, 0, 0, true)
	if err != nil {
		return nil, err
	}
	runs := []*run{exact}
	for _, p := range cfg.Ps {
		mem := 0
		ref, err := mk(acsm.BackendKBF, p, 0, true)
		if err != nil {
			return nil, err
		}
		mem = int(ref.tr.Stats().MemoryBytes)
		if has(cfg.Backends, acsm.BackendKBF) {
			runs = append(runs, ref)
		}
		for _, k := range []acsm.BackendKind{acsm.BackendSBF, acsm.BackendFCF} {
			if !has(cfg.Backends, k) {
				continue
			}
			eq, err := mk(k, p, mem, false)
			if err != nil {
				return nil, err
			}
			nat, err := mk(k, p, 0, true)
			if err != nil {
				return nil, err
			}
			runs = append(runs, eq, nat)
		}
		if has(cfg.Backends, acsm.BackendDLeft) {
			// dleft's cells are 32 bits whatever p: one run, sized by
			// its own load.
			nat, err := mk(acsm.BackendDLeft, p, 0, true)
			if err != nil {
				return nil, err
			}
			runs = append(runs, nat)
		}
	}
	return runs, nil
}

func has(ks []acsm.BackendKind, k acsm.BackendKind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// replay is pass 2: every packet through every tracker.
func replay(name string, tf *traceFlows, runs []*run, pair bool) error {
	r, err := capture.Open(name)
	if err != nil {
		return err
	}
	defer r.Close()
	truth := runs[0]
	var p capture.Packet
	for {
		err := r.Next(&p)
		if err == io.EOF {
			break
		}
		if err != nil {
			var re *capture.ReadError
			if errors.As(err, &re) {
				break
			}
			return fmt.Errorf("replay %s: %w", name, err)
		}
		if skip(&p) {
			continue
		}
		rekey(&p, pair)
		idx := tf.index[p.Key]
		tev := truth.tr.Observe(&p)
		record(truth, idx, &tev)
		for _, x := range runs[1:] {
			ev := x.tr.Observe(&p)
			if tev.New && ev.Result != acsm.Absent {
				x.fp++
			}
			record(x, idx, &ev)
		}
	}
	// The end of the trace: query every flow still without an answer.
	for _, x := range runs {
		for i, a := range x.ans {
			if a != unset {
				continue
			}
			v, res := x.tr.QueryValue(tf.hashes[i])
			if res != acsm.Found {
				v = noAnswer
			}
			x.ans[i] = v
		}
	}
	return nil
}

func record(x *run, idx int32, ev *acsm.Event) {
	if ev.Ended && x.ans[idx] == unset {
		x.ans[idx] = ev.Value
	}
}

// score compares every run's answers with the exact run's.
func score(runs []*run) {
	truth := runs[0]
	for _, x := range runs {
		x.flows += uint64(len(x.ans))
		x.memory = x.tr.Stats().MemoryBytes
		if x == truth {
			continue
		}
		for i, a := range x.ans {
			switch {
			case a == noAnswer && truth.ans[i] != noAnswer:
				x.fn++
			case a != truth.ans[i]:
				x.wrong++
			}
		}
	}
}
