package pipeline

import (
	"fmt"
	"math"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/evalstat"
)

// Summary is what `flowmon replay` reports. Its JSON keys are a public
// interface (scripts and tests read them): add keys, never rename one.
type Summary struct {
	Files            []string          `json:"files"`
	Interface        string            `json:"interface,omitempty"` // a live run's
	Packets          uint64            `json:"packets"`
	Filtered         uint64            `json:"filtered_packets,omitempty"` // frames a replay's --filter left out
	Bytes            uint64            `json:"bytes"`
	Decoded          uint64            `json:"decoded_packets"`
	Flows            uint64            `json:"flows"`
	LinkTypes        map[string]uint64 `json:"link_types"`
	Network          map[string]uint64 `json:"network"`
	Transport        map[string]uint64 `json:"transport"`
	DecodeErrors     map[string]uint64 `json:"decode_errors"`
	Skipped          map[string]uint64 `json:"skipped"` // well-formed frames without an IP flow
	TraceStart       time.Time         `json:"trace_start"`
	TraceEnd         time.Time         `json:"trace_end"`
	TraceSeconds     float64           `json:"trace_seconds"`
	RunSeconds       float64           `json:"run_seconds"`
	PacketsPerSecond float64           `json:"packets_per_second"`
	ReadError        string            `json:"read_error,omitempty"`
	// Defrag is the fragment reassembly's account, when there were
	// fragments and it was on.
	Defrag *DefragSummary `json:"defrag,omitempty"`

	// Stage keys.
	UniquePackets uint64 `json:"unique_packets"` // decoded packets less duplicates
	// Duplicates is the packets dedup dropped as copies of one seen within
	// its window (0 with no-dedup): packets Zeek counts in its conn.log,
	// as --no-dedup (the zeek profile) does.
	Duplicates       uint64            `json:"duplicates"`
	Retransmissions  uint64            `json:"retransmissions"`
	DedupMemoryBytes uint64            `json:"dedup_memory_bytes"`
	DedupWindow      string            `json:"dedup_window,omitempty"` // the duplicate window's structure: table or fbf (none without dedup)
	ConnStates       map[string]uint64 `json:"conn_states"`
	Anomalies        map[string]uint64 `json:"anomalies"`
	ACSM             *ACSMSummary      `json:"acsm,omitempty"`
	Workers          int               `json:"workers,omitempty"`
	FlowsTimedOut    uint64            `json:"flows_timed_out"` // records written for flows idle past their timeout
	// FlowsAtCap counts the flows of FlowsTimedOut that the flow table
	// timed out early because it held max-flows (overload).
	FlowsAtCap uint64 `json:"flows_timed_out_at_cap"`
	// FlowsShed counts the flows the table did not enter because it held
	// max-flows when their SYN came (flowtable.Table.shed): they are in Flows
	// and ConnStates, without a record.
	FlowsShed uint64 `json:"flows_shed_at_cap"`
	// Alerts counts the alerts each rule raised (with rules; a repeat
	// inside a rule's suppress window folds into its alert and counts in
	// AlertsSuppressed instead).
	Alerts           map[string]uint64 `json:"alerts,omitempty"`
	AlertsSuppressed uint64            `json:"alerts_suppressed"`
	// A live run's keys. The kernel's counts of the packets it handed
	// the capture sockets and of those it dropped because flowmon did
	// not keep up (AF_PACKET's PACKET_STATISTICS, libpcap's stats):
	// absent in a replay.
	KernelPackets *uint64 `json:"kernel_packets,omitempty"`
	KernelDrops   *uint64 `json:"kernel_drops,omitempty"`
	// KernelFreezes counts the times a capture ring filled and the
	// kernel froze it (AF_PACKET; 0 for libpcap), KernelIfDrops the
	// packets the interface dropped (libpcap; 0 for AF_PACKET).
	KernelFreezes *uint64 `json:"kernel_ring_freezes,omitempty"`
	KernelIfDrops *uint64 `json:"kernel_interface_drops,omitempty"`
	// EBPF is the eBPF capture program's own counts, in a live run on
	// its source (xdp or tc): absent otherwise.
	EBPF *EBPFSummary `json:"ebpf,omitempty"`
	// KernelState is the kernel flow state's account (--flow-state
	// kernel): absent when the flows are kept in user space.
	KernelState *KernelStateSummary `json:"kernel_state,omitempty"`
	// SourceStops counts the times a live source stopped because its
	// interface went down or away (each stop logged, and counted by
	// source in flowmon_capture_source_stops_total): absent when none
	// did.
	SourceStops *uint64 `json:"source_stops,omitempty"`
	// SnapshotFlows is the open flows written to the state snapshot when
	// the run stopped: they go on in the next run, which reports them
	// (RestoredFlows), and are not in this run's flows or conn_states.
	SnapshotFlows *uint64 `json:"snapshot_flows,omitempty"`
	// RestoredFlows is the open flows this run took over from a snapshot:
	// they count in flows and conn_states here.
	RestoredFlows *uint64 `json:"restored_flows,omitempty"`
	// Records are what each flow record sink took in this run (the flow
	// log: "connlog"), and what it failed to take; absent without sinks.
	Records map[string]SinkRecords `json:"records,omitempty"`
	// OTLP is the OTLP exporter's delivery (record/otlp), absent without
	// one: filled by the caller that opened it, not by the pipeline.
	OTLP *ExportSummary `json:"otlp,omitempty"`
	// Warnings say what makes a result less than it seems (an ACSM over
	// its error target); the command prints them on stderr.
	Warnings []string `json:"warnings,omitempty"`
}

// SinkRecords are a flow record sink's counts in a summary.
type SinkRecords struct {
	Written uint64 `json:"written"` // records it took
	Failed  uint64 `json:"failed"`  // records of batches it did not take
	// Dropped are records it took and lost later (an IPFIX collector's
	// queue full, a send failed, the queue unsent at the end).
	Dropped uint64 `json:"dropped"`
}

// ExportSummary is a network exporter's delivery at the end of a run.
type ExportSummary struct {
	Sent    uint64 `json:"sent"`    // records the destination took
	Dropped uint64 `json:"dropped"` // records lost, all reasons
	// DroppedBy splits Dropped by reason (the exporter's metric's
	// reason label).
	DroppedBy map[string]uint64 `json:"dropped_by"`
	Batches   uint64            `json:"batches"` // requests taken
	Retries   uint64            `json:"retries"` // requests sent again after a failure
}

// EBPFSummary is the eBPF capture program's part of a live run's summary:
// its counters summed over the CPUs and rings (capture.EBPFCounters).
// Records delivered are the summary's packets; Seen less SampledOut and
// FilteredOut is KernelPackets, and Lost is KernelDrops.
type EBPFSummary struct {
	// Attached says where the program ran: "xdp driver", "xdp generic",
	// "tcx" (TC through TCX links) or "clsact" (TC through a clsact
	// qdisc's filters, on kernels without TCX).
	Attached string `json:"attached"`
	// SampleOneIn is the sampling rate when sampling is on: 1 flow kept
	// in this many. Absent when every flow is kept.
	SampleOneIn   uint32            `json:"sample_one_in,omitempty"`
	Seen          uint64            `json:"seen_packets"`
	Emitted       uint64            `json:"emitted_records"`
	Raw           uint64            `json:"raw_records"` // of Emitted: frames handed up whole (tunnels), decoded in user space
	Lost          uint64            `json:"lost_records"`
	SampledOut    uint64            `json:"sampled_out_packets"`
	FilteredOut   uint64            `json:"filtered_out_packets"`
	ParseFailures map[string]uint64 `json:"parse_failures"` // frames that did not parse, by reason
}

// ACSMSummary is the state tracker's part of the summary.
type ACSMSummary struct {
	Backend     string            `json:"backend"`
	Machine     string            `json:"machine"`
	MemoryBytes int64             `json:"memory_bytes"`
	NewFlows    uint64            `json:"new_flows"`
	Unknown     uint64            `json:"unknown_packets"`
	Counters    acsm.BackendStats `json:"backend_counters"`
	Shadow      ShadowSummary     `json:"shadow"`
}

// ShadowSummary is the shadow exact tracker's measured disagreement with
// the approximate backend (acsm.ShadowStats).
type ShadowSummary struct {
	Rate           int     `json:"sample_one_in"`
	Target         float64 `json:"target_error_rate"`
	Checks         uint64  `json:"checks"`
	FalsePositives uint64  `json:"false_positives"`
	FalseNegatives uint64  `json:"false_negatives"`
	WrongState     uint64  `json:"wrong_state"`
	ErrorRate      float64 `json:"error_rate"`
	// ErrorBound is the error rate's one-sided upper bound at 95%
	// confidence (evalstat.UpperBound): what the checks rule out. A few
	// checks without an error rule out little (0 in 14: 19%).
	ErrorBound float64 `json:"error_rate_upper_95"`
}

func acsmSummary(st acsm.Stats, c acsm.Counts) *ACSMSummary {
	sh := st.Shadow
	return &ACSMSummary{
		Backend: st.Backend, Machine: st.Machine, MemoryBytes: st.MemoryBytes,
		NewFlows: c.NewFlows, Unknown: c.Unknown, Counters: st.BackendStats,
		Shadow: ShadowSummary{Rate: sh.Rate, Checks: sh.Checks, FalsePositives: sh.FalsePositives,
			FalseNegatives: sh.FalseNegatives, WrongState: sh.WrongState, ErrorRate: sh.ErrorRate()},
	}
}

func (s *Summary) fill(st *capture.Stats) {
	s.Packets = st.Packets
	s.Filtered = st.Filtered
	s.Bytes = st.Bytes
	s.Decoded = st.Decoded
	s.LinkTypes = st.LinkCounts()
	s.Network = st.NetworkCounts()
	s.Transport = st.TransportCounts()
	s.DecodeErrors = st.DecodeErrors()
	s.Defrag = defragSummary(&st.Defrag)
	s.Skipped = map[string]uint64{}
	if n := st.Skipped[capture.ReasonNotIP]; n > 0 {
		s.Skipped[capture.ReasonNotIP.String()] = n
	}
	if !s.TraceStart.IsZero() {
		s.TraceSeconds = s.TraceEnd.Sub(s.TraceStart).Seconds()
	}
}

// timed sets the run's duration, from start to now, and its packet rate.
func (s *Summary) timed(start time.Time) {
	s.RunSeconds = time.Since(start).Seconds()
	if s.RunSeconds > 0 {
		s.PacketsPerSecond = float64(s.Packets) / s.RunSeconds
	}
}

// add sums two shards' summaries (nil is the empty one).
func (a *ACSMSummary) add(b *ACSMSummary) *ACSMSummary {
	if a == nil {
		return b
	}
	a.MemoryBytes += b.MemoryBytes
	a.NewFlows += b.NewFlows
	a.Unknown += b.Unknown
	a.Counters.Add(b.Counters)
	sh, e := &a.Shadow, b.Shadow
	sh.Checks += e.Checks
	sh.FalsePositives += e.FalsePositives
	sh.FalseNegatives += e.FalseNegatives
	sh.WrongState += e.WrongState
	if sh.Checks > 0 {
		sh.ErrorRate = float64(sh.errors()) / float64(sh.Checks)
	}
	return a
}

func (sh *ShadowSummary) errors() uint64 {
	return sh.FalsePositives + sh.FalseNegatives + sh.WrongState
}

// OverTarget reports whether the measured error is above the target by
// more than chance: more errors than 3 standard deviations (Poisson)
// above the Checks*Target expected, plus 3 so that a handful of checks
// never warns. A small trace then passes unless clearly overloaded.
func (sh *ShadowSummary) OverTarget() bool {
	want := float64(sh.Checks) * sh.Target
	return float64(sh.errors()) > want+3*math.Sqrt(want)+3
}

// Confidence is the confidence of ErrorBound.
const Confidence = 0.95

// bound fills ErrorBound from the checks.
func (sh *ShadowSummary) bound() {
	sh.ErrorBound = evalstat.UpperBound(sh.errors(), sh.Checks, Confidence)
}

// WithinTarget reports whether the checks show the error within the
// target: its upper bound at 95% confidence is no more than the target.
func (sh *ShadowSummary) WithinTarget() bool {
	return sh.Checks > 0 && sh.ErrorBound <= sh.Target
}

// warn fills s.Warnings from the stages' figures.
func (s *Summary) warn(capacity int) {
	if a := s.ACSM; a != nil && a.Shadow.OverTarget() {
		sh := a.Shadow
		s.Warnings = append(s.Warnings, fmt.Sprintf(
			"the ACSM's measured error %.4g (%d errors in %d checks) is above its target %g: "+
				"it holds more concurrent flows than capacity %d sizes it for; raise the capacity setting",
			sh.ErrorRate, sh.errors(), sh.Checks, sh.Target, capacity))
	}
	// A full table loses flows' states whatever the shadow measured: its
	// sample of flows can miss every one that was refused or shed.
	if a := s.ACSM; a != nil && (a.Counters.InsertFailures > 0 || a.Counters.Shed > 0) {
		s.Warnings = append(s.Warnings, fmt.Sprintf(
			"the ACSM's table was full: %d new flows refused and %d idle half-open flows shed for new ones, "+
				"whose states it lost (their packets start flows again, so flows and conn_states are not the trace's); "+
				"capacity %d is too small for the concurrent flows: raise the capacity setting",
			a.Counters.InsertFailures, a.Counters.Shed, capacity))
	}
	if p, d := s.KernelPackets, s.KernelDrops; p != nil && d != nil && *p > 0 && *d*dropWarnShare > *p {
		s.Warnings = append(s.Warnings, fmt.Sprintf(
			"the kernel dropped %d of the %d packets it passed the capture (%.1f%%): the capture fell behind; "+
				"more workers, a bigger ring, or a filter would take less", *d, *p, 100*float64(*d)/float64(*p)))
	}
}

// dropWarnShare: a live run whose kernel dropped more than 1/dropWarnShare
// of its packets says so in its summary's warnings.
const dropWarnShare = 4
