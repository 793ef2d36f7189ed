package flowcount

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
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

// Handler serves GET (and HEAD) requests with the MarshalBinary of the
// last complete window's filter, 503 before the first window completes.
// It reads the snapshot through an atomic pointer: safe while packets flow.
func (c *Counter) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		s := c.Last()
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
		if r.Method == http.MethodHead {
			return
		}
		w.Write(b)
	})
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
