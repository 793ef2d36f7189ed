package capture

import (
	"errors"
	"io"
	"io/fs"
	"testing"
)

const samplePcap = "../pcaps/sample.pcap"

func drain(t *testing.T, src Source) (n int, err error) {
	t.Helper()
	var p Packet
	for {
		if err := src.Next(&p); err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
		n++
	}
}

// TestFilesReadsInTurn: two files read as one source give both files'
// packets, and Stats add up.
func TestFilesReadsInTurn(t *testing.T) {
	one, err := OpenFiles(samplePcap)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	n1, err := drain(t, one)
	if err != nil || n1 == 0 {
		t.Fatalf("one file: %d packets, %v", n1, err)
	}
	two, err := OpenFiles(samplePcap, samplePcap)
	if err != nil {
		t.Fatal(err)
	}
	defer two.Close()
	n2, err := drain(t, two)
	if err != nil || n2 != 2*n1 {
		t.Fatalf("two files: %d packets (one has %d), %v", n2, n1, err)
	}
	if got, want := two.Stats().Packets, 2*one.Stats().Packets; got != want {
		t.Errorf("Stats().Packets %d, want %d", got, want)
	}
}

// TestFilesMissingLaterFile: a later file that cannot be opened is an
// error from Next, after the packets of the files before it.
func TestFilesMissingLaterFile(t *testing.T) {
	if _, err := OpenFiles("/nonexistent.pcap"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("first file missing: %v", err)
	}
	src, err := OpenFiles(samplePcap, "/nonexistent.pcap")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	n, err := drain(t, src)
	if n == 0 || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%d packets then %v; want the sample's packets then a not-exist error", n, err)
	}
}
