package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/flowmon/flowmon/agent"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/pipeline/flowcount"
)

func init() {
	commands["diff"] = command{
		summary: "compare flow packet counts of two captures, or of a capture and a running agent (--peer URL)",
		run:     runDiff,
	}
}

// runDiff exits as diff(1) does: 0 when the sides are equal, 1 when they
// differ, 2 on trouble (bad flags, a file that cannot be read, a peer that
// does not answer). A damaged file is not trouble: the packets before the
// damage are compared and a warning names the damage, since a capture cut
// short by a full disk or a killed tcpdump is common and still worth
// comparing. Only a damaged file with no packet before the damage is an
// error, as there is nothing to compare.
func runDiff(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("diff", "[flags] A.pcap B.pcap\n       flowmon diff --peer URL [flags] A.pcap", stderr,
		"",
		"Compares the packets per flow of two captures, or of a capture and the last",
		"window of a running agent. Capture duplicates (a SPAN port's copies) are",
		"dropped on both sides with the agent's default dedup, so that a capture is",
		"compared with what the agent counted; --no-dedup counts them (an agent run",
		"with --no-dedup is compared with --no-dedup).",
		"",
		"Exit status: 0 if the sides are equal, 1 if they differ, 2 on trouble.")
	peer := fs.String("peer", "", "compare with the counting cuckoo filter served by the agent at `URL` ("+flowcount.Path+")")
	top := fs.Int("top", 50, "list at most `N` differing flows (0: all)")
	all := fs.Bool("all", false, "with --peer, count every packet of the capture, not only those in the peer's window")
	timeout := fs.Duration("timeout", 30*time.Second, "with --peer, time limit of the request")
	noDedup := fs.Bool("no-dedup", false, "count capture duplicates instead of dropping them")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	want := 2
	if *peer != "" {
		want = 1
	}
	switch {
	case fs.NArg() != want && *peer != "":
		return usageError(fs, "with --peer, want 1 capture, got %d", fs.NArg())
	case fs.NArg() != want:
		return usageError(fs, "want 2 captures (or 1 with --peer URL), got %d", fs.NArg())
	case *top < 0:
		return usageError(fs, "--top %d must be >= 0", *top)
	}
	var (
		differ bool
		err    error
	)
	if *peer != "" {
		differ, err = diffPeer(stdout, stderr, strings.TrimSuffix(*peer, "/"), fs.Arg(0), *top, *all, !*noDedup, *timeout)
	} else {
		differ, err = diffFiles(stdout, stderr, fs.Arg(0), fs.Arg(1), *top, !*noDedup)
	}
	switch {
	case err != nil:
		return exitWith(2, err)
	case differ:
		return exitWith(1, nil)
	}
	return nil
}

func diffFiles(stdout, stderr io.Writer, nameA, nameB string, top int, dd bool) (bool, error) {
	d, err := agent.DiffFiles(nameA, nameB, dd, stderr)
	if err != nil {
		return false, err
	}
	if dd {
		fmt.Fprintf(stdout, "dedup: duplicates dropped on both sides (%d here, %d there); --no-dedup counts them\n",
			d.Here.Duplicates, d.There.Duplicates)
	} else {
		fmt.Fprintln(stdout, "dedup: off, duplicates counted on both sides")
	}
	printDiff(stdout, d.Report, nameA, nameB, d.Here.Counts, d.There.Counts.Packets, top)
	return differs(d.Report), nil
}

func diffPeer(stdout, stderr io.Writer, url, name string, top int, all, dd bool, timeout time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	d, err := agent.DiffPeer(ctx, url, name, all, dd, stderr)
	if err != nil {
		return false, err
	}
	if !d.From.IsZero() {
		fmt.Fprintf(stdout, "peer window: %s .. %s", d.From.UTC().Format(time.RFC3339), d.To.UTC().Format(time.RFC3339))
		if d.Peer.Partial {
			fmt.Fprint(stdout, " (partial)")
		}
		fmt.Fprintf(stdout, "; %d packets of %s outside it ignored (--all counts them)\n", d.Here.Skipped, name)
	}
	// The agent's own dedup cannot be seen from here: its filter holds
	// what it counted, after its dedup unless it ran with --no-dedup.
	if dd {
		fmt.Fprintf(stdout, "dedup: duplicates dropped on both sides (%d here; the agent drops its own unless run with --no-dedup); --no-dedup counts them\n",
			d.Here.Duplicates)
	} else {
		fmt.Fprintln(stdout, "dedup: off here, duplicates counted (compare with an agent run with --no-dedup)")
	}
	printDiff(stdout, d.Report, name, url, d.Here.Counts, d.Report.TherePackets, top)
	return differs(d.Report), nil
}

// differs reports whether a diff found any flow whose counts differ,
// named or not.
func differs(r *flowcount.Report[capture.Key]) bool {
	return r.OnlyHere+r.OnlyThere+r.Differ+r.Missing+r.Extra > 0
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
