package fbfeval

import (
	"fmt"
	"strings"
	"time"

	"github.com/flowmon/flowmon/filters/fbf"
)

// AdaptiveSample is one observation of the adaptive run.
type AdaptiveSample struct {
	At                   time.Duration // since the start
	Rate                 float64       // arrivals per second
	Filters              int           // N+2 of the adaptive FBF
	Refresh              time.Duration // its t
	Estimate             float64       // its Equation 3
	Measured             float64       // its measured rate
	StaticMeasured       float64       // the same FBF without resizing
	StaticEstimate       float64
	AdaptiveMemoryBytes  uint64
	StaticMemoryBytes    uint64
	AdaptiveWindowMillis int64
}

// AdaptiveTarget is the target FPP of the adaptive run.
const AdaptiveTarget = 0.01

// EvalAdaptive is the resizing configuration of the adaptive run: the
// projected estimate, adaptation every 250 ms of packet time, t in
// [1 s, 11 s] by steps of 1 s, at most 64 filters.
var EvalAdaptive = fbf.Adaptive{TargetFPP: AdaptiveTarget, Interval: 250 * time.Millisecond, RefreshStep: time.Second,
	MinRefresh: time.Second, MaxRefresh: 11 * time.Second, MaxFilters: 64}

// PaperAdaptive is Algorithm 3 as the paper runs it: the current estimate
// (with Model Independent: Equation 3), once per second, t in [1 s, 30 s].
var PaperAdaptive = fbf.Adaptive{TargetFPP: AdaptiveTarget, Interval: time.Second, RefreshStep: time.Second,
	MinRefresh: time.Second, MaxRefresh: 30 * time.Second, MaxFilters: 64, Current: true}

// adaptiveRate is the workload of the adaptive run: 5 ops/s for 10 s, a
// tenfold linear ramp to 50 ops/s over 60 s, 30 s at 50, back to 5 over
// 20 s, 20 s at 5.
func adaptiveRate(tau float64) float64 {
	switch {
	case tau < 10:
		return 5
	case tau < 70:
		return 5 + 45*(tau-10)/60
	case tau < 100:
		return 50
	case tau < 120:
		return 50 - 45*(tau-100)/20
	}
	return 5
}

// RunAdaptive is the third experiment of Section VI-C: start as the paper
// (3 filters, m = 6250, k = 5, t = 11 s), target AdaptiveTarget, resize by
// Algorithm 3 every second of packet time, and measure every `every` both
// the adaptive FBF and a static twin fed the same stream.
func RunAdaptive(trials int, seed uint64, every time.Duration, a fbf.Adaptive, md fbf.Model) []AdaptiveSample {
	base := fbf.Options{Bits: 6250, Hashes: 5, Refresh: 11 * time.Second, Model: md}
	static := must(fbf.NewWithOptions(base))
	base.Adaptive = a
	adaptive := must(fbf.NewWithOptions(base))
	const end = 140.0
	var times []float64
	for tau := every.Seconds(); tau < end; tau += every.Seconds() {
		times = append(times, tau-1e-9)
	}
	var out []AdaptiveSample
	drive([]*fbf.FBF{adaptive, static}, adaptiveRate, end, 0, seed, times, func(i int, now time.Time) {
		out = append(out, AdaptiveSample{
			At:                   now.Sub(evalEpoch).Round(time.Millisecond),
			Rate:                 adaptiveRate(times[i]),
			Filters:              adaptive.Filters(),
			Refresh:              adaptive.Refresh(),
			Estimate:             adaptive.EstimatedFPP(),
			Measured:             measure(adaptive, trials, seed+uint64(i), now),
			StaticMeasured:       measure(static, trials, seed+uint64(i), now),
			StaticEstimate:       static.EquationFPP(),
			AdaptiveMemoryBytes:  adaptive.MemoryBytes(),
			StaticMemoryBytes:    static.MemoryBytes(),
			AdaptiveWindowMillis: adaptive.Window().Milliseconds(),
		})
	})
	return out
}

func summarize(samples []AdaptiveSample, upTo time.Duration) (worst, worstStatic float64, over, overStatic int) {
	for _, s := range samples {
		if s.At > upTo {
			break
		}
		worst, worstStatic = max(worst, s.Measured), max(worstStatic, s.StaticMeasured)
		if s.Measured > AdaptiveTarget {
			over++
		}
		if s.StaticMeasured > AdaptiveTarget {
			overStatic++
		}
	}
	return
}

func evalAdaptive(b *strings.Builder, c Config) {
	fmt.Fprintf(b, "## VI-C: adaptive resizing (Algorithm 3)\n\n")
	fmt.Fprintf(b, "Start as the paper: 3 filters, m = 6250 bits, k = 5, t = 11 s; target FPP %g. Workload: 5 ops/s for 10 s, a tenfold linear ramp to 50 ops/s from 10 s to 70 s, 50 ops/s until 100 s, back to 5 ops/s at 120 s, 5 ops/s until 140 s. *static* is the same FBF without resizing fed the same stream. Resizing: Algorithm 3 (×2 filters and t − 1 s at ≥ 0.9·target; −1 filter and t + 1 s at ≤ 0.1·target) with the correlated model projected to the next refresh, run every 250 ms of packet time, t in [1 s, 11 s], at most 64 filters.\n\n", AdaptiveTarget)
	fmt.Fprintf(b, "| time (s) | rate (ops/s) | filters | t | window | correlated estimate | measured | static Eq. 3 | static measured |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	samples := RunAdaptive(c.Trials, c.Seed, 2*time.Second, EvalAdaptive, fbf.Correlated)
	for i, s := range samples {
		if i%3 == 2 || s.Measured > AdaptiveTarget {
			fmt.Fprintf(b, "| %.0f | %.1f | %d | %v | %.0f s | %s | %s | %s | %s |\n", s.At.Seconds(), s.Rate, s.Filters, s.Refresh,
				float64(s.AdaptiveWindowMillis)/1000, g(s.Estimate), g(s.Measured), g(s.StaticEstimate), g(s.StaticMeasured))
		}
	}
	fmt.Fprintf(b, "\nSamples every 2 s (every third shown, plus any above the target).\n\n")
	fmt.Fprintf(b, "| resizing | phase | adaptive measured max | samples above target | static measured max | static samples above target |\n|---|---|---:|---:|---:|---:|\n")
	paper := RunAdaptive(c.Trials, c.Seed, 2*time.Second, PaperAdaptive, fbf.Independent)
	for _, run := range []struct {
		name    string
		samples []AdaptiveSample
	}{{"correlated, projected, every 250 ms, t ≤ 11 s", samples}, {"paper: Eq. 3 now, every 1 s, t ≤ 30 s", paper}} {
		for _, ph := range []struct {
			name string
			upTo time.Duration
		}{{"ramp and hold (0-100 s)", 100 * time.Second}, {"whole run (0-140 s)", 140 * time.Second}} {
			w, ws, o, os := summarize(run.samples, ph.upTo)
			fmt.Fprintf(b, "| %s | %s | %s | %d | %s | %d |\n", run.name, ph.name, g(w), o, g(ws), os)
		}
	}
	b.WriteString("\n")
}
