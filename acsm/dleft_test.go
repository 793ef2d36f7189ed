package acsm

import (
	"cmp"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
)

// TestDLeftTierTimeouts: with the dleft backend each flow ages by its own
// tier's timeout (a half-closed flow by the established one: zstate.tier), kept in its cell: found when idle for the timeout,
// absent when idle for 9/8 of it.
func TestDLeftTierTimeouts(t *testing.T) {
	to := DefaultTimeouts
	for _, c := range []struct {
		name    string
		steps   []step
		timeout time.Duration
	}{
		{"new", []step{{true, syn, 0}}, to.New},
		{"established", []step{{true, syn, 0}, {false, synack, 0}, {true, ack, 0}}, to.Established},
		// One side's FIN leaves the flow established, as Zeek keeps a
		// half-closed connection; both FINs end it.
		{"half-closed", []step{{true, syn, 0}, {false, synack, 0}, {true, ack, 0}, {true, finack, 0}}, to.Established},
		{"closed", []step{{true, syn, 0}, {false, synack, 0}, {true, ack, 0}, {true, finack, 0}, {false, finack, 0}}, to.Closed},
	} {
		tr, err := New(Config{Backend: BackendDLeft, Capacity: 1000, FPRate: 0.01, ShadowRate: -1, KeepEnded: true})
		if err != nil {
			t.Fatal(err)
		}
		run(t, tr, capture.ProtoTCP, cli, srv, c.steps)
		last := t0.Add(time.Duration(len(c.steps)-1) * time.Millisecond)
		h := mkPacket(capture.ProtoTCP, cli, srv, c.steps[0], t0).Hash
		tr.Flush(last.Add(c.timeout))
		if _, _, r := tr.QueryHash(h); r != Found {
			t.Errorf("%s: flow idle for its timeout %v is %s", c.name, c.timeout, r)
		}
		tr.Flush(last.Add(c.timeout * 9 / 8).Add(time.Millisecond))
		if _, _, r := tr.QueryHash(h); r != Absent {
			t.Errorf("%s: flow idle for 9/8 of its timeout is %s", c.name, r)
		}
		tr.Flush(last.Add(c.timeout * 9 / 8).Add(time.Millisecond)) // publishes the lookup's expiry
		if s := tr.Stats(); s.Expired != 1 {
			t.Errorf("%s: expired %d, want 1", c.name, s.Expired)
		}
	}
}

// TestDLeftMatchesExact replays generated flows (handshakes, data, FIN or
// RST teardowns, interleaved) at the backend's capacity through dleft and
// the exact backend, and counts the packets whose conn_state differs: the
// rate must stay within a few times the table's false-positive bound (a
// flow whose fingerprint another flow holds).
func TestDLeftMatchesExact(t *testing.T) {
	const flows = 100_000
	r := rand.New(rand.NewPCG(11, 12))
	type pk struct {
		c  netip.AddrPort
		st step
	}
	var seq []pk
	for i := 0; i < flows; i++ {
		c := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), uint16(1024+r.IntN(60000)))
		steps := []step{{true, syn, 0}, {false, synack, 0}, {true, ack, 0}}
		for j := r.IntN(4); j > 0; j-- {
			steps = append(steps, step{r.IntN(2) == 0, psh, 100})
		}
		switch r.IntN(3) {
		case 0:
			steps = append(steps, step{true, finack, 0}, step{false, finack, 0}, step{true, ack, 0})
		case 1:
			steps = append(steps, step{false, rst, 0})
		}
		for _, s := range steps {
			seq = append(seq, pk{c, s})
		}
	}
	// Interleave: each flow's packets are shifted by one random amount
	// (up to a quarter of the trace), so flows overlap and each keeps its
	// order.
	jit := map[netip.AddrPort]float64{}
	pos := make([]float64, len(seq))
	idx := make([]int, len(seq))
	for i, x := range seq {
		if _, ok := jit[x.c]; !ok {
			jit[x.c] = r.Float64() * float64(len(seq)) / 4
		}
		pos[i], idx[i] = float64(i)+jit[x.c], i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(pos[a], pos[b]) })
	ref, _ := New(Config{Backend: BackendExact, Capacity: flows, ShadowRate: -1})
	tr, err := New(Config{Backend: BackendDLeft, Capacity: flows, FPRate: 0.001, ShadowRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	wrong := 0
	for n, i := range idx {
		p := mkPacket(capture.ProtoTCP, seq[i].c, srv, seq[i].st, t0.Add(time.Duration(n)*time.Microsecond))
		want := ref.Observe(&p)
		if got := tr.Observe(&p); got.State != want.State || got.OrigIsDst != want.OrigIsDst {
			wrong++
		}
	}
	st := tr.Stats()
	rate := float64(wrong) / float64(len(seq))
	bound := tr.st.dl.FPRate(flows)
	t.Logf("%d packets of %d flows: %d conn_states differ (%.2e; false-positive bound %.2e), %.2f bytes/flow, %d insert failures",
		len(seq), flows, wrong, rate, bound, float64(st.MemoryBytes)/flows, st.InsertFailures)
	if rate > 5*bound+10.0/float64(len(seq)) {
		t.Errorf("conn_state error %.2e above 5x the bound %.2e", rate, bound)
	}
}
