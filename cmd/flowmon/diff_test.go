package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/pipeline"
)

const samplePcap = "../../pcaps/sample.pcap"

// sampleDuplicates is the SPAN copies in the sample (pcaps/README.md).
const sampleDuplicates = 15

// pcapRecords returns the sample's bytes and the offset of each record,
// plus the offset one past the last (a classic little-endian pcap: 24-byte
// file header, 16-byte record headers whose third word is the captured
// length).
func pcapRecords(t *testing.T) ([]byte, []int) {
	t.Helper()
	data, err := os.ReadFile(samplePcap)
	if err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint32(data) != 0xa1b2c3d4 {
		t.Fatalf("%s: not a little-endian microsecond pcap", samplePcap)
	}
	offs := []int{24}
	for off := 24; off+16 <= len(data); {
		off += 16 + int(binary.LittleEndian.Uint32(data[off+8:]))
		offs = append(offs, off)
	}
	if offs[len(offs)-1] != len(data) {
		t.Fatalf("%s: records do not end at the file's end", samplePcap)
	}
	return data, offs
}

func writeTemp(t *testing.T, name string, parts ...[]byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, bytes.Join(parts, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDiffExitStatus checks diff(1)'s exit statuses: 0 equal, 1 differ,
// 2 trouble, and that a damaged file is compared up to the damage.
func TestDiffExitStatus(t *testing.T) {
	data, offs := pcapRecords(t)
	n := len(offs) - 1
	half := offs[n/2]
	firstHalf := writeTemp(t, "half.pcap", data[:half])
	// Cut 10 bytes into the record after the first half: damaged, with
	// the first half readable before the damage.
	damaged := writeTemp(t, "damaged.pcap", data[:half+10])
	// Cut inside the first record: damaged with nothing before it.
	hopeless := writeTemp(t, "hopeless.pcap", data[:24+10])

	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     string // substring of stdout ("" for none expected)
		stderr     string // substring of stderr
		wantStdout bool
	}{
		{name: "itself", args: []string{samplePcap, samplePcap}, code: 0, wantStdout: true,
			stdout: fmt.Sprintf("dedup: duplicates dropped on both sides (%d here, %d there)", sampleDuplicates, sampleDuplicates)},
		{name: "itself no dedup", args: []string{"--no-dedup", samplePcap, samplePcap}, code: 0, wantStdout: true,
			stdout: "packets here and not there: 0, there and not here: 0"},
		{name: "first half", args: []string{samplePcap, firstHalf}, code: 1, wantStdout: true,
			stdout: "there and not here: 0"},
		{name: "damaged equals its readable part", args: []string{damaged, firstHalf}, code: 0, wantStdout: true,
			stdout: "packets here and not there: 0, there and not here: 0", stderr: "damaged record"},
		{name: "damaged with nothing before", args: []string{hopeless, samplePcap}, code: 2,
			stderr: "no packet before the damage"},
		{name: "missing file", args: []string{samplePcap, filepath.Join(t.TempDir(), "none.pcap")}, code: 2,
			stderr: "none.pcap"},
		{name: "bad flag", args: []string{"--bogus", samplePcap, samplePcap}, code: 2, stderr: "bogus"},
		{name: "one file", args: []string{samplePcap}, code: 2, stderr: "want 2 captures"},
		{name: "negative top", args: []string{"--top", "-1", samplePcap, samplePcap}, code: 2, stderr: "--top"},
		{name: "unreachable peer", args: []string{"--peer", "http://127.0.0.1:1", "--timeout", "5s", samplePcap}, code: 2,
			stderr: "fetch peer filter"},
		{name: "help", args: []string{"-h"}, code: 0, stdout: "usage: flowmon diff", wantStdout: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o, e bytes.Buffer
			code := run(append([]string{"diff"}, tc.args...), &o, &e)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, o.String(), e.String())
			}
			if !strings.Contains(o.String(), tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, o.String())
			}
			if !tc.wantStdout && o.Len() > 0 {
				t.Errorf("unexpected stdout:\n%s", o.String())
			}
			if !strings.Contains(e.String(), tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, e.String())
			}
		})
	}
}

// TestDiffFindsDroppedPackets compares the sample with a copy that lost
// every 5th record. Without dedup the diff must count exactly the records
// removed (with dedup, a removed record whose SPAN copy stays is not
// missing, so the exact count is the raw one).
func TestDiffFindsDroppedPackets(t *testing.T) {
	data, offs := pcapRecords(t)
	parts := [][]byte{data[:24]}
	dropped := 0
	for i := range len(offs) - 1 {
		if i%5 == 4 {
			dropped++
			continue
		}
		parts = append(parts, data[offs[i]:offs[i+1]])
	}
	lossy := writeTemp(t, "lossy.pcap", parts...)
	var o, e bytes.Buffer
	if code := run([]string{"diff", "--no-dedup", samplePcap, lossy}, &o, &e); code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, e.String())
	}
	want := fmt.Sprintf("packets here and not there: %d, there and not here: 0", dropped)
	if !strings.Contains(o.String(), want) {
		t.Errorf("diff output lacks %q:\n%s", want, o.String())
	}
}

// TestDiffPeer serves a pipeline that replayed the sample on loopback and
// diffs the sample against it: equal when both sides drop duplicates or
// both count them, and the SPAN copies when only one side drops them.
func TestDiffPeer(t *testing.T) {
	for _, tc := range []struct {
		name         string
		agentNoDedup bool
		args         []string
		code         int
		want         string
	}{
		{"both dedup", false, nil, 0, "packets here and not there: 0, there and not here: 0"},
		{"diff counts duplicates", false, []string{"--no-dedup"}, 1,
			fmt.Sprintf("packets here and not there: %d, there and not here: 0", sampleDuplicates)},
		{"agent counts duplicates", true, nil, 1,
			fmt.Sprintf("packets here and not there: 0, there and not here: %d", sampleDuplicates)},
		{"both count duplicates", true, []string{"--no-dedup"}, 0, "packets here and not there: 0, there and not here: 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := pipeline.DefaultConfig()
			cfg.ACSM.Capacity, cfg.FlowCount.ExpectedFlows = 4096, 4096
			cfg.NoDedup = tc.agentNoDedup
			pl, err := pipeline.NewPipeline(cfg)
			if err != nil {
				t.Fatal(err)
			}
			h, err := pipeline.Handler(pl, nil)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h) // 127.0.0.1:0
			defer srv.Close()
			if _, err := pipeline.Replay(context.Background(), []string{samplePcap}, pipeline.ReplayOptions{Pipeline: pl}); err != nil {
				t.Fatal(err)
			}
			var o, e bytes.Buffer
			args := append([]string{"diff", "--peer", srv.URL}, tc.args...)
			code := run(append(args, samplePcap), &o, &e)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, o.String(), e.String())
			}
			if !strings.Contains(o.String(), tc.want) {
				t.Errorf("diff output lacks %q:\n%s", tc.want, o.String())
			}
		})
	}
}
