package rules

import (
	"fmt"
	"hash/fnv"
	"sync/atomic"
	"text/template"

	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/conferr"
	"github.com/flowmon/flowmon/internal/hashmix"
)

// Set is a compiled rules file, ready to evaluate. A Set is immutable once
// built, except for its rules' counters; the Engine swaps whole sets.
type Set struct {
	rules []*rule
	// The rules by what triggers them, so that a packet that starts,
	// changes or flags nothing costs only the volume rules.
	holdAll   []*rule // by_flow volume rules that match every packet (Shard.Packet's fast path)
	onPacket  []*rule // other volume rules, and threshold on packets
	onNew     []*rule // threshold on new flows, attempts, half-open, distinct counts
	onChange  []*rule // transition, threshold on conn_state, half-open completions
	onAnomaly []*rule
	onLookup  []*rule // watchlist and novelty: on new flows, through the engine's Lookups
	events    []*rule // transition, anomaly, watchlist, novelty: resolved by sweeps
	counting  []*rule // threshold and volume: checked at each window's end
	dups      []*rule
	nHold     int // by_flow volume rules: each shard holds a table per rule
}

// rule is a compiled Rule.
type rule struct {
	Rule
	group string
	file  string // the rules file's name, for errors
	// id identifies the rule's alerts: an alert's hash mixes it with its key.
	id uint64
	// def is the rule's definition; a reload keeps the state of a rule
	// whose definition did not change.
	def       string
	labels    alerts.Labels // alertname, severity, the rule's own labels
	templates map[string]*template.Template
	st        *ruleState
	holdIndex int     // a by_flow volume rule's index among them (hold.go); -1 for others
	thresh    float64 // the rule's above (threshold())
}

// ruleState is what a rule keeps between packets.
type ruleState struct {
	win    *windows
	counts [slots]keyCounter
	// done counts, per key, the flows that left S0 (half_open only).
	done [slots]keyCounter
	// dupMark and totalMark are the pipeline's duplicate and packet counts
	// when the current window began (duplicates rules).
	dupMark, totalMark uint64
	// over holds keys that crossed the threshold, each with its window
	// (overMark), by the key's low bits (counting rules).
	over [overSlots]atomic.Uint64
}

// overSlots is how many keys past their threshold a counting rule
// remembers at once: the victims of a flood, say.
const overSlots = 8

// overMark is what ruleState.over holds for key past the threshold in
// window w: never 0 (an empty slot).
func overMark(key uint64, w int64) uint64 { return hashmix.Mix(key^uint64(w)*hashmix.Golden) | 1 }

func (st *ruleState) bytes() int {
	n := 0
	for i := range slots {
		if st.counts[i] != nil {
			n += st.counts[i].bytes()
		}
		if st.done[i] != nil {
			n += st.done[i].bytes()
		}
	}
	return n
}

// Compile builds the rule set of f.
func Compile(f *File) (*Set, error) {
	s := &Set{}
	for _, g := range f.Groups {
		for i := range g.Rules {
			r, err := compileRule(g.Name, &g.Rules[i])
			if err != nil {
				return nil, &conferr.Error{File: f.Name, Line: g.Rules[i].Pos.Line, Col: g.Rules[i].Pos.Col, In: ruleIn(g.Rules[i].Alert), Err: err}
			}
			r.file = f.Name
			s.add(r)
		}
	}
	return s, nil
}

func compileRule(group string, spec *Rule) (*rule, error) {
	r := &rule{Rule: *spec, group: group, templates: map[string]*template.Template{}, holdIndex: -1}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s", group, spec.Alert)
	r.id = h.Sum64()
	def := *spec
	def.Pos = Pos{}
	r.def = fmt.Sprintf("%s|%+v", group, def)
	r.labels = append(r.labels, alerts.Label{Name: "alertname", Value: spec.Alert}, alerts.Label{Name: "severity", Value: spec.Severity})
	for k, v := range spec.Labels {
		r.labels = append(r.labels, alerts.Label{Name: k, Value: v})
	}
	r.labels.Sort()
	for k, v := range spec.Annotations {
		t, err := parseTemplate(k, v)
		if err != nil {
			return nil, fmt.Errorf("annotation %s: %w", k, err)
		}
		r.templates[k] = t
	}
	st, err := newRuleState(spec)
	if err != nil {
		return nil, err
	}
	r.st = st
	r.thresh = r.threshold()
	return r, nil
}

func newRuleState(spec *Rule) (*ruleState, error) {
	st := &ruleState{}
	if w := spec.window(); w > 0 {
		st.win = newWindows(int64(w))
	}
	var err error
	for i := range slots {
		switch spec.Kind {
		case KindThreshold:
			if st.counts[i], err = newCounter(spec.Threshold.Event.distinct(), spec.Threshold.Error, spec.Threshold.Above); err != nil {
				return nil, err
			}
			if spec.Threshold.Event == EventHalfOpen {
				if st.done[i], err = newCounter(false, spec.Threshold.Error, spec.Threshold.Above); err != nil {
					return nil, err
				}
			}
		case KindVolume:
			if spec.Track == ByFlow {
				continue // counted per shard by sample and hold (hold.go)
			}
			if st.counts[i], err = newCounter(false, spec.Volume.Error, spec.Volume.Above); err != nil {
				return nil, err
			}
		}
	}
	return st, nil
}

func (s *Set) add(r *rule) {
	s.rules = append(s.rules, r)
	switch r.Kind {
	case KindTransition:
		s.onChange = append(s.onChange, r)
		s.events = append(s.events, r)
	case KindAnomaly:
		s.onAnomaly = append(s.onAnomaly, r)
		s.events = append(s.events, r)
	case KindWatchlist, KindNovelty:
		s.onLookup = append(s.onLookup, r)
		s.events = append(s.events, r)
	case KindThreshold:
		s.counting = append(s.counting, r)
		switch r.Threshold.Event {
		case EventPacket:
			s.onPacket = append(s.onPacket, r)
		case EventConnState:
			s.onChange = append(s.onChange, r)
		case EventHalfOpen:
			s.onNew = append(s.onNew, r)
			s.onChange = append(s.onChange, r)
		default:
			s.onNew = append(s.onNew, r)
		}
	case KindVolume:
		s.counting = append(s.counting, r)
		if r.Track == ByFlow {
			r.holdIndex = s.nHold
			s.nHold++
		}
		if r.Track == ByFlow && r.Match.matchesAll() {
			s.holdAll = append(s.holdAll, r)
		} else {
			s.onPacket = append(s.onPacket, r)
		}
	case KindDuplicates:
		s.dups = append(s.dups, r)
	}
}

// inherit takes over the state of old's rules whose definitions did not
// change, so that a reload does not reset their windows.
func (s *Set) inherit(old *Set) {
	if old == nil {
		return
	}
	prev := make(map[string]*ruleState, len(old.rules))
	for _, r := range old.rules {
		prev[r.def] = r.st
	}
	for _, r := range s.rules {
		if st := prev[r.def]; st != nil {
			r.st = st
		}
	}
}

// Len is the number of rules.
func (s *Set) Len() int { return len(s.rules) }
