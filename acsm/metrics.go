package acsm

import "sync/atomic"

// publishEvery is how often (in packets) Observe copies its tally and the
// backend's own counters to the atomics that Counts, Stats and the
// collector read.
const publishEvery = 4096

// publish copies the owner-side counters to atomics.
func (t *Tracker) publish() {
	var pub [tallyFields]*atomic.Uint64
	var own [tallyFields]*uint64
	t.c.tallyOf.fields(&pub)
	t.own.fields(&own)
	for i, x := range pub {
		x.Store(*own[i])
	}
	t.c.memory.Store(int64(t.st.memoryBytes()))
	t.c.live.Store(t.st.live())
	if t.shadow != nil {
		t.c.shadowLive.Store(t.shadow.live())
	}
	s := t.st.stats()
	t.c.inserts.Store(s.Inserts)
	t.c.insertFails.Store(s.InsertFailures)
	t.c.updates.Store(s.Updates)
	t.c.deletes.Store(s.Deletes)
	t.c.dontKnow.Store(s.DontKnow)
	t.c.decodeFails.Store(s.DecodeFailures)
	t.c.expired.Store(s.Expired)
	t.c.shed.Store(s.Shed)
}

// Counts are the tracker's flow counts.
type Counts struct {
	Packets  uint64 // packets applied
	Skipped  uint64 // packets ignored (later IP fragments, TCP without a header)
	NewFlows uint64 // flows started
	Unknown  uint64 // packets whose flow state the backend could not tell
	// Ended counts the flows that ended, by final conn_state.
	Ended     map[string]uint64
	Anomalies map[string]uint64
}

// Counts returns the flow counts as last published (every 4096 packets,
// at Flush and AppendState). It allocates (two maps) and may be called
// from any goroutine.
func (t *Tracker) Counts() Counts {
	c := Counts{
		Packets: t.c.packets.Load(), Skipped: t.c.skipped.Load(),
		NewFlows: t.c.newFlows.Load(), Unknown: t.c.unknown.Load(),
		Ended: map[string]uint64{}, Anomalies: map[string]uint64{},
	}
	for i := range t.c.ended {
		if n := t.c.ended[i].Load(); n > 0 {
			c.Ended[ConnState(i).String()] = n
		}
	}
	for i := range t.c.anomalies {
		if n := t.c.anomalies[i].Load(); n > 0 {
			c.Anomalies[anomalyNames[i]] = n
		}
	}
	return c
}

// Stats describe the backend and the shadow's measured accuracy.
type Stats struct {
	Backend     string
	Machine     string
	Values      int   // distinct values the machine stores
	MemoryBytes int64 // the backend's memory (all generations)
	LiveFlows   int64 // flows stored (inserts - deletes - expirations)
	BackendStats
	Shadow ShadowStats
}

// ShadowStats compare the approximate backend with an exact one on a
// hash-sampled share of flows, packet by packet.
type ShadowStats struct {
	Rate           int    // 1 in Rate flows
	Checks         uint64 // sampled packets compared
	FalsePositives uint64 // exact: new flow; approximate: found
	FalseNegatives uint64 // exact: known flow; approximate: absent or unknown
	WrongState     uint64 // both found, different state or orientation
	LiveFlows      int64  // flows in the shadow
}

// ErrorRate is the share of sampled packets on which the two disagreed.
func (s ShadowStats) ErrorRate() float64 {
	if s.Checks == 0 {
		return 0
	}
	return float64(s.FalsePositives+s.FalseNegatives+s.WrongState) / float64(s.Checks)
}

// Stats returns the backend's figures as last published (every 4096
// packets and at Flush). It may be called from any goroutine.
func (t *Tracker) Stats() Stats {
	s := Stats{
		Backend: t.cfg.Backend.String(), Machine: t.cfg.Machine.String(), Values: t.m.values,
		MemoryBytes: t.c.memory.Load(), LiveFlows: t.c.live.Load(),
		BackendStats: BackendStats{
			Inserts: t.c.inserts.Load(), InsertFailures: t.c.insertFails.Load(),
			Updates: t.c.updates.Load(), Deletes: t.c.deletes.Load(),
			DontKnow: t.c.dontKnow.Load(), DecodeFailures: t.c.decodeFails.Load(),
			Expired: t.c.expired.Load(), Shed: t.c.shed.Load(),
		},
	}
	if t.shadow != nil {
		s.Shadow = ShadowStats{Rate: t.cfg.ShadowRate, Checks: t.c.shChecks.Load(),
			FalsePositives: t.c.shFP.Load(), FalseNegatives: t.c.shFN.Load(),
			WrongState: t.c.shWrong.Load(), LiveFlows: t.c.shadowLive.Load()}
	}
	return s
}

// Sample is one metric value, for exporters: the engine's collector turns
// samples into Prometheus metrics named flowmon_acsm_<Name>.
type Sample struct {
	Name       string // without the flowmon_acsm_ prefix
	Help       string
	Counter    bool   // else a gauge
	Label      string // one label name, or ""
	LabelValue string
	Value      float64
}

// Samples calls fn for every metric of the tracker. It may be called from
// any goroutine (it reads the published atomics).
func (t *Tracker) Samples(fn func(Sample)) {
	cnt := func(name, help string, v uint64, label, lv string) {
		fn(Sample{Name: name, Help: help, Counter: true, Label: label, LabelValue: lv, Value: float64(v)})
	}
	cnt("packets_total", "Packets applied to the flow state machine.", t.c.packets.Load(), "", "")
	cnt("flows_total", "Flows started.", t.c.newFlows.Load(), "", "")
	for i := 1; i < int(NumConnStates); i++ {
		cnt("flows_ended_total", "Flows ended, by final conn_state.", t.c.ended[i].Load(), "conn_state", ConnState(i).String())
	}
	cnt("unknown_total", "Packets whose flow state the backend could not tell.", t.c.unknown.Load(), "", "")
	for i := range t.c.anomalies {
		cnt("anomalies_total", "TCP flag anomalies, by kind.", t.c.anomalies[i].Load(), "kind", anomalyNames[i])
	}
	fn(Sample{Name: "backend_memory_bytes", Help: "Memory of the state backend.", Label: "backend",
		LabelValue: t.cfg.Backend.String(), Value: float64(t.c.memory.Load())})
	fn(Sample{Name: "backend_flows", Help: "Flows stored in the backend.", Value: float64(t.c.live.Load())})
	const ops = "Backend operations, by kind."
	cnt("backend_operations_total", ops, t.c.inserts.Load(), "op", "insert")
	cnt("backend_operations_total", ops, t.c.insertFails.Load(), "op", "insert_failed")
	cnt("backend_operations_total", ops, t.c.updates.Load(), "op", "update")
	cnt("backend_operations_total", ops, t.c.deletes.Load(), "op", "delete")
	cnt("backend_operations_total", ops, t.c.dontKnow.Load(), "op", "dont_know")
	cnt("backend_operations_total", ops, t.c.decodeFails.Load(), "op", "decode_failed")
	cnt("backend_expired_total", "Flows dropped by aging.", t.c.expired.Load(), "", "")
	cnt("backend_shed_total", "Idle half-open flows evicted to make room for a new flow in a full table: the table is overloaded (a flood of new flows, or capacity too small).", t.c.shed.Load(), "", "")
	if t.shadow == nil {
		return
	}
	cnt("shadow_checks_total", "Packets compared between the backend and the exact shadow.", t.c.shChecks.Load(), "", "")
	const dis = "Shadow comparisons that disagreed, by kind."
	cnt("shadow_disagreements_total", dis, t.c.shFP.Load(), "kind", "false_positive")
	cnt("shadow_disagreements_total", dis, t.c.shFN.Load(), "kind", "false_negative")
	cnt("shadow_disagreements_total", dis, t.c.shWrong.Load(), "kind", "wrong_state")
}
