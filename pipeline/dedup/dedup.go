package dedup

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/flowmon/flowmon/capture"
)

// Verdict is the answer for one packet.
type Verdict uint8

const (
	// Unique: first sight of this packet; count it.
	Unique Verdict = iota
	// Duplicate: the same packet was seen within the window; drop it.
	Duplicate
	// Retransmission: a TCP segment repeated within the retransmission
	// window; count it as a packet (it was sent twice), and note it.
	Retransmission
)

func (v Verdict) String() string {
	switch v {
	case Unique:
		return "unique"
	case Duplicate:
		return "duplicate"
	case Retransmission:
		return "retransmission"
	}
	return fmt.Sprintf("verdict-%d", uint8(v))
}

// Dedup is the duplicate-dropping stage. Build one per worker with New.
type Dedup struct {
	cfg  Config
	dup  window
	retx window // nil unless Retrans.Enabled

	packets, duplicates, retrans uint64
	pub                          struct{ packets, duplicates, retrans atomic.Uint64 }
}

// New returns a Dedup for c (zero fields take their defaults).
func New(c Config) (*Dedup, error) {
	c = c.WithDefaults()
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("new dedup: %w", err)
	}
	dup, err := newWindow(c)
	if err != nil {
		return nil, fmt.Errorf("new dedup: duplicate window: %w", err)
	}
	d := &Dedup{cfg: c, dup: dup}
	if c.Retrans.Enabled {
		// The retransmission window is an FBF whatever Config.FBF says: at
		// its looser target and longer window Bloom filters are the smaller
		// structure (at the defaults, 3 s and 1e-4 at 1 Mpps, 25 MB against
		// the table's 60 MB), and it sees only TCP segments with data.
		r := c.Retrans
		f, err := newFBF(r.Window, r.PacketsPerWindow, r.FPRate, c.Past, !c.Standard)
		if err != nil {
			return nil, fmt.Errorf("new dedup: retransmission window: %w", err)
		}
		d.retx = fbfWindow{f}
	}
	return d, nil
}

// Config returns the configuration in effect (defaults filled).
func (d *Dedup) Config() Config { return d.cfg }

// fingerprint layout (offsets in the stack buffer):
//
//	0  8  flow hash of the canonical key
//	8  1  direction (1 if reversed)
//	9  1  fragment kind
//	10 2  TCP flags
//	12 4  IP ID
//	16 2  IP total length
//	18 2  TCP window
//	20 4  TCP sequence number
//	24 4  TCP acknowledgement number
//	28 4  transport payload length
//	32 n  first n ≤ PayloadBytes captured payload bytes
const fpHeader = 32

func flowHash(p *capture.Packet) uint64 {
	if p.Hash != 0 {
		return p.Hash
	}
	return p.Key.Hash()
}

// Fingerprint returns the packet's identity hash (see the package doc)
// with the configured PayloadBytes. It reads only the configuration, so
// any goroutine may call it, also while the owner runs Check.
func (d *Dedup) Fingerprint(p *capture.Packet) uint64 { return Fingerprint(p, d.cfg.PayloadBytes) }

// Fingerprint returns p's identity hash over its header fields and the
// first payloadBytes (clamped to [0, MaxPayloadBytes]) captured payload
// bytes. It is the only step that reads the payload: a reader computes it
// while the payload is in its buffer and hands the packet, without
// payload, and the fingerprint to the goroutine that runs CheckPrint. It
// allocates nothing.
func Fingerprint(p *capture.Packet, payloadBytes int) uint64 {
	var b [fpHeader + MaxPayloadBytes]byte
	binary.LittleEndian.PutUint64(b[0:], flowHash(p))
	if p.Reversed {
		b[8] = 1
	}
	b[9] = byte(p.Fragment)
	binary.LittleEndian.PutUint16(b[10:], uint16(p.Flags))
	binary.LittleEndian.PutUint32(b[12:], p.IPID)
	binary.LittleEndian.PutUint16(b[16:], p.IPLen)
	binary.LittleEndian.PutUint16(b[18:], p.Window)
	binary.LittleEndian.PutUint32(b[20:], p.Seq)
	binary.LittleEndian.PutUint32(b[24:], p.Ack)
	binary.LittleEndian.PutUint32(b[28:], p.PayloadLen)
	n := copy(b[fpHeader:fpHeader+min(max(payloadBytes, 0), MaxPayloadBytes)], p.Payload)
	return capture.HashBytes(b[:fpHeader+n])
}

// segmentPrint identifies a TCP segment across retransmissions: direction,
// sequence number, payload length and the SYN/FIN/RST flags.
func segmentPrint(p *capture.Packet) uint64 {
	var b [20]byte
	binary.LittleEndian.PutUint64(b[0:], flowHash(p))
	if p.Reversed {
		b[8] = 1
	}
	binary.LittleEndian.PutUint16(b[10:], uint16(p.Flags&(capture.SYN|capture.FIN|capture.RST)))
	binary.LittleEndian.PutUint32(b[12:], p.Seq)
	binary.LittleEndian.PutUint32(b[16:], p.PayloadLen)
	return capture.HashBytes(b[:])
}

// Prefetch starts loading the duplicate window's filter blocks that
// CheckPrint of a packet with fingerprint fp will read (see
// fbf.FBF.Prefetch). It changes nothing.
func (d *Dedup) Prefetch(fp uint64) { d.dup.Prefetch(fp) }

// Check classifies p at its own timestamp and remembers it. It allocates
// nothing. It is CheckPrint(p, d.Fingerprint(p)).
func (d *Dedup) Check(p *capture.Packet) Verdict { return d.CheckPrint(p, d.Fingerprint(p)) }

// CheckPrint classifies p, whose Fingerprint is fp, at its own timestamp
// and remembers it. It reads p's header fields but not its payload, so p
// may be a copy made after the payload's buffer was reused. It allocates
// nothing and does no floating-point work: the filters' estimates are
// published on their own clock (once per second of packet time) and by
// Publish.
func (d *Dedup) CheckPrint(p *capture.Packet, fp uint64) Verdict {
	d.packets++
	if d.packets&1023 == 0 {
		d.publishCounts()
	}
	if d.dup.TestAndAdd(fp, p.Timestamp) {
		d.duplicates++
		return Duplicate
	}
	if d.retx != nil && p.HasTCP && (p.PayloadLen > 0 || p.Flags&(capture.SYN|capture.FIN) != 0) {
		if d.retx.TestAndAdd(segmentPrint(p), p.Timestamp) {
			d.retrans++
			return Retransmission
		}
	}
	return Unique
}

// Seen reports whether p is a duplicate to drop (Check(p) == Duplicate).
func (d *Dedup) Seen(p *capture.Packet) bool { return d.Check(p) == Duplicate }

// Counts returns the packets checked, duplicates and retransmissions so
// far. Owner goroutine only; other goroutines use Stats.
func (d *Dedup) Counts() (packets, duplicates, retransmissions uint64) {
	return d.packets, d.duplicates, d.retrans
}

// Publish makes the current counts and filter state visible to Stats; call
// it at the end of a replay. Check publishes the counts every 1024 packets
// and the filters publish their state every second of packet time; Publish
// also evaluates the filters' false-positive model, which is too costly for
// the packet path.
func (d *Dedup) Publish() {
	d.publishCounts()
	d.dup.Publish()
	if d.retx != nil {
		d.retx.Publish()
	}
}

func (d *Dedup) publishCounts() {
	d.pub.packets.Store(d.packets)
	d.pub.duplicates.Store(d.duplicates)
	d.pub.retrans.Store(d.retrans)
}

// Stats is a snapshot for metrics.
type Stats struct {
	Packets, Duplicates, Retransmissions uint64
	Window                               WindowStats
	Retrans                              WindowStats // zero unless enabled
	RetransEnabled                       bool
}

// Stats returns the last published snapshot. Safe for concurrent use.
func (d *Dedup) Stats() Stats {
	s := Stats{
		Packets:         d.pub.packets.Load(),
		Duplicates:      d.pub.duplicates.Load(),
		Retransmissions: d.pub.retrans.Load(),
		Window:          d.dup.Stats(),
	}
	if d.retx != nil {
		s.Retrans, s.RetransEnabled = d.retx.Stats(), true
	}
	return s
}

// MemoryBytes is the memory of the filters.
func (d *Dedup) MemoryBytes() uint64 {
	m := d.dup.MemoryBytes()
	if d.retx != nil {
		m += d.retx.MemoryBytes()
	}
	return m
}

// EstimatedFPRate is the duplicate window's current estimate of the rate of
// unique packets wrongly dropped. Owner goroutine only.
func (d *Dedup) EstimatedFPRate() float64 { return d.dup.EstimatedFPP() }
