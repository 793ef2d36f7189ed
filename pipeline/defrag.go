package pipeline

import (
	"fmt"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/capture/defrag"
)

// attachDefrag gives src a reassembler of its own, with cfg's bounds,
// when src can take one (capture.DefragSource) and reassembly is on: a
// source is read by one goroutine (the replay's reader, a live shard's
// feeder), so its reassembler needs no lock.
func attachDefrag(cfg *Config, src capture.Source) error {
	ds, ok := src.(capture.DefragSource)
	if cfg.NoDefrag || !ok {
		return nil
	}
	dc := cfg.Defrag.WithDefaults()
	dc.Decode = cfg.Decode
	r, err := defrag.New(dc)
	if err != nil {
		return fmt.Errorf("build the fragment reassembler: %w", err)
	}
	ds.SetDefragmenter(r)
	return nil
}

// DefragSummary is the summary's account of fragment reassembly, summed
// over the sources (capture.DefragStats).
type DefragSummary struct {
	Fragments uint64            `json:"fragments"`         // taken in: not packets of their own
	Datagrams uint64            `json:"datagrams"`         // reassembled, each one packet
	Dropped   map[string]uint64 `json:"dropped_fragments"` // taken, then dropped, by reason
	Held      uint64            `json:"held_fragments"`    // in datagrams not yet whole at the end
	Passed    uint64            `json:"passed_fragments"`  // handed on unreassembled: cut short by the snaplen
}

func defragSummary(st *capture.DefragStats) *DefragSummary {
	if st.Fragments == 0 && st.Passed == 0 {
		return nil
	}
	return &DefragSummary{Fragments: st.Fragments, Datagrams: st.Datagrams, Dropped: st.DroppedCounts(),
		Held: st.Held, Passed: st.Passed}
}
