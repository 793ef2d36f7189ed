package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/flowcount"
)

func init() {
	commands["diff"] = command{
		summary: "compare flow packet counts of two captures, or of a capture and a running agent (--peer URL)",
		run:     runDiff,
	}
}

func runDiff(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("diff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	peer := fs.String("peer", "", "compare with the counting cuckoo filter served by the agent at `URL` ("+flowcount.Path+")")
	top := fs.Int("top", 50, "list at most `N` differing flows (0: all)")
	all := fs.Bool("all", false, "with --peer, count every packet of the capture, not only those in the peer's window")
	timeout := fs.Duration("timeout", 30*time.Second, "with --peer, time limit of the request")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: flowmon diff [flags] A.pcap B.pcap\n       flowmon diff --peer URL [flags] A.pcap")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	want := 2
	if *peer != "" {
		want = 1
	}
	if fs.NArg() != want || *top < 0 {
		fs.Usage()
		return errUsage
	}
	if *peer != "" {
		return diffPeer(stdout, stderr, strings.TrimSuffix(*peer, "/"), fs.Arg(0), *top, *all, *timeout)
	}
	a, err := flowcount.NewSide[capture.Key](flowcount.SideOptions())
	if err != nil {
		return err
	}
	b, _ := flowcount.NewSide[capture.Key](flowcount.SideOptions())
	if _, err := readSide(stderr, fs.Arg(0), a, time.Time{}, time.Time{}); err != nil {
		return err
	}
	if _, err := readSide(stderr, fs.Arg(1), b, time.Time{}, time.Time{}); err != nil {
		return err
	}
	r := flowcount.Diff(a, b)
	printDiff(stdout, r, fs.Arg(0), fs.Arg(1), a, b.Packets, *top)
	return nil
}

func diffPeer(stdout, stderr io.Writer, url, name string, top int, all bool, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	p, err := flowcount.FetchPeer(ctx, http.DefaultClient, url)
	if err != nil {
		return err
	}
	side := flowcount.NewSideLike[capture.Key](p.Filter)
	from, to := p.Start, p.End
	if all {
		from, to = time.Time{}, time.Time{}
	}
	skipped, err := readSide(stderr, name, side, from, to)
	if err != nil {
		return err
	}
	if !from.IsZero() {
		fmt.Fprintf(stdout, "peer window: %s .. %s", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
		if p.Partial {
			fmt.Fprint(stdout, " (partial)")
		}
		fmt.Fprintf(stdout, "; %d packets of %s outside it ignored (--all counts them)\n", skipped, name)
		if side.Packets == 0 {
			fmt.Fprintf(stderr, "flowmon diff: warning: no packet of %s falls in the peer's window\n", name)
		}
	}
	r, err := flowcount.DiffPeer(side, p.Filter)
	if err != nil {
		return err
	}
	printDiff(stdout, r, name, url, side, r.TherePackets, top)
	return nil
}

// readSide adds the packets of capture name with from <= time < to (no
// bound when zero) to s and returns how many were outside. A damaged file
// is reported on stderr and its packets before the damage are kept.
func readSide(stderr io.Writer, name string, s *flowcount.Side[capture.Key], from, to time.Time) (skipped uint64, err error) {
	r, err := capture.Open(name)
	if err != nil {
		return 0, err
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
			fmt.Fprintf(stderr, "flowmon diff: warning: %v (keeping the packets before it)\n", err)
			break
		}
		if err != nil {
			return skipped, fmt.Errorf("read %s: %w", name, err)
		}
		if !from.IsZero() && (p.Timestamp.Before(from) || !p.Timestamp.Before(to)) {
			skipped++
			continue
		}
		s.Add(p.Key, p.Hash)
	}
	if s.Dropped > 0 {
		fmt.Fprintf(stderr, "flowmon diff: warning: %s: %d packets of new flows did not fit in the filter\n", name, s.Dropped)
	}
	return skipped, nil
}

func printDiff(w io.Writer, r *flowcount.Report[capture.Key], here, there string, hs *flowcount.Side[capture.Key], therePackets uint64, top int) {
	fmt.Fprintf(w, "here:  %s: %d packets, %d flows\n", here, hs.Packets, r.HereFlows)
	fmt.Fprintf(w, "there: %s: %d packets, %d flows\n", there, therePackets, r.ThereFlows)
	fmt.Fprintf(w, "flows only here: %d, only there: %d, with different counts: %d\n", r.OnlyHere, r.OnlyThere, r.Differ)
	fmt.Fprintf(w, "packets here and not there: %d, there and not here: %d\n", r.Missing, r.Extra)
	if r.UnnamedOnlyThere > 0 {
		fmt.Fprintf(w, "flows only in the peer's filter (counted by decoding, cannot be named): %d (%d packets)\n",
			r.UnnamedOnlyThere, r.UnnamedOnlyTherePackets)
	}
	if len(r.Entries) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%-10s %10s %10s %10s  %s\n", "VERDICT", "HERE", "THERE", "DIFF", "FLOW")
	for i, e := range r.Entries {
		if top > 0 && i == top {
			fmt.Fprintf(w, "... %d more (--top 0 lists all)\n", len(r.Entries)-top)
			break
		}
		fmt.Fprintf(w, "%-10s %10d %10d %+10d  %s\n", e.Verdict, e.Here, e.There, int64(e.Here)-int64(e.There), e.Key)
	}
}
