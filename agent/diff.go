package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/pipeline/dedup"
	"github.com/flowmon/flowmon/pipeline/flowcount"
)

// DiffSide is one capture's side of a diff: its packets per flow and what
// reading it left out.
type DiffSide struct {
	Name       string
	Counts     *flowcount.Side[capture.Key]
	Skipped    uint64 // packets outside the peer's window
	Duplicates uint64 // packets dedup dropped, of those counted
}

// FileDiff is the comparison of two captures.
type FileDiff struct {
	Here, There DiffSide
	Report      *flowcount.Report[capture.Key]
}

// DiffFiles compares the packets per flow of captures a and b, dropping
// capture duplicates on both sides with the agent's default dedup when
// dd is set (so a capture compares with what an agent counted). A damaged
// file is reported on warn and its packets before the damage are kept.
func DiffFiles(a, b string, dd bool, warn io.Writer) (*FileDiff, error) {
	ca, err := flowcount.NewSide[capture.Key](flowcount.SideOptions())
	if err != nil {
		return nil, err
	}
	cb, _ := flowcount.NewSide[capture.Key](flowcount.SideOptions())
	d := &FileDiff{Here: DiffSide{Name: a, Counts: ca}, There: DiffSide{Name: b, Counts: cb}}
	if err := readSide(warn, &d.Here, sideWindow{}, dd); err != nil {
		return nil, err
	}
	if err := readSide(warn, &d.There, sideWindow{}, dd); err != nil {
		return nil, err
	}
	d.Report = flowcount.Diff(ca, cb)
	return d, nil
}

// PeerDiff is the comparison of a capture with a running agent's last
// flow-count window.
type PeerDiff struct {
	Here     DiffSide
	Peer     *flowcount.Peer
	From, To time.Time // the packets of the capture counted: from <= time < to; none when From is zero
	Report   *flowcount.Report[capture.Key]
}

// DiffPeer compares capture name with the filter the agent at url serves
// (flowcount.Path): the capture's packets in the agent's window, or all
// of them with all. dd and warn are as DiffFiles's; the request's time is
// bounded by ctx.
func DiffPeer(ctx context.Context, url, name string, all, dd bool, warn io.Writer) (*PeerDiff, error) {
	p, err := flowcount.FetchPeer(ctx, http.DefaultClient, url)
	if err != nil {
		return nil, err
	}
	d := &PeerDiff{Here: DiffSide{Name: name, Counts: flowcount.NewSideLike[capture.Key](p.Filter)}, Peer: p}
	if !all {
		d.From, d.To = p.Start, p.End
	}
	if err := readSide(warn, &d.Here, sideWindow{d.From, d.To}, dd); err != nil {
		return nil, err
	}
	if !d.From.IsZero() && d.Here.Counts.Packets == 0 {
		fmt.Fprintf(warn, "flowmon diff: warning: no packet of %s falls in the peer's window\n", name)
	}
	if d.Report, err = flowcount.DiffPeer(d.Here.Counts, p.Filter); err != nil {
		return nil, err
	}
	return d, nil
}

// sideWindow bounds the packet times a side counts: from <= time < to,
// no bound when from is zero.
type sideWindow struct{ from, to time.Time }

// readSide adds the packets of capture s.Name in w to s.Counts. A damaged
// file is reported on warn and its packets before the damage are kept; it
// is an error only when no packet came before the damage.
func readSide(warn io.Writer, s *DiffSide, w sideWindow, dd bool) error {
	var dup *dedup.Dedup
	if dd {
		var err error
		if dup, err = dedup.New(dedup.DefaultConfig()); err != nil {
			return err
		}
	}
	r, err := capture.Open(s.Name)
	if err != nil {
		return err
	}
	defer r.Close()
	var p capture.Packet
	for {
		err := r.Next(&p)
		if err == io.EOF {
			break
		}
		var re *capture.ReadError
		if errors.As(err, &re) {
			if re.Packets == 0 {
				return fmt.Errorf("read %s: no packet before the damage: %w", s.Name, err)
			}
			fmt.Fprintf(warn, "flowmon diff: warning: %v (keeping the packets before it)\n", err)
			break
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", s.Name, err)
		}
		// Every packet goes through dedup, in the window or not, as every
		// packet goes through the agent's: a copy just inside the window
		// of an original just before it is a duplicate there too.
		isDup := dup != nil && dup.Check(&p) == dedup.Duplicate
		if !w.from.IsZero() && (p.Timestamp.Before(w.from) || !p.Timestamp.Before(w.to)) {
			s.Skipped++
			continue
		}
		if isDup {
			s.Duplicates++
			continue
		}
		s.Counts.Add(p.Key, p.Hash)
	}
	if s.Counts.Dropped > 0 {
		fmt.Fprintf(warn, "flowmon diff: warning: %s: %d packets of new flows did not fit in the filter\n", s.Name, s.Counts.Dropped)
	}
	return nil
}
