package pipeline

import (
	"testing"
	"time"
)

// TestZeekTimers checks, with every ACSM backend, that a 5-tuple is cut
// into connections where Zeek's TCP timers cut it
// (src/packet_analysis/protocol/tcp/TCPSessionAdapter.cc, the delays in
// base/init-bare.zeek):
//   - AttemptTimer, tcp_attempt_delay (5 s): an originator still in
//     SYN_SENT with a silent responder 5 s after its first SYN is an
//     attempt (S0), removed; its later packets open a new connection
//     (the one-sided captures of ssh.client-side-half-duplex.pcap). A FIN
//     within the 5 s leaves SYN_SENT, so the flow goes on (SH).
//   - ExpireTimer keeps a half-closed connection (one side's FIN, the
//     other established) until tcp_inactivity_timeout: the peer's data
//     and FIN minutes later close it (SF; http/no_crlf.pcap,
//     pppoe-over-qinq.pcap).
//   - ConnDeleteTimer, tcp_close_delay (5 s): a connection closed by a
//     FIN while the peer had not spoken is removed 5 s after it, even if
//     the peer spoke since, and the next packet, a FIN here, opens a new
//     one (tunnels/Teredo.pcap).
//   - TCPAnalyzer::WantConnection: a lone packet of a responder is a
//     connection (OTH).
func TestZeekTimers(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name string
		pkts []pkt
		want []string // conn_state history of each record
	}{
		{"an unanswered SYN, the originator's packets after 5 s", []pkt{
			{0, false, "S", 100, 0, 0}, {500 * ms, false, "A", 101, 1, 0}, {time.Second, false, "PA", 101, 1, 10},
			{6 * time.Second, false, "PA", 111, 1, 10}, {7 * time.Second, false, "A", 121, 1, 0}, {8 * time.Second, false, "FA", 121, 1, 0}},
			[]string{"S0 SAD", "SH DAF"}},
		{"an unanswered SYN sent again after 5 s", []pkt{
			{0, false, "S", 100, 0, 0}, {3 * time.Second, false, "S", 100, 0, 0}, {6 * time.Second, false, "S", 100, 0, 0}},
			[]string{"S0 S", "S0 S"}},
		{"an unanswered SYN and a FIN within 5 s", []pkt{
			{0, false, "S", 100, 0, 0}, {time.Second, false, "PA", 101, 1, 10}, {2 * time.Second, false, "FA", 111, 1, 0},
			{6 * time.Second, false, "A", 112, 1, 0}},
			[]string{"SH SDFA"}},
		{"one side's FIN, the other's 4 minutes later", []pkt{
			{0, false, "S", 100, 0, 0}, {ms, true, "SA", 900, 101, 0}, {2 * ms, false, "A", 101, 901, 0},
			{10 * ms, false, "FA", 101, 901, 0}, {time.Minute, true, "PA", 901, 102, 10}, {4 * time.Minute, true, "FA", 911, 102, 0}},
			[]string{"SF ShAFdf"}},
		{"a FIN first, then the other side's FIN 7 s later", []pkt{
			{0, true, "FA", 900, 101, 0}, {ms, false, "A", 101, 901, 0},
			{7 * time.Second, false, "FA", 101, 901, 0}, {7*time.Second + 80*ms, true, "A", 901, 102, 0}},
			[]string{"SHR ^fA", "SH Fa"}},
		// WantConnection takes any first packet (partial_connection_ok,
		// tcp_SYN_ack_ok) and flips one from a likely server port: a
		// lone packet of the responder is a connection of its own.
		{"a lone SYN-ACK", []pkt{{0, true, "SA", 900, 101, 0}}, []string{"OTH ^h"}},
		{"a lone segment of the responder", []pkt{{0, true, "PA", 900, 101, 5}}, []string{"OTH ^d"}},
	}
	for _, backend := range []string{"dleft", "exact", "kbf", "sbf", "fcf"} {
		for _, c := range cases {
			s := DefaultSettings()
			s.Backend = backend
			cfg, err := s.Config()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range replaySettings(t, writeTrace(t, c.pkts), cfg) {
				got = append(got, r.ConnState+" "+r.History)
			}
			if len(got) != len(c.want) {
				t.Errorf("%s, %s: records %q, want %q", backend, c.name, got, c.want)
				continue
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("%s, %s: record %d is %q, want %q", backend, c.name, i, got[i], c.want[i])
				}
			}
		}
	}
}
