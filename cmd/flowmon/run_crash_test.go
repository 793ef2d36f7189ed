package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestRunSurvivesSIGKILL kills flowmon run (SIGKILL, as the OOM killer
// does) under traffic, three times, each time after a periodic snapshot,
// and starts it again on the same snapshot and flow log; a fourth run
// stops with SIGTERM. Then:
//   - no record is lost that was on disk when the last snapshot before a
//     kill was written: the log as it was then is the start of the final
//     one;
//   - no record is written twice: a flow restored from a snapshot whose
//     record the killed run had written after the snapshot has it cut
//     (the start says so) and written once when it ends;
//   - every line is a whole record, a write the kill cut short repaired;
//   - the last run's summary counts the records it added to the log.
func TestRunSurvivesSIGKILL(t *testing.T) {
	n := liveNet(t)
	bin := buildFlowmon(t)
	trace := writeLiveTrace(t, 1500, 8, 41)
	parts := splitTraceN(t, trace, 4)
	dir := t.TempDir()
	snap, flowLog := filepath.Join(dir, "state.snap"), filepath.Join(dir, "flows.jsonl")
	args := []string{"--workers", "2", "--snapshot", snap, "--snapshot-interval", "1s", "--flows-out", flowLog}
	read := func() []byte {
		b, err := os.ReadFile(flowLog)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return b
	}
	snapshots := regexp.MustCompile(`(?m)^flowmon_snapshots_total\{result="ok"\} (\d+)$`)
	pause := regexp.MustCompile(`(?m)^flowmon_snapshot_pause_seconds (\S+)$`)
	var kept [][]byte // per kill: the log as it was at a snapshot before it
	var cut int       // starts that said they cut records written after the snapshot
	for k, part := range parts {
		a := startAgent(t, bin, n, args...)
		if k > 0 && !strings.Contains(a.stderr.String(), "restored") {
			t.Fatalf("run %d did not restore the snapshot:\n%s", k+1, a.stderr)
		}
		cut += strings.Count(a.stderr.String(), "cut the records written after the restored snapshot")
		atStart := read()
		var wg sync.WaitGroup
		wg.Go(func() {
			if _, err := n.Tcpreplay(t, n.A, part, "--pps", "2500"); err != nil {
				t.Error(err)
			}
		})
		if k == len(parts)-1 {
			wg.Wait()
			time.Sleep(5500 * time.Millisecond) // past the records' linger
			s := a.stop(t)
			added := bytes.Count(read(), []byte("\n")) - bytes.Count(atStart, []byte("\n"))
			if s.Records["connlog"].Written != uint64(added) {
				t.Errorf("the last run's summary: %d records written; it added %d lines", s.Records["connlog"].Written, added)
			}
			break
		}
		// Wait for a periodic snapshot under traffic, and take the log as
		// it is then: everything in it was written before that snapshot.
		var before []byte
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			log := read()
			_, body := a.get(t, n, "/metrics")
			if m := snapshots.FindStringSubmatch(body); m != nil {
				if c, _ := strconv.Atoi(m[1]); c >= 2 && before != nil {
					break
				} else if c >= 1 && before == nil {
					before = log // read before the metric said a snapshot was done
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %d: no periodic snapshot within 15 s:\n%s", k+1, a.stderr)
			}
		}
		time.Sleep(300 * time.Millisecond)
		if _, body := a.get(t, n, "/metrics"); pause.MatchString(body) {
			t.Logf("run %d: the last periodic snapshot paused the shards %ss", k+1, pause.FindStringSubmatch(body)[1])
		}
		if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		a.cmd.Wait()
		wg.Wait()
		kept = append(kept, before)
		t.Logf("run %d killed: the log had %d bytes at a snapshot, %d at the kill", k+1, len(before), len(read()))
	}
	final := read()
	for k, b := range kept {
		if !bytes.HasPrefix(final, b) {
			t.Errorf("kill %d: the %d bytes on disk at its snapshot are not the start of the final log", k+1, len(b))
		}
	}
	uids, lines := logUIDs(t, final)
	twice := 0
	for uid, c := range uids {
		if c > 1 {
			twice++
			if twice <= 5 {
				t.Errorf("record %s written %d times", uid, c)
			}
		}
	}
	t.Logf("%d records, %d written twice; %d of 3 restarts cut records written after their snapshot", lines, twice, cut)
	if lines == 0 {
		t.Fatal("no records: the test does not test anything")
	}
}

// logUIDs reads a flow log, each line of which must be a whole record,
// and returns how often each uid is in it and the lines.
func logUIDs(t *testing.T, log []byte) (map[string]int, int) {
	t.Helper()
	uids := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	lines := 0
	for sc.Scan() {
		lines++
		var r struct {
			UID string `json:"uid"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.UID == "" {
			t.Fatalf("line %d is not a whole record (%v): %q", lines, err, sc.Text())
		}
		uids[r.UID]++
	}
	return uids, lines
}
