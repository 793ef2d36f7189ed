package dedup

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/snapshot"
)

// State format, version 2 (little-endian):
//
//	"DDUP" 2           tag and version
//	params             the configuration (window, rate, error rates, the
//	                   windows' structure, N, payload bytes, layout,
//	                   retransmission window) and a digest of the
//	                   fingerprints of a fixed packet
//	3 x 8              packets, duplicates, retransmissions
//	3 x 8              the same as last published (what Stats reads)
//	8 + window         the duplicate window (recent.Table.AppendState, or
//	                   fbf.FBF.AppendState with Config.FBF)
//	1 [8 + window]     whether a retransmission window follows, and it
//
// A version-1 state (FBF windows only) is refused by its version.
//
// A restart usually takes longer than the 50 ms window, so the restored
// duplicate window is mostly forgotten at the first packet; it is kept
// anyway, for a fast restart and for the retransmission window, which
// remembers seconds.
const (
	stateTag     = "DDUP"
	stateVersion = 2
)

// probePacket pins the fingerprint functions in the params: the filters
// hold fingerprints, so a build that computes them differently must not
// read them.
var probePacket = capture.Packet{
	Key: capture.Key{Src: netip.MustParseAddr("192.0.2.1"), Dst: netip.MustParseAddr("198.51.100.2"),
		SrcPort: 40000, DstPort: 443, Proto: capture.ProtoTCP},
	HasTCP: true, Flags: capture.PSH | capture.ACK, IPID: 7, IPLen: 140, Window: 512, Seq: 1000, Ack: 2000,
	PayloadLen: 100, Payload: []byte("fingerprint probe: these bytes only pin the hash"),
}

func (d *Dedup) stateParams() []snapshot.Param {
	c, r := d.cfg, d.cfg.Retrans
	P := snapshot.P
	ps := []snapshot.Param{
		P("window", c.Window), P("packets_per_window", c.PacketsPerWindow), P("fp_rate", c.FPRate),
		P("fbf", c.FBF), P("past", c.Past), P("payload_bytes", c.PayloadBytes), P("standard", c.Standard),
		P("retrans", r.Enabled),
	}
	if r.Enabled {
		ps = append(ps, P("retrans_window", r.Window), P("retrans_packets_per_window", r.PacketsPerWindow),
			P("retrans_fp_rate", r.FPRate))
	}
	return append(ps, P("hash", snapshot.Digest(d.Fingerprint(&probePacket), segmentPrint(&probePacket))))
}

// AppendState appends the stage's state: both windows' filters and
// clocks, and the counters, with the configuration they belong to. A
// Dedup restored from it with RestoreState classifies every later packet
// as this one would. Owner goroutine only, as CheckPrint.
//
// At the defaults (50,000 packets per 50 ms, 1e-6) it is 1 MB, the
// table's size; in the engine each worker's Dedup is sized for its share.
func (d *Dedup) AppendState(b []byte) ([]byte, error) {
	b = snapshot.AppendTag(b, stateTag, stateVersion)
	b = snapshot.AppendParams(b, d.stateParams())
	for _, x := range [...]uint64{d.packets, d.duplicates, d.retrans,
		d.pub.packets.Load(), d.pub.duplicates.Load(), d.pub.retrans.Load()} {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	b, err := snapshot.AppendBlob(b, d.dup.AppendState)
	if err != nil {
		return b, fmt.Errorf("save dedup: %w", err)
	}
	b = snapshot.AppendBool(b, d.retx != nil)
	if d.retx != nil {
		if b, err = snapshot.AppendBlob(b, d.retx.AppendState); err != nil {
			return b, fmt.Errorf("save dedup: %w", err)
		}
	}
	return b, nil
}

// RestoreState replaces the stage's state with the one AppendState wrote
// in b. It is meant for a Dedup just built by New with the configuration
// the state was saved with: a state of another configuration is refused
// with an error wrapping snapshot.ErrIncompatible that names the first
// setting that differs, a malformed one with snapshot.ErrDamaged. On
// error the Dedup is unchanged. It replaces the filters Stats reads, so
// it runs before the Dedup is shared with a metrics reader.
func (d *Dedup) RestoreState(b []byte) error {
	dec := snapshot.NewDecoder("dedup", b)
	dec.Tag(stateTag, stateVersion)
	dec.Params(d.stateParams())
	var n [6]uint64
	for i := range n {
		n[i] = dec.U64()
	}
	dup := dec.Blob()
	var retx []byte
	if has := dec.Bool(); has != (d.retx != nil) && dec.Err() == nil {
		dec.Failf("retransmission window %t in the state, %t configured", has, d.retx != nil)
	} else if has {
		retx = dec.Blob()
	}
	if err := dec.Done(); err != nil {
		return err
	}
	// Both windows are restored into a fresh stage and swapped in
	// together, so that a bad second window leaves the first untouched.
	fresh, err := New(d.cfg)
	if err != nil {
		return fmt.Errorf("restore dedup: %w", err)
	}
	if err := fresh.dup.RestoreState(dup); err != nil {
		return fmt.Errorf("restore dedup: duplicate window: %w", err)
	}
	if d.retx != nil {
		if err := fresh.retx.RestoreState(retx); err != nil {
			return fmt.Errorf("restore dedup: retransmission window: %w", err)
		}
	}
	d.dup, d.retx = fresh.dup, fresh.retx
	d.packets, d.duplicates, d.retrans = n[0], n[1], n[2]
	d.pub.packets.Store(n[3])
	d.pub.duplicates.Store(n[4])
	d.pub.retrans.Store(n[5])
	return nil
}
