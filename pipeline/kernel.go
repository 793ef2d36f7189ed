package pipeline

import (
	"errors"
	"fmt"
	"time"
)

// KernelStateSummary is the kernel flow state's account of a run: how
// many frames each side handled, and what became of the flows it kept.
type KernelStateSummary struct {
	// Frames is every frame the program saw; Counted those its flows'
	// cells took, Duplicates those its duplicate window held (left out,
	// as the dedup stage leaves them out; in Summary.Duplicates too),
	// ToUser those it left to user space whole (tunnels,
	// fragments, what it does not parse), InsertFailed those of new
	// flows that found its map full (counted, not kept) and Malformed
	// those it found broken (left to user space, which counts them by
	// reason).
	Frames       uint64 `json:"frames"`
	Counted      uint64 `json:"packets_counted"`
	Duplicates   uint64 `json:"duplicates"`
	ToUser       uint64 `json:"frames_to_user"`
	InsertFailed uint64 `json:"insert_failed"`
	Malformed    uint64 `json:"malformed"`
	// Flows is the flows it started, Answered those that left S0 (their
	// answered event read), Records those whose final record was
	// written, TimedOut those of them found idle by the sweep.
	Flows    uint64 `json:"flows"`
	Answered uint64 `json:"flows_answered"`
	Records  uint64 `json:"records"`
	TimedOut uint64 `json:"flows_timed_out"`
	// Events is the flow events read; EventsLost those the full ring did
	// not take, and RecordsLost the flows whose final counts went with
	// them.
	Events      uint64 `json:"events"`
	EventsLost  uint64 `json:"events_lost"`
	RecordsLost uint64 `json:"records_lost"`
	// Cells is the most flows its map holds, and MemoryBytes what the
	// kernel charges for its maps: both fixed by the settings.
	Cells       int    `json:"cells"`
	MemoryBytes uint64 `json:"memory_bytes"`
}

// finishKernel writes the records of the flows the kernel still holds,
// fills the summary's kernel keys and releases the program.
func (p *Pipeline) finishKernel(s *Summary, end time.Time) error {
	if p.kernel == nil {
		return nil
	}
	err := p.kernel.Finish()
	for _, c := range p.kcons {
		if cerr := c.Finish(end); cerr != nil && err == nil {
			err = cerr
		}
	}
	if p.kout != nil {
		p.kout.flush()
	}
	for k, v := range p.kernel.States() {
		s.ConnStates[k] += v
	}
	st, serr := p.kernel.Stats()
	if err == nil && serr != nil {
		err = serr
	}
	s.Flows += st.Started
	s.FlowsTimedOut += st.TimedOut
	s.KernelState = &KernelStateSummary{Frames: st.Seen, Counted: st.Counted, Duplicates: st.Duplicates, ToUser: st.Whole,
		InsertFailed: st.InsertFailed, Malformed: st.Malformed, Flows: st.Started, Answered: st.Answered, Records: st.Records,
		TimedOut: st.TimedOut, Events: st.Events, EventsLost: st.EventsLost, RecordsLost: st.RecordsLost, Cells: st.Cells,
		MemoryBytes: st.MemoryBytes}
	if cerr := p.kernel.Close(); err == nil && cerr != nil {
		err = cerr
	}
	p.kernel = nil
	if err != nil {
		return fmt.Errorf("finish the kernel flow state: %w", err)
	}
	return nil
}

// errNoFrames is a kernel-state replay's source that cannot hand frames
// over before decoding them.
var errNoFrames = errors.New("the kernel flow state needs a capture file's frames: this source decodes its own")
