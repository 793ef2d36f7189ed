package acsm

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/internal/testutil/testgate"
)

// churn runs the workload behind the paper's "sBF false negatives stay
// flat" (Section VI): live flows updated again and again while short
// flows come and go beside them. live long-lived keys are inserted; each
// round inserts batch short keys, changes every live key's value once,
// and deletes the batch. At the end every live key is queried: the share
// answered absent or "don't know" is the false-negative rate, the share
// answered with a wrong value the incorrect rate.
func churn(t testing.TB, kind BackendKind, p float64, live, batch, rounds int) (fn, wrong float64, bytes int) {
	const values = 128
	b, err := NewBackend(BackendSpec{Kind: kind, Capacity: live + batch, FPRate: p, Values: values, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(uint64(live), uint64(rounds)))
	keys := make([]uint64, live)
	vals := make([]uint32, live)
	for i := range keys {
		keys[i], vals[i] = r.Uint64(), uint32(r.IntN(values))
		_ = b.Insert(keys[i], vals[i])
	}
	short := make([]uint64, batch)
	for round := 0; round < rounds; round++ {
		for i := range short {
			short[i] = r.Uint64()
			_ = b.Insert(short[i], uint32(r.IntN(values)))
		}
		for i, k := range keys {
			nv := uint32(r.IntN(values))
			if v, res := b.Query(k); res == Found && v == vals[i] && nv != vals[i] {
				if b.Update(k, vals[i], nv) == nil {
					vals[i] = nv
				}
			}
		}
		for _, k := range short {
			v, res := b.Query(k)
			if res == Found {
				_ = b.Delete(k, v)
			}
		}
	}
	var nfn, nwrong int
	for i, k := range keys {
		v, res := b.Query(k)
		switch {
		case res != Found:
			nfn++
		case v != vals[i]:
			nwrong++
		}
	}
	return float64(nfn) / float64(live), float64(nwrong) / float64(live), b.MemoryBytes()
}

// TestChurnTable prints the churn experiment (long: FLOWMON_LONG=1).
func TestChurnTable(t *testing.T) {
	testgate.Long(t)
	const live, batch = 20000, 20000
	var sb strings.Builder
	for _, rounds := range []int{1, 10, 50} {
		fmt.Fprintf(&sb, "\n%d rounds, %d live flows, %d short flows per round:\n\n| p | backend | bytes/flow | false negatives | incorrect |\n|---|---|---|---|---|\n", rounds, live, batch)
		for _, p := range []float64{0.1, 0.01, 0.001, 1e-4, 1e-5} {
			for _, kind := range []BackendKind{BackendKBF, BackendSBF, BackendFCF, BackendDLeft} {
				fn, wrong, bytes := churn(t, kind, p, live, batch, rounds)
				fmt.Fprintf(&sb, "| %g | %s | %.1f | %.4f%% | %.4f%% |\n", p, kind, float64(bytes)/float64(live+batch), 100*fn, 100*wrong)
			}
		}
	}
	t.Log(sb.String())
}

func TestChurnSmall(t *testing.T) {
	// After many rounds the sbf loses live flows that kbf still decodes.
	fnK, _, _ := churn(t, BackendKBF, 1e-3, 2000, 2000, 20)
	fnS, _, _ := churn(t, BackendSBF, 1e-3, 2000, 2000, 20)
	if fnS < 10*fnK || fnS < 0.05 {
		t.Errorf("after 20 rounds: sbf false negatives %.4f, kbf %.4f; want sbf far above", fnS, fnK)
	}
}

// TestChurnDLeft: dleft (no aging here) keeps live flows through the
// churn of short ones, as kbf does: its only losses are flows sharing a
// fingerprint and bucket overflows.
func TestChurnDLeft(t *testing.T) {
	fn, wrong, bytes := churn(t, BackendDLeft, 1e-3, 20000, 20000, 20)
	t.Logf("dleft after 20 rounds: false negatives %.4f%%, incorrect %.4f%%, %.1f bytes/flow", 100*fn, 100*wrong, float64(bytes)/40000)
	if fn+wrong > 1e-3 {
		t.Errorf("dleft after 20 rounds: false negatives %.4f, incorrect %.4f", fn, wrong)
	}
}
