package acsmeval

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/flowmon/flowmon/acsm"
)

// total accumulates one (backend, p, sizing) over the traces.
type total struct {
	name       string
	kind       acsm.BackendKind
	p          float64
	native     bool
	flows      uint64
	memory     int64
	fp, fn     uint64
	wrong      uint64
	agree      agreement
	zagree     agreement
	dontKnow   uint64
	insertFail uint64
}

func (t *total) label() string {
	if t.kind == acsm.BackendExact {
		return "exact"
	}
	return t.name
}

func (t *total) rate(x uint64) float64 {
	if t.flows == 0 {
		return 0
	}
	return float64(x) / float64(t.flows)
}

// Row is one line of the result: a backend at one p and sizing, over all
// traces.
type Row struct {
	Backend       acsm.BackendKind
	P             float64
	OwnSizing     bool // sized from p by its own formula (else at kbf's memory)
	Flows         uint64
	MemoryBytes   int64
	FalsePositive uint64
	FalseNegative uint64
	Incorrect     uint64
	// TruthAgreement and ZeekAgreement are the shares of ground-truth rows
	// found in the traces whose conn_state and originator the backend got
	// right.
	TruthAgreement, ZeekAgreement float64
}

// Run evaluates cfg, writes the markdown report to w and returns its rows.
func Run(cfg Config, w io.Writer) ([]Row, error) {
	rows, err := run1(cfg, w)
	return rows, err
}

func run1(cfg Config, w io.Writer) ([]Row, error) {
	if len(cfg.Traces) == 0 {
		return nil, fmt.Errorf("eval acsm: no trace")
	}
	if len(cfg.Backends) == 0 {
		cfg.Backends = []acsm.BackendKind{acsm.BackendKBF, acsm.BackendSBF, acsm.BackendFCF}
	}
	if len(cfg.Ps) == 0 {
		cfg.Ps = []float64{0.1, 0.01, 0.001, 1e-4, 1e-5}
	}
	var genRows []truthRow
	if cfg.Truth != "" {
		var err error
		if genRows, err = readGenTruth(cfg.Truth); err != nil {
			return nil, err
		}
	}
	var conn *bufio.Writer
	if cfg.ConnOut != nil {
		conn = bufio.NewWriterSize(cfg.ConnOut, 1<<16)
		defer conn.Flush()
	}
	totals := map[string]*total{}
	var order []string
	var flows, packets uint64
	var traces int
	start := time.Now()
	for _, name := range cfg.Traces {
		tf, err := scan(name, cfg.PairKey)
		if err != nil {
			if len(cfg.Traces) == 1 {
				return nil, err
			}
			fmt.Fprintf(progress(cfg), "skip %s: %v\n", name, err)
			continue
		}
		if len(tf.keys) == 0 {
			continue
		}
		traces++
		flows += uint64(len(tf.keys))
		packets += tf.packets
		runs, err := buildRuns(&cfg, len(tf.keys))
		if err != nil {
			return nil, err
		}
		if err := replay(name, tf, runs, cfg.PairKey); err != nil {
			return nil, err
		}
		score(runs)
		var zrows []truthRow
		if cfg.ZeekTruth != "" {
			if zrows, err = readZeekTruth(cfg.ZeekTruth, name); err != nil {
				return nil, err
			}
		}
		for _, x := range runs {
			key := fmt.Sprintf("%s|%g|%v", x.name, x.p, x.native)
			t, ok := totals[key]
			if !ok {
				t = &total{name: x.name, kind: x.kind, p: x.p, native: x.native}
				totals[key] = t
				order = append(order, key)
			}
			t.flows += x.flows
			t.memory += x.memory
			t.fp += x.fp
			t.fn += x.fn
			t.wrong += x.wrong
			st := x.tr.Stats()
			t.dontKnow += st.DontKnow
			t.insertFail += st.InsertFailures
			if genRows != nil {
				t.agree.add(compare(genRows, tf, x.tr, x.ans, x.kind == acsm.BackendExact))
			}
			if zrows != nil {
				t.zagree.add(compare(zrows, tf, x.tr, x.ans, x.kind == acsm.BackendExact))
			}
			if conn != nil && x.kind == cfg.ConnBackend && (x.kind == acsm.BackendExact || (x.p == cfg.ConnP && (x.native || x.kind == acsm.BackendKBF))) {
				writeConn(conn, tf, x.tr, x.ans)
			}
		}
		fmt.Fprintf(progress(cfg), "%s: %d flows, %d packets, %s\n", name, len(tf.keys), tf.packets, time.Since(start).Round(time.Millisecond))
	}
	if traces == 0 {
		return nil, fmt.Errorf("eval acsm: no flows in %d traces", len(cfg.Traces))
	}
	ts := make([]*total, 0, len(order))
	for _, k := range order {
		ts = append(ts, totals[k])
	}
	writeReport(w, &cfg, ts, traces, flows, packets, genRows != nil, cfg.ZeekTruth != "")
	rows := make([]Row, 0, len(ts))
	for _, t := range ts {
		rows = append(rows, Row{Backend: t.kind, P: t.p, OwnSizing: t.native, Flows: t.flows, MemoryBytes: t.memory,
			FalsePositive: t.fp, FalseNegative: t.fn, Incorrect: t.wrong,
			TruthAgreement: t.agree.rate(), ZeekAgreement: t.zagree.rate()})
	}
	return rows, nil
}

func progress(cfg Config) io.Writer {
	if cfg.Progress != nil {
		return cfg.Progress
	}
	return io.Discard
}

func writeReport(w io.Writer, cfg *Config, ts []*total, traces int, flows, packets uint64, gen, zeek bool) {
	fmt.Fprintf(w, "Machine `%s`, flow id %s, %d trace(s), %d flows, %d packets; filters sized for n = flows of each trace, no aging, ended flows %s.\n\n",
		cfg.Machine, map[bool]string{false: "5-tuple", true: "address pair (as the paper)"}[cfg.PairKey], traces, flows, packets,
		map[bool]string{false: "deleted (as the paper)", true: "kept"}[cfg.KeepEnded])
	head := "| p | backend | bytes/flow | false positives | false negatives | incorrect | total error | don't know answers | insert failures |\n|---|---|---|---|---|---|---|---|---|\n"
	row := func(t *total) {
		fmt.Fprintf(w, "| %g | %s | %.1f | %s | %s | %s | %s | %d | %d |\n", t.p, t.label(),
			float64(t.memory)/float64(t.flows), pct(t.rate(t.fp)), pct(t.rate(t.fn)), pct(t.rate(t.wrong)),
			pct(t.rate(t.fp+t.fn+t.wrong)), t.dontKnow, t.insertFail)
	}
	fmt.Fprintf(w, "### At equal memory (sbf and fcf get kbf's bytes)\n\n%s", head)
	for _, p := range cfg.Ps {
		for _, t := range ts {
			if t.p == p && t.kind != acsm.BackendExact && (t.kind == acsm.BackendKBF || !t.native) {
				row(t)
			}
		}
	}
	fmt.Fprintf(w, "\n### Each backend sized from p by its own formula\n\n%s", head)
	for _, p := range cfg.Ps {
		for _, t := range ts {
			if t.p == p && t.kind != acsm.BackendExact && t.native {
				row(t)
			}
		}
	}
	for _, t := range ts {
		if t.kind == acsm.BackendExact {
			fmt.Fprintf(w, "\nexact backend (the reference): %.1f bytes/flow (map estimate).\n", float64(t.memory)/float64(t.flows))
		}
	}
	if gen {
		writeAgreement(w, "flowmon gen ground truth", ts, func(t *total) *agreement { return &t.agree })
	}
	if zeek {
		writeAgreement(w, "Zeek conn.log (groundtruth/zeek_conn.tsv)", ts, func(t *total) *agreement { return &t.zagree })
	}
}

func writeAgreement(w io.Writer, what string, ts []*total, get func(*total) *agreement) {
	fmt.Fprintf(w, "\n### conn_state agreement with %s\n\n| backend | p | sizing | truth rows | found in trace | agree | agreement |\n|---|---|---|---|---|---|---|\n", what)
	for _, t := range ts {
		a := get(t)
		sizing := "own formula"
		if !t.native {
			sizing = "kbf's memory"
		}
		p := fmt.Sprintf("%g", t.p)
		if t.kind == acsm.BackendExact {
			p, sizing = "-", "-"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d | %d | %d | %s |\n", t.label(), p, sizing, a.rows, a.matched, a.agree, pct(a.rate()))
	}
	for _, t := range ts {
		if t.kind != acsm.BackendExact || len(get(t).mismatch) == 0 {
			continue
		}
		m := get(t).mismatch
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || (m[keys[i]] == m[keys[j]] && keys[i] < keys[j]) })
		var b strings.Builder
		for i, k := range keys {
			if i == 15 {
				break
			}
			fmt.Fprintf(&b, "%s: %d; ", k, m[k])
		}
		fmt.Fprintf(w, "\nexact backend disagreements (truth->answer): %s\n", strings.TrimSuffix(b.String(), "; "))
	}
}

func pct(x float64) string {
	switch {
	case x == 0:
		return "0"
	case x < 1e-5:
		return fmt.Sprintf("%.1e%%", 100*x)
	}
	return fmt.Sprintf("%.4f%%", 100*x)
}
