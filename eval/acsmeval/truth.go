package acsmeval

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
)

// truthRow is one flow of a ground truth: its originator-first 5-tuple
// and conn_state.
type truthRow struct {
	key   capture.Key // directed originator -> responder
	state acsm.ConnState
}

// agreement counts how a run's answers match a ground truth.
type agreement struct {
	rows    uint64 // truth rows
	matched uint64 // rows whose flow is in the trace
	agree   uint64 // conn_state and originator both right
	// mismatch counts "truth->answer" pairs (kept for the exact run).
	mismatch map[string]uint64
}

func (a *agreement) add(o agreement) {
	a.rows += o.rows
	a.matched += o.matched
	a.agree += o.agree
	for k, v := range o.mismatch {
		if a.mismatch == nil {
			a.mismatch = map[string]uint64{}
		}
		a.mismatch[k] += v
	}
}

func (a agreement) rate() float64 {
	if a.matched == 0 {
		return 0
	}
	return float64(a.agree) / float64(a.matched)
}

func protoNum(s string) (uint8, bool) {
	switch strings.ToLower(s) {
	case "tcp":
		return capture.ProtoTCP, true
	case "udp":
		return capture.ProtoUDP, true
	case "icmp":
		return capture.ProtoICMP, true
	case "icmp6", "icmpv6":
		return capture.ProtoICMPv6, true
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 0 && n < 256 {
		return uint8(n), true
	}
	return 0, false
}

func mkRow(oh, op, rh, rp, proto, state string) (truthRow, bool) {
	o, err1 := netip.ParseAddr(oh)
	r, err2 := netip.ParseAddr(rh)
	opn, err3 := strconv.ParseUint(op, 10, 16)
	rpn, err4 := strconv.ParseUint(rp, 10, 16)
	pn, ok := protoNum(proto)
	st, err5 := acsm.ParseConnState(state)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil || !ok {
		return truthRow{}, false
	}
	return truthRow{key: capture.Key{Src: o.Unmap(), Dst: r.Unmap(), SrcPort: uint16(opn), DstPort: uint16(rpn), Proto: pn}, state: st}, true
}

// readGenTruth reads a flowmon gen truth sidecar: JSON lines with orig_h,
// orig_p, resp_h, resp_p, proto and conn_state (Zeek's "id." prefixes are
// accepted too).
func readGenTruth(name string) ([]truthRow, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read truth: %w", err)
	}
	defer f.Close()
	var rows []truthRow
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		get := func(k string) string {
			v, ok := m[k]
			if !ok {
				v = m["id."+k]
			}
			switch x := v.(type) {
			case string:
				return x
			case float64:
				return strconv.FormatFloat(x, 'f', -1, 64)
			}
			return ""
		}
		if r, ok := mkRow(get("orig_h"), get("orig_p"), get("resp_h"), get("resp_p"), get("proto"), get("conn_state")); ok {
			rows = append(rows, r)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read truth %s: %w", name, err)
	}
	return rows, nil
}

// readZeekTruth reads the rows of zeek_conn.tsv whose trace column names
// trace (matched on the path's tail), one per distinct flow and state.
func readZeekTruth(name, trace string) ([]truthRow, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read zeek truth: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	var col map[string]int
	seen := map[truthRow]bool{}
	var rows []truthRow
	tr := filepath.ToSlash(trace)
	for sc.Scan() {
		fs := strings.Split(sc.Text(), "\t")
		if col == nil {
			col = map[string]int{}
			for i, h := range fs {
				col[h] = i
			}
			for _, need := range []string{"trace", "orig_h", "orig_p", "resp_h", "resp_p", "proto", "conn_state"} {
				if _, ok := col[need]; !ok {
					return nil, fmt.Errorf("read zeek truth %s: no %s column", name, need)
				}
			}
			continue
		}
		if len(fs) < len(col) {
			continue
		}
		t := fs[col["trace"]]
		if tr != t && !strings.HasSuffix(tr, "/"+t) {
			continue
		}
		r, ok := mkRow(fs[col["orig_h"]], fs[col["orig_p"]], fs[col["resp_h"]], fs[col["resp_p"]], fs[col["proto"]], fs[col["conn_state"]])
		if !ok || seen[r] {
			continue
		}
		seen[r] = true
		rows = append(rows, r)
	}
	return rows, sc.Err()
}

// compare scores a run's answers against truth rows.
func compare(rows []truthRow, tf *traceFlows, tr *acsm.Tracker, ans []uint16, keepMismatch bool) agreement {
	a := agreement{rows: uint64(len(rows))}
	for _, r := range rows {
		c, rev := r.key.Canonical()
		idx, ok := tf.index[c]
		if !ok {
			continue
		}
		a.matched++
		st, dst := tr.ValueState(ans[idx])
		if st == r.state && dst == rev {
			a.agree++
			continue
		}
		if keepMismatch {
			if a.mismatch == nil {
				a.mismatch = map[string]uint64{}
			}
			k := r.state.String() + "->" + st.String()
			if st == r.state {
				k += " (flipped)"
			}
			a.mismatch[k]++
		}
	}
	return a
}

// writeConn writes the conn-out lines of one run.
func writeConn(w *bufio.Writer, tf *traceFlows, tr *acsm.Tracker, ans []uint16) {
	for i, k := range tf.keys {
		st, dst := tr.ValueState(ans[i])
		o := k
		if dst {
			o = k.Reverse()
		}
		fmt.Fprintf(w, `{"id.orig_h":%q,"id.orig_p":%d,"id.resp_h":%q,"id.resp_p":%d,"proto":%q,"conn_state":%q}`+"\n",
			o.Src.String(), o.SrcPort, o.Dst.String(), o.DstPort, capture.ProtoName(o.Proto), st.String())
	}
}
