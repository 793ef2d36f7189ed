package flowcount

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/flowmon/flowmon/filters/ccf"
)

// Path is where the agent serves the last complete window's filter.
const Path = "/api/v1/ccf"

// Response headers carrying the served window's bounds (RFC 3339, nanoseconds).
const (
	HeaderWindowStart = "X-Flowmon-Window-Start"
	HeaderWindowEnd   = "X-Flowmon-Window-End"
	HeaderPartial     = "X-Flowmon-Window-Partial"
)

// Handler serves the last complete window of c; it is Handler(c).
func (c *Counter) Handler() http.Handler { return Handler(c) }

// HeaderShardsMissing counts the shards whose last complete window is
// older than the one served (they have seen no packet since it ended).
const HeaderShardsMissing = "X-Flowmon-Shards-Missing"

// Handler serves GET (and HEAD) requests with the MarshalBinary of the
// last complete window, 503 before the first window completes. With
// several counters (one per worker shard, all built with the same
// Options) it serves the merge (ccf.Merge) of the shards' snapshots of the
// latest window, and counts in HeaderShardsMissing the shards that have
// not published it yet: windows rotate by packet time, so a shard
// publishes a window only when it sees a packet after the window's end.
// Snapshots are read through atomic pointers: safe while packets flow.
func Handler(counters ...*Counter) http.Handler {
	m := &merger{counters: counters}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		s, missing, err := m.snapshot()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if s == nil {
			http.Error(w, "no complete window yet", http.StatusServiceUnavailable)
			return
		}
		b, err := s.Encoded()
		if err != nil {
			http.Error(w, "encoding filter: "+err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Length", strconv.Itoa(len(b)))
		h.Set(HeaderWindowStart, s.Start.UTC().Format(time.RFC3339Nano))
		h.Set(HeaderWindowEnd, s.End.UTC().Format(time.RFC3339Nano))
		h.Set(HeaderPartial, strconv.FormatBool(s.Partial))
		h.Set(HeaderShardsMissing, strconv.Itoa(missing))
		if r.Method == http.MethodHead {
			return
		}
		w.Write(b)
	})
}

// merger merges the shards' latest snapshots, caching the result until
// one of them changes.
type merger struct {
	counters []*Counter
	mu       sync.Mutex
	key      []*Snapshot
	merged   *Snapshot
	missing  int
}

func (m *merger) snapshot() (*Snapshot, int, error) {
	if len(m.counters) == 1 {
		return m.counters[0].Last(), 0, nil
	}
	snaps := make([]*Snapshot, len(m.counters))
	var latest time.Time
	for i, c := range m.counters {
		if snaps[i] = c.Last(); snaps[i] != nil && snaps[i].Start.After(latest) {
			latest = snaps[i].Start
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.merged != nil && slices.Equal(snaps, m.key) {
		return m.merged, m.missing, nil
	}
	var out *Snapshot
	missing := 0
	for _, s := range snaps {
		switch {
		case s == nil || !s.Start.Equal(latest):
			missing++
		case out == nil:
			out = &Snapshot{Start: s.Start, End: s.End, Filter: s.Filter.Clone(), Packets: s.Packets, Dropped: s.Dropped, Partial: s.Partial}
		default:
			if err := out.Filter.Merge(s.Filter); err != nil {
				return nil, 0, fmt.Errorf("merging shard windows: %w", err)
			}
			out.Packets += s.Packets
			out.Dropped += s.Dropped
			out.Partial = out.Partial || s.Partial
		}
	}
	m.key, m.merged, m.missing = snaps, out, missing
	return out, missing, nil
}

// MaxPeerBytes bounds the body FetchPeer accepts.
const MaxPeerBytes = 1 << 30

// ErrPeer is wrapped by FetchPeer's errors about the peer's answer.
var ErrPeer = errors.New("flowcount: bad peer answer")

// Peer is a filter fetched from a running agent, with its window.
type Peer struct {
	Filter     *ccf.Filter
	Start, End time.Time // zero if the agent sent no window headers
	Partial    bool
}

// FetchPeer gets base + Path from an agent and decodes the filter.
func FetchPeer(ctx context.Context, client *http.Client, base string) (*Peer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+Path, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch peer filter: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch peer filter: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("fetch peer filter from %s: %s: %q: %w", req.URL, resp.Status, msg, ErrPeer)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxPeerBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetch peer filter: %w", err)
	}
	if len(body) > MaxPeerBytes {
		return nil, fmt.Errorf("fetch peer filter: body over %d bytes: %w", MaxPeerBytes, ErrPeer)
	}
	p := &Peer{Filter: new(ccf.Filter)}
	if err := p.Filter.UnmarshalBinary(body); err != nil {
		return nil, fmt.Errorf("fetch peer filter: %w", err)
	}
	if s := resp.Header.Get(HeaderWindowStart); s != "" {
		if p.Start, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return nil, fmt.Errorf("fetch peer filter: window start %q: %w", s, ErrPeer)
		}
	}
	if s := resp.Header.Get(HeaderWindowEnd); s != "" {
		if p.End, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return nil, fmt.Errorf("fetch peer filter: window end %q: %w", s, ErrPeer)
		}
	}
	p.Partial = resp.Header.Get(HeaderPartial) == "true"
	return p, nil
}
