package gen

import (
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/flowmon/flowmon/capture"
)

// spanStart is the first packet time of a SPANStream.
var spanStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// streamFlow is one synthetic flow of the test stream.
type streamFlow struct {
	key      capture.Key // canonical
	tcp      bool
	v6       bool
	seq, ack [2]uint32
	ipid     [2]uint32
}

// SPANPacket is one packet of a SPANStream and whether it is a SPAN
// duplicate of one before it.
type SPANPacket struct {
	P   capture.Packet
	Dup bool
}

// SPANStream builds a synthetic packet stream for dedup's tests and evaluation: n packets at pps packets per second over flows flows, and
// adds a SPAN duplicate of a packet with probability dupRate: the same
// packet again 1 µs to maxDelay later, with a different TTL and VLAN count
// (what a mirror port changes). Payload bytes live in one arena per packet.
func SPANStream(seed uint64, n, flows int, pps float64, dupRate float64, maxDelay time.Duration) []SPANPacket {
	r := rand.New(rand.NewPCG(seed, 99))
	fs := make([]streamFlow, flows)
	for i := range fs {
		f := &fs[i]
		f.tcp = r.IntN(5) != 0
		f.v6 = r.IntN(4) == 0
		var a, b netip.Addr
		if f.v6 {
			var x, y [16]byte
			x[0], y[0] = 0x20, 0x20
			for j := 1; j < 16; j++ {
				x[j], y[j] = byte(r.Uint32()), byte(r.Uint32())
			}
			a, b = netip.AddrFrom16(x), netip.AddrFrom16(y)
		} else {
			a = netip.AddrFrom4([4]byte{10, byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())})
			b = netip.AddrFrom4([4]byte{192, 168, byte(r.Uint32()), byte(r.Uint32())})
		}
		proto := uint8(capture.ProtoUDP)
		if f.tcp {
			proto = capture.ProtoTCP
		}
		f.key, _ = capture.Key{Src: a, Dst: b, SrcPort: uint16(1024 + r.IntN(60000)), DstPort: uint16(1 + r.IntN(1023)), Proto: proto}.Canonical()
		f.seq = [2]uint32{r.Uint32(), r.Uint32()}
		f.ack = f.seq
		f.ipid = [2]uint32{r.Uint32() & 0xffff, r.Uint32() & 0xffff}
	}
	type pending struct {
		at time.Time
		p  capture.Packet
	}
	var queue []pending
	out := make([]SPANPacket, 0, n+n/20)
	gap := time.Duration(float64(time.Second) / pps)
	now := spanStart
	for len(out) < n {
		// Emit the duplicates that are due, oldest first.
		for i := 0; i < len(queue); {
			if !queue[i].at.After(now) {
				d := queue[i].p
				d.Timestamp = queue[i].at
				out = append(out, SPANPacket{P: d, Dup: true})
				queue = append(queue[:i], queue[i+1:]...)
				continue
			}
			i++
		}
		f := &fs[r.IntN(len(fs))]
		dir := r.IntN(2)
		p := capture.Packet{Timestamp: now, Key: f.key, Reversed: dir == 1, Hash: f.key.Hash(), TTL: 64, VLANs: 0}
		if f.v6 {
			p.EtherType = 0x86DD
		} else {
			p.EtherType = 0x0800
			f.ipid[dir] = (f.ipid[dir] + 1) & 0xffff
			p.IPID = f.ipid[dir]
		}
		pl := r.IntN(1400)
		if f.tcp {
			p.HasTCP = true
			p.Flags = capture.ACK | capture.PSH
			p.Seq, p.Ack = f.seq[dir], f.seq[1-dir]
			p.Window = uint16(r.Uint32())
			f.seq[dir] += uint32(pl)
			if pl == 0 {
				p.Flags = capture.ACK
			}
		}
		p.PayloadLen = uint32(pl)
		p.IPLen = uint16(pl + 40)
		capLen := min(pl, 64)
		p.Payload = make([]byte, capLen)
		for j := range p.Payload {
			p.Payload[j] = byte(r.Uint32())
		}
		out = append(out, SPANPacket{P: p})
		if r.Float64() < dupRate {
			d := p
			d.TTL = 63 - uint8(r.IntN(3))
			d.VLANs = uint8(1 + r.IntN(2))
			delay := time.Microsecond + time.Duration(r.Int64N(int64(maxDelay)))
			queue = append(queue, pending{at: now.Add(delay), p: d})
		}
		now = now.Add(gap)
	}
	return out
}
