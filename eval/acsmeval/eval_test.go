package acsmeval

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/gen"
)

// genTrace writes a small flowmon gen trace and its truth sidecar.
func genTrace(t *testing.T, flows int) (pcap, truth string) {
	t.Helper()
	dir := t.TempDir()
	pcap, truth = filepath.Join(dir, "t.pcap"), filepath.Join(dir, "t.truth.jsonl")
	opt := gen.DefaultOptions()
	opt.Flows, opt.Seed, opt.Snaplen = flows, 11, 96
	g, err := gen.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	pf, _ := os.Create(pcap)
	tf, _ := os.Create(truth)
	if _, err := g.WriteTo(pf, tf); err != nil {
		t.Fatal(err)
	}
	pf.Close()
	tf.Close()
	return pcap, truth
}

// TestAcceptance holds the ACSM to its accuracy targets on a small gen
// trace: the exact backend agrees with gen's conn_state on >= 99.9% of
// flows, kbf at p = 0.001 on >= 99%.
func TestAcceptance(t *testing.T) {
	pcap, truth := genTrace(t, 3000)
	var out, conn bytes.Buffer
	rows, err := Run(Config{Traces: []string{pcap}, Ps: []float64{0.001}, Truth: truth, ConnOut: &conn, ConnBackend: acsm.BackendKBF, ConnP: 0.001}, &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		switch {
		case r.Backend == acsm.BackendExact && r.TruthAgreement < 0.999:
			t.Errorf("exact agrees with gen on %.4f of flows, want >= 0.999", r.TruthAgreement)
		case r.Backend == acsm.BackendKBF && r.TruthAgreement < 0.99:
			t.Errorf("kbf at p=0.001 agrees on %.4f, want >= 0.99", r.TruthAgreement)
		}
		if r.Backend != acsm.BackendExact && r.FalsePositive+r.FalseNegative+r.Incorrect > r.Flows/20 {
			t.Errorf("%s p=%g own=%v: %d errors in %d flows", r.Backend, r.P, r.OwnSizing, r.FalsePositive+r.FalseNegative+r.Incorrect, r.Flows)
		}
	}
	if !strings.Contains(out.String(), "| 0.001 | kbf |") {
		t.Errorf("report lacks the kbf row:\n%s", out.String())
	}
	lines := strings.Count(conn.String(), "\n")
	if lines < 2900 || !strings.Contains(conn.String(), `"conn_state":"SF"`) {
		t.Errorf("conn-out has %d lines", lines)
	}
}
