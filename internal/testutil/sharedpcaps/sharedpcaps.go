// Package sharedpcaps finds the real third-party captures that CI keeps
// beside the checkout (../shared/pcaps/real, described by its
// MANIFEST.tsv), for the tests of every package that reads them.
package sharedpcaps

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// Capture is one capture row of MANIFEST.tsv.
type Capture struct {
	Path    string // absolute path of the file
	Name    string // path relative to the folder, as the manifest names it
	Format  string // pcap-le, pcap-be, pcap-ns-le, pcapng
	Link    string
	Packets int // capinfos's count (or another tool's, "N(pcapinfo)"); -1 when none
}

// Dir returns the folder, skipping the test (with the reason) when the
// checkout has no ../shared beside it.
func Dir(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "shared", "pcaps", "real")
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST.tsv")); err != nil {
		t.Skipf("shared captures not found at %s: %v", dir, err)
	}
	return dir
}

// Captures lists the manifest's capture rows.
func Captures(t testing.TB) []Capture {
	dir := Dir(t)
	f, err := os.Open(filepath.Join(dir, "MANIFEST.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []Capture
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		c := strings.Split(sc.Text(), "\t")
		if len(c) < 9 || c[5] != "capture" {
			continue
		}
		n := -1
		if v, err := strconv.Atoi(strings.TrimSuffix(c[8], "(pcapinfo)")); err == nil {
			n = v
		}
		rows = append(rows, Capture{Path: filepath.Join(dir, c[0]), Name: c[0], Format: c[6], Link: c[7], Packets: n})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}
