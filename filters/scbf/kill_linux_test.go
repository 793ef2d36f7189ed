package scbf

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The SIGKILL test's workload: a child process runs the operations of
// newOpGen(killSeed, killRemove) on the file at full speed, flushing
// every killFlushEvery operations.
const (
	killEnv        = "SCBF_KILL_CHILD" // the file, in the child
	killSeed       = 11
	killRemove     = 0.4
	killFlushEvery = 2000
	killRounds     = 30
)

var killOptions = Options{Capacity: 20_000, ErrorRate: 0.01}

// TestKill9 kills a writer with SIGKILL at random points, 30 times, and
// checks the file after each kill: Open reports it clean or consistent
// as of an operation N at or after the last flush the child reported,
// the file equals a reference filter that ran operations 1..N, every
// element live at N (so every one acknowledged as flushed and not
// removed since) tests present, and removed elements test present no
// more often than the false-positive rate. The parent then closes the
// file, or drops it without a flush (so the next child opens a
// consistent file), and the next child goes on from N.
func TestKill9(t *testing.T) {
	if path := os.Getenv(killEnv); path != "" {
		killChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "kill.scbf")
	f := mustCreate(t, path, killOptions)
	f.Close()
	ref := mustNew(t, killOptions)
	g := newOpGen(killSeed, killRemove)
	rng := rand.New(rand.NewPCG(7, 7))
	var undone, consistent, removedSeen, removedPresent int
	start := time.Now()
	for round := range killRounds {
		flushed := runAndKill(t, path, time.Duration(20+rng.IntN(180))*time.Millisecond)
		// Had the machine restarted instead, a dirty file would have to
		// be rebuilt from the last flush; Open leaves it as it is.
		b := bootID
		bootID = func() uint64 { return b() ^ 2 }
		rf, rst, rerr := Open(path)
		bootID = b
		if rf != nil {
			rf.Close() // clean: nothing to flush, the file stays as it is
		}
		rebuild := errors.Is(rerr, ErrRebuild)
		if rebuild && (rst.State != Rebuild || rst.Seq < flushed) || !rebuild && (rerr != nil || rst.State != Clean) {
			t.Fatalf("round %d, on another boot: %s, %v", round, rst, rerr)
		}
		f, st, err := Open(path)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		switch {
		case st.State != Clean && st.State != Consistent:
			t.Fatalf("round %d: %s after a kill on this boot", round, st)
		case st.Seq < flushed || st.Flushed < flushed:
			t.Fatalf("round %d: %s, but the child reported operation %d flushed", round, st, flushed)
		case st.State == Clean && st.Seq != st.Flushed:
			t.Fatalf("round %d: %+v", round, st)
		case rebuild != (st.State == Consistent):
			t.Fatalf("round %d: %s here, %s on another boot", round, st, rst)
		}
		if st.State == Consistent {
			consistent++
		}
		if st.Undone != "" {
			undone++
		}
		if st.Seq < g.seq {
			t.Fatalf("round %d: %s, before the %d operations the last round found", round, st, g.seq)
		}
		g.apply(t, ref, st.Seq)
		sameImage(t, f, ref)
		for _, e := range g.live {
			if !f.Check(e.key) {
				t.Fatalf("round %d: live %v tests absent", round, e)
			}
		}
		for _, e := range g.removed {
			removedSeen++
			if f.Check(e.key) {
				removedPresent++
			}
		}
		if round%2 == 0 {
			abandon(t, f)
		} else if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	p := killOptions.ErrorRate
	if got := float64(removedPresent) / float64(removedSeen); got > p+slack(p, removedSeen) {
		t.Errorf("%d of %d removed elements test present (%.4f), above the rate %v", removedPresent, removedSeen, got, p)
	}
	t.Logf("%d kills in %v: %d operations, %d live in %d sub-filters; %d opens consistent (%d with an operation undone), %d clean; removed elements present %d/%d",
		killRounds, time.Since(start).Round(time.Millisecond), g.seq, len(g.live), len(ref.subs), consistent, undone, killRounds-consistent, removedPresent, removedSeen)
}

// runAndKill runs a child on path, kills it with SIGKILL run after it
// has opened the file, and returns the last operation it reported
// flushed.
func runAndKill(t *testing.T, path string, run time.Duration) uint64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill9$", "-test.count=1")
	cmd.Env = append(os.Environ(), killEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var flushed uint64
	read := func(line string) {
		if n, ok := strings.CutPrefix(line, "flushed "); ok {
			v, err := strconv.ParseUint(n, 10, 64)
			if err != nil {
				t.Fatalf("child: %q", line)
			}
			flushed = v
		}
	}
	ready := false
	timer := time.NewTimer(10 * time.Second)
	for !ready {
		select {
		case line, ok := <-lines:
			if !ok {
				cmd.Wait()
				t.Fatalf("child ended before it opened the file: %s", stderr.String())
			}
			ready = strings.HasPrefix(line, "ready ")
		case <-timer.C:
			t.Fatal("child did not open the file in 10 s")
		}
	}
	kill := time.After(run)
	for kill != nil {
		select {
		case line, ok := <-lines:
			if !ok {
				cmd.Wait()
				t.Fatalf("child ended before it was killed: %s", stderr.String())
			}
			read(line)
		case <-kill:
			kill = nil
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for line := range lines {
		read(line) // what it printed before the kill
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v: %s", err, stderr.String())
	}
	return flushed
}

// killChild is the writer: it opens the file, catches its generator up
// to the file's operation and runs operations until it is killed,
// printing each flushed operation's number.
func killChild(path string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	f, st, err := Open(path)
	if err != nil {
		fail(err)
	}
	g := newOpGen(killSeed, killRemove)
	for g.seq < st.Seq {
		g.next()
	}
	fmt.Printf("ready %d\n", st.Seq)
	end := time.Now().Add(time.Minute) // if the parent is gone
	for time.Now().Before(end) {
		for range killFlushEvery {
			add, e := g.next()
			if add {
				err = f.Add(e.key, e.id)
			} else if ok, rerr := f.Remove(e.key, e.id); rerr != nil || !ok {
				err = fmt.Errorf("operation %d: remove of live %v: %v %v", g.seq, e, ok, rerr)
			}
			if err != nil {
				fail(err)
			}
		}
		if err := f.Flush(); err != nil {
			fail(err)
		}
		fmt.Printf("flushed %d\n", f.Seq())
	}
	fail(fmt.Errorf("not killed within a minute"))
}
