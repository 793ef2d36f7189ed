// Package dleft is the ACSM's one-probe store: Bonomi, Mitzenmacher,
// Panigrahy, Singh and Varghese's d-left fingerprint table ("Beyond Bloom
// Filters: From Approximate Membership Checks to Approximate State
// Machines", SIGCOMM 2006, Section 4, and the permutation construction of
// their "An Improved Construction for Counting Bloom Filters", ESA 2006)
// with the flow's aging tag kept inside its cell, so that one lookup (two
// cache lines, fetched together) answers for a flow of any tier and no
// generations are probed.
//
// # Layout
//
// d = 2 subtables of B buckets; a bucket is 16 cells of 32 bits, one
// 64-byte cache line. A cell is
//
//	bits 31..s+4   fingerprint, f = 28-s bits (0: the cell is empty)
//	bits s+3..s    tag: 4 bits of coarse packet time (see Aging)
//	bits s-1..0    state, s = bits.Len(Values) bits; all ones is "don't know"
//
// For the Zeek machine (276 values) s = 9 and f = 19; for the flag machine
// (128 values) s = 8 and f = 20. At the default load a = 4/5 a flow costs
// 4/a = 5 bytes. The load is set by the overflows under churn (flows
// ending at random while new ones arrive, which leaves d-left's buckets
// less even than a fill): at 4/5 one insert in 5.5e4 finds both buckets
// full, at 5/6 (4.8 bytes) one in 1400, at 7/8 (4.57 bytes) one in 160;
// a fill alone overflows at none of them (200k flows).
//
// # Faithful to the paper
//
// A flow hash x gives a bucket b in [0,B) and a remainder r of f bits. Its
// place in subtable i is a permutation P_i of (b, r): P_0 is the identity
// and P_1(b, r) = (b1, r XOR G(b1)) with b1 = b + H(r) mod B, which is
// invertible. Two flows therefore share a bucket and fingerprint in one
// subtable only if they share (b, r), and then they share them in both:
// a fingerprint occurs at most once among a flow's two buckets, and a
// lookup stops at the first match (the bucket of subtable 0 is read
// first). (Remainder 0 is stored as 1, since 0 marks an empty cell: the
// flows of those two remainders, 2^-f of them, may collide in one
// subtable only; a lookup that would see two matches is not possible with
// the first-match rule, and an insert that finds one makes it "don't
// know", below.)
//
//   - Insert(x, v): the less loaded of the two buckets (subtable 0 on a
//     tie: d-left) takes (fingerprint, tag, v) in a free cell. If a cell of
//     x's buckets already carries x's fingerprint, the two flows cannot be
//     told apart: that cell's state becomes "don't know" (DK), as the
//     paper does, and ages out like a new flow. When both buckets are full
//     of live cells the insert is refused (ErrFull, the paper's overflow).
//   - Query(x): the matching cell's state; "don't know" for DK; absent
//     when no cell matches.
//   - Update / Delete: the matching cell is rewritten or emptied.
//
// A flow never inserted is reported present when another flow has its
// (b, r): probability n/(B 2^f) = a*d*16/2^f per lookup (load a), 4.9e-5
// for the Zeek machine at a = 4/5. Two live flows sharing (b, r) make a
// wrong state or DK with about the same probability per flow.
//
// # Aging (beyond the paper)
//
// The paper deletes idle flows with a timer bit per cell cleared by a
// periodic sweep. Here each tier (new, established, closed: the state says
// which) has a tick of timeout/8 and a cell's tag is the tick count of its
// last write, mod 16. At packet time now a cell is expired when
// (tick(now) - tag) mod 16 > 8: a flow idle for at most its timeout is
// always kept, one idle for timeout + tick (9/8 of it) or more is always
// gone. An expired cell is free: a lookup that matches one empties it
// and answers absent, an insert reuses it. Since tags wrap after 16 ticks,
// an incremental sweep visits every bucket at least once per 6 ticks of
// the shortest tier (45 s with the default 60 s new-flow timeout, a few
// buckets per Advance), so no cell goes unexamined for more than 15 ticks
// and its age is never read modulo the wrap. A timeout of 0 turns aging
// off for its tier.
//
// The table is fixed-size and nothing on its packet path allocates. A
// Table is not safe for concurrent use.
package dleft
