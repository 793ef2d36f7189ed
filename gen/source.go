package gen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
)

// source hands out one scenario's flows (or one scan episode's) in
// increasing start time.
type source struct {
	scen     scenario
	first, n int // the source's flows are scenario indexes [first, first+n)
	i        int // flows started so far
	pcg      rand.PCG
	rng      *rand.Rand
	t0, span int64   // start window, µs
	x        float64 // last start's position in the window, in [0, 1)
	spaced   bool    // scan: starts one probe gap apart instead of spread
	t        int64   // last start (spaced sources)

	target     netip.Addr
	targetPort uint16
	scanner    netip.Addr
	sport      uint16
	portOff    int
}

func (g *Generator) newSource(sc scenario, ep, first, n int) *source {
	s := &source{scen: sc, first: first, n: n, span: g.durationUS()}
	s.pcg.Seed(splitmix64(g.opt.Seed^0x737263), splitmix64(uint64(sc)<<32|uint64(ep)))
	s.rng = rand.New(&s.pcg)
	return s
}

func (g *Generator) durationUS() int64 { return g.opt.Duration.Microseconds() }

// setupSources creates every source and starts its first flow.
func (g *Generator) setupSources() {
	c := g.counts
	groups := (c[scenNormal] + 15) / 16
	g.idBase[scenNormal] = groups // ICMP flows of the normal scenario
	g.idBase[scenHeavy] = groups + c[scenNormal]
	g.idBase[scenScan] = g.idBase[scenHeavy] + c[scenHeavy]
	d := g.durationUS()
	if c[scenNormal] > 0 {
		g.sources = append(g.sources, g.newSource(scenNormal, 0, 0, c[scenNormal]))
	}
	if c[scenHeavy] > 0 {
		g.sources = append(g.sources, g.newSource(scenHeavy, 0, 0, c[scenHeavy]))
	}
	if c[scenFlood] > 0 { // one attack on one target, in a tenth of the window
		s := g.newSource(scenFlood, 0, 0, c[scenFlood])
		s.span = max(d/10, 1)
		s.t0 = int64((0.1 + 0.5*s.rng.Float64()) * float64(d))
		s.target, s.targetPort = serverAddr(s.rng.IntN(8), false), 80
		g.sources = append(g.sources, s)
	}
	for ep, first := 0, 0; first < c[scenScan]; ep, first = ep+1, first+scanEpisode {
		s := g.newSource(scenScan, ep, first, min(scanEpisode, c[scenScan]-first))
		s.spaced = true
		s.t0 = int64(0.9 * s.rng.Float64() * float64(d))
		s.t = s.t0
		s.target = serverAddr(int(logUniform(s.rng, 1, serverPool+1))-1, false)
		s.scanner = clientAddr(g.idBase[scenScan]+ep, false, g.addrKey)
		s.sport = uint16(ephemeralLo + s.rng.IntN(ephemeralN))
		s.portOff = s.rng.IntN(65535)
		g.sources = append(g.sources, s)
	}
	for _, s := range g.sources {
		g.activate(s)
	}
}

// scanEpisode is the number of ports one scanner probes (nmap's top 1000).
const scanEpisode = 1000

// scanPort is the destination port of probe j of an episode: an affine
// permutation of 1..65535 (7919 is prime to 65535 = 3·5·17·257), so the
// ports of an episode are distinct and look random.
func (s *source) scanPort(j int) uint16 { return uint16(1 + (j*7919+s.portOff)%65535) }

// next returns the start time (µs) and scenario index of the source's next
// flow. Spread sources place their n starts as the order statistics of n
// uniform draws over the window, generated one at a time: the minimum of
// m uniforms on [x, 1) is x + (1-x)(1 - V^(1/m)).
func (s *source) next() (start int64, idx int, ok bool) {
	if s.i >= s.n {
		return 0, 0, false
	}
	if s.spaced {
		if s.i > 0 {
			s.t += max(minGap, int64(s.rng.ExpFloat64()*1000))
		}
		start = s.t
	} else {
		m := float64(s.n - s.i)
		s.x += (1 - s.x) * (1 - math.Pow(1-s.rng.Float64(), 1/m))
		start = s.t0 + min(int64(s.x*float64(s.span)), s.span-1)
	}
	idx = s.first + s.i
	s.i++
	return start, idx, true
}

// flowCounts splits flows between the scenarios by the largest-remainder
// method, so the counts always add up to flows.
func flowCounts(flows int, m Mix) [numScenarios]int {
	shares := m.shares()
	sum := 0.0
	for _, v := range shares {
		sum += v
	}
	var c [numScenarios]int
	var rem [numScenarios]float64
	left := flows
	for i, v := range shares {
		exact := float64(flows) * v / sum
		c[i] = int(exact)
		rem[i] = exact - float64(c[i])
		left -= c[i]
	}
	for ; left > 0; left-- {
		best := 0
		for i := range rem {
			if rem[i] > rem[best] {
				best = i
			}
		}
		c[best]++
		rem[best] = -1
	}
	return c
}

// flowsForPackets finds a flow count whose trace has at least target
// packets (duplicates not counted). It simulates each flow's packet
// sequence once (planRNG only, nothing rendered) and caches per-scenario
// prefix sums, so the search costs about one pass over the flows.
func flowsForPackets(o *Options, target int64) (int, error) {
	c := counter{o: o, f: newFlow()}
	total := func(flows int) int64 {
		n := flowCounts(flows, o.Mix)
		var t int64
		for s := range numScenarios {
			t += c.prefix(s, n[s])
		}
		return t
	}
	lo, hi := 0, 1024
	for t := total(hi); t < target; t = total(hi) {
		if hi >= MaxFlows {
			return 0, fmt.Errorf("packets %d need more than %d flows: %w", target, MaxFlows, ErrOptions)
		}
		lo = hi
		est := float64(hi) * float64(target) / float64(max(t, 1)) * 1.05
		hi = int(min(max(est, float64(hi)+1), MaxFlows))
	}
	for hi-lo > 1 { // total(lo) < target <= total(hi)
		mid := lo + (hi-lo)/2
		if total(mid) >= target {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

type counter struct {
	o    *Options
	f    *flow
	sums [numScenarios][]int64 // sums[s][i] = packets of the first i flows
}

func (c *counter) prefix(s scenario, n int) int64 {
	if len(c.sums[s]) == 0 {
		c.sums[s] = append(c.sums[s], 0)
	}
	for i := len(c.sums[s]) - 1; i < n; i++ {
		c.f.plan(c.o, s, i)
		var p pkt
		k := int64(0)
		for _, ok := c.f.produce(&p); ok; _, ok = c.f.produce(&p) {
			k++
		}
		c.sums[s] = append(c.sums[s], c.sums[s][i]+k)
	}
	return c.sums[s][n]
}
