//go:build linux

package main

import (
	"bufio"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/internal/testutil/bpftest"
	"github.com/flowmon/flowmon/internal/testutil/netnstest"
)

// The agent when its interface goes down and comes up, and when it is
// deleted and made again under the same name (a new index): it keeps
// running, /healthz and the metrics say which source is out, the stop and
// the recovery are each logged once, and what is sent once the interface
// is back is counted.

// TestRunIfaceDownAndGone: AF_PACKET, two sockets in a fanout group, the
// agent run as nobody: the capability it kept is enough to reopen.
func TestRunIfaceDownAndGone(t *testing.T) { testRunIface(t, "afpacket", 2, "--user", "nobody") }

// TestRunXDPIfaceDownAndGone: the eBPF program at XDP, two rings; the
// kernel detaches it with the deleted interface and the agent attaches it
// to the new one, as nobody with the capabilities it kept.
func TestRunXDPIfaceDownAndGone(t *testing.T) {
	bpftest.Require(t)
	testRunIface(t, "xdp", 2, "--user", "nobody")
}

// TestRunPcapIfaceDownAndGone: libpcap (-tags pcap), one handle.
func TestRunPcapIfaceDownAndGone(t *testing.T) { testRunIface(t, "pcap", 1) }

func testRunIface(t *testing.T, source string, workers int, args ...string) {
	n := liveNet(t)
	bin := buildFlowmon(t, buildTags(source)...)
	trace := writeLiveTrace(t, 30, 1, 5)
	a := startAgent(t, bin, n, append([]string{"--source", source, "--workers", strconv.Itoa(workers)}, args...)...)
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", append([]string{"-n", n.Name}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	var sent uint64
	send := func(what string) {
		t.Helper()
		st, err := n.Send(n.A, trace, netnstest.SendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sent += st.Packets
		a.waitUntil(t, n, what+": all sent counted", func(code int, health, metrics string) bool {
			return sumMetric(metrics, "flowmon_capture_packets_total") == float64(sent)
		})
	}
	// sourcesUp is the sources' flowmon_component_up summed.
	sourcesUp := func(metrics string) float64 {
		return sumMetric(grepLines(metrics, `flowmon_component_up{component="source:`), "flowmon_component_up")
	}
	healthy := func(what string) {
		t.Helper()
		a.waitUntil(t, n, what+": /healthz 200, every source up", func(code int, health, metrics string) bool {
			return code == http.StatusOK && sourcesUp(metrics) == float64(workers)
		})
		if code, body := a.get(t, n, "/-/ready"); code != http.StatusOK {
			t.Errorf("%s: /-/ready %d %q", what, code, body)
		}
	}
	out := func(what, state string) {
		t.Helper()
		a.waitUntil(t, n, what+": /healthz 503 naming each source", func(code int, health, metrics string) bool {
			return code == http.StatusServiceUnavailable &&
				strings.Count(health, ":"+n.B+" failing since") == workers &&
				strings.Count(health, ": interface "+n.B+" "+state) == workers &&
				sourcesUp(metrics) == 0
		})
		// Every source is out: the agent is not capturing.
		if code, body := a.get(t, n, "/-/ready"); code != http.StatusServiceUnavailable {
			t.Errorf("%s: /-/ready %d %q with every source out", what, code, body)
		}
	}

	healthy("started")
	send("started")

	ip("link", "set", n.B, "down")
	out("set down", "down")
	ip("link", "set", n.B, "up")
	healthy("set up")
	send("set up")

	ip("link", "del", n.A) // and its peer, n.B
	out("deleted", "deleted")
	ip("link", "add", n.A, "type", "veth", "peer", "name", n.B)
	ip("link", "set", n.A, "up")
	ip("link", "set", n.B, "up")
	healthy("made again")
	send("made again")

	_, metrics := a.get(t, n, "/metrics")
	for _, reason := range []string{"down", "gone"} {
		if got := sumMetric(grepLines(metrics, "flowmon_capture_source_stops_total"), `flowmon_capture_source_stops_total{interface="`+n.B+`",reason="`+reason+`"`); got != float64(workers) {
			t.Errorf("stops %s: %v, want %d (one a source)\n%s", reason, got, workers, grepLines(metrics, "flowmon_capture_source_"))
		}
	}
	if _, err := exec.LookPath("promtool"); err == nil {
		lint := exec.Command("promtool", "check", "metrics")
		lint.Stdin = strings.NewReader(metrics)
		if out, err := lint.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	}
	s := a.stop(t)
	if s.Packets != sent {
		t.Errorf("summary: %d packets, %d sent", s.Packets, sent)
	}
	if s.SourceStops == nil || *s.SourceStops != uint64(2*workers) {
		t.Errorf("summary source_stops %v, want %d", deref(s.SourceStops), 2*workers)
	}
	logs := a.stderr.String()
	for i := range workers {
		src := "component=source:" + strconv.Itoa(i) + ":" + n.B
		for _, line := range []string{`msg="component failing" ` + src + ` err="interface ` + n.B + ` down"`,
			`msg="component failing" ` + src + ` err="interface ` + n.B + ` deleted"`} {
			if c := strings.Count(logs, line); c != 1 {
				t.Errorf("%q logged %d times, want once", line, c)
			}
		}
		if c := strings.Count(logs, `msg="component recovered" `+src+" "); c != 2 {
			t.Errorf("%s's recovery logged %d times, want twice (set up, made again)", src, c)
		}
	}
	// An AF_PACKET socket or a libpcap handle reopens itself; the eBPF
	// rings share one program, which the first ring to find the
	// interface back attaches to it, and the others find up.
	if c := strings.Count(logs, `msg="capture source reopened"`); c < 1 || c > workers || (source != "xdp" && c != workers) {
		t.Errorf("a recovery with a reopen logged %d times, want one a source (afpacket, pcap) or at least one (xdp)", c)
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("flowmon run's log:\n%s", logs)
	}
}

// waitUntil polls the agent's /healthz and /metrics until cond holds of
// them, and fails t if it does not within 15 seconds.
func (a *liveAgent) waitUntil(t *testing.T, n *netnstest.Net, what string, cond func(code int, health, metrics string) bool) {
	t.Helper()
	var code int
	var health, metrics string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		code, health = a.get(t, n, "/healthz")
		_, metrics = a.get(t, n, "/metrics")
		if cond(code, health, metrics) {
			return
		}
	}
	t.Fatalf("%s: not within 15s; /healthz %d %q\n%s\n%s\nlog:\n%s", what, code, health,
		grepLines(metrics, "flowmon_capture_source_"), grepLines(metrics, "flowmon_capture_packets_total"), a.stderr)
}

// sumMetric adds up the samples of the series whose lines start with name
// (a metric's name, or its name and the start of its labels).
func sumMetric(metrics, name string) float64 {
	var sum float64
	sc := bufio.NewScanner(strings.NewReader(metrics))
	for sc.Scan() {
		l := sc.Text()
		rest, ok := strings.CutPrefix(l, name)
		if !ok || (rest != "" && !strings.ContainsAny(rest[:1], "{ ,\"")) {
			continue
		}
		if i := strings.LastIndexByte(l, ' '); i > 0 {
			v, err := strconv.ParseFloat(l[i+1:], 64)
			if err == nil {
				sum += v
			}
		}
	}
	return sum
}
