package otlp

import (
	"errors"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/internal/health"
	"github.com/flowmon/flowmon/internal/testutil/otlprecv"
	"github.com/flowmon/flowmon/record"
	"github.com/flowmon/flowmon/record/connlog"
)

func tcpFlow(i int) record.Flow {
	f := record.Flow{
		Start: 1_700_000_000_123_456_789, End: 1_700_000_001_500_000_000, UID: uint64(1000 + i),
		Orig: netip.MustParseAddr("10.0.0.1"), Resp: netip.MustParseAddr("2001:db8::2"),
		OrigPort: uint16(1024 + i%60000), RespPort: 80, Proto: 6, State: acsm.SF, Confidence: 1,
		OrigPkts: 5, RespPkts: 4, OrigBytes: 120, RespBytes: 2500, OrigIPBytes: 400, RespIPBytes: 3000,
		EndReason: record.EndOfFlow,
	}
	copy(f.CommunityID[:], "1:pctwrwi50yq9UFY0G1kaEjsx1CA=")
	for _, c := range []byte("ShADadFf") {
		f.History.AppendLetter(c)
	}
	return f
}

func flows(n int) []record.Flow {
	out := make([]record.Flow, n)
	for i := range out {
		out[i] = tcpFlow(i)
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkRecords checks that got are want's log records, in order, each
// read back (Decode) equal to its conn.log line, which is its body too.
func checkRecords(t *testing.T, got []record.Flow, recs []*logspb.LogRecord) {
	t.Helper()
	if len(recs) != len(got) {
		t.Fatalf("%d log records, want %d", len(recs), len(got))
	}
	for i := range got {
		line := strings.TrimSuffix(string(connlog.AppendJSON(nil, &got[i])), "\n")
		if recs[i].GetBody() == nil {
			line = ""
		}
		if b := recs[i].GetBody().GetStringValue(); b != line {
			t.Fatalf("record %d: body %q, want %q", i, b, line)
		}
		if recs[i].GetTimeUnixNano() != uint64(got[i].End) {
			t.Fatalf("record %d: time %d, want the flow's end %d", i, recs[i].GetTimeUnixNano(), got[i].End)
		}
	}
}

// TestHTTPRecords: every record reaches an OTLP/HTTP receiver as one log
// record, gzip-compressed, with the headers given, in batches of at most
// BatchSize; each reads back equal to its conn.log line; the resource
// says the service and the host.
func TestHTTPRecords(t *testing.T) {
	r := otlprecv.HTTP(t, nil)
	reg := prometheus.NewPedanticRegistry()
	x, err := New(Options{Endpoint: r.URL, Headers: []string{"Authorization: Bearer t0ken"}, BatchSize: 100, Body: BodyConnLog,
		BatchTimeout: 10 * time.Millisecond, HostName: "probe1", Interface: "eth0", Version: "v1.2.3", FlushWait: 10 * time.Second}, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	in := flows(1050)
	in[7].EndReason = record.EndActive
	in[8].TunnelParent = 77
	for i := 0; i < len(in); i += 70 {
		if err := x.WriteFlows(in[i:min(i+70, len(in))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
	checkRecords(t, in, r.Records())
	for i, rec := range r.Records() {
		got, err := Decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		var want connlog.Record
		if err := jsonUnmarshal(connlog.AppendJSON(nil, &in[i]), &want); err != nil {
			t.Fatal(err)
		}
		if !equalRecords(got, want) {
			t.Fatalf("record %d reads back as\n%+v\nwant\n%+v", i, got, want)
		}
	}
	if s := x.Stats(); s.Sent != 1050 || s.Batches < 11 || s.Dropped() != 0 {
		t.Errorf("stats %+v: want 1050 sent in at least 11 batches of 100, none dropped", s)
	}
	for _, h := range r.Headers() {
		if h["Authorization"][0] != "Bearer t0ken" || h["Content-Encoding"][0] != "gzip" {
			t.Fatalf("headers %v: want the Authorization given, gzip", h)
		}
	}
	res := map[string]string{}
	for _, kv := range r.Resources()[0].GetResource().GetAttributes() {
		res[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	if res["service.name"] != "flowmon" || res["host.name"] != "probe1" || res["network.interface.name"] != "eth0" || res["service.version"] != "v1.2.3" {
		t.Errorf("resource %v", res)
	}
	want := `
# HELP flowmon_otlp_records_sent_total Flow records the OTLP collector took (one log record each).
# TYPE flowmon_otlp_records_sent_total counter
flowmon_otlp_records_sent_total 1050
# HELP flowmon_otlp_queue_records Flow records waiting in the OTLP exporter's queue.
# TYPE flowmon_otlp_queue_records gauge
flowmon_otlp_queue_records 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "flowmon_otlp_records_sent_total", "flowmon_otlp_queue_records"); err != nil {
		t.Error(err)
	}
}

// TestHTTPRetryAfter: a collector answering 503 with a Retry-After loses
// nothing: the batch goes again after the wait it asked for, the
// component fails meanwhile and recovers, and the retry is counted.
func TestHTTPRetryAfter(t *testing.T) {
	r := otlprecv.HTTP(t, func(n int) *otlprecv.Answer {
		if n < 2 {
			return &otlprecv.Answer{Status: http.StatusServiceUnavailable, RetryAfter: "1"}
		}
		return nil
	})
	hr := health.NewRegistry()
	x, err := New(Options{Endpoint: r.URL, BatchSize: 500, BatchTimeout: time.Millisecond, FlushWait: 20 * time.Second,
		Health: hr, minBackoff: time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	in := flows(400)
	start := time.Now()
	if err := x.WriteFlows(in); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the component failing", func() bool { return len(hr.Failing()) == 1 })
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("delivered after %v: the two Retry-After: 1 were not waited", took)
	}
	checkRecords(t, in, r.Records())
	s := x.Stats()
	if s.Sent != 400 || s.Retries != 2 || s.Dropped() != 0 || !s.Up {
		t.Errorf("stats %+v: want 400 sent, 2 retries, none dropped, up", s)
	}
	st := hr.Statuses()[0]
	if st.Failures != 1 || st.Err != nil || st.Name != "otlp:"+r.URL {
		t.Errorf("component %+v: want one failure, over", st)
	}
}

// TestQueueFull: while the collector fails, records fill the queue and
// the rest drop, counted and reported as the batch's failed records; a
// flush that gives up drops what is left, the batch being retried too,
// so that the counts add up.
func TestQueueFull(t *testing.T) {
	r := otlprecv.HTTP(t, func(int) *otlprecv.Answer { return &otlprecv.Answer{Status: http.StatusBadGateway} })
	x, err := New(Options{Endpoint: r.URL, Queue: 300, BatchSize: 100, BatchTimeout: time.Millisecond,
		FlushWait: 300 * time.Millisecond, WaitForRoom: true, minBackoff: time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := x.WriteFlows(flows(100)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a failed request", func() bool { return x.Stats().Retries > 0 })
	err = x.WriteFlows(flows(500))
	var le *record.LossError
	if !errors.As(err, &le) || le.Failed != 300 || !errors.Is(err, ErrQueueFull) {
		t.Fatalf("WriteFlows: %v: want 300 records failed at a full queue", err)
	}
	err = x.Flush()
	if !errors.As(err, &le) || le.Dropped != 300 || !errors.Is(err, ErrFlushTimeout) {
		t.Fatalf("Flush: %v: want the 300 queued dropped", err)
	}
	s := x.Stats()
	if s.DroppedQueue != 300 || s.DroppedUnsent != 300 || s.Sent != 0 || s.Queued != 0 {
		t.Errorf("stats %+v: want 300 dropped at the queue, 300 unsent, none queued", s)
	}
}

// TestRejected: a request refused for good (400) is not retried, and a
// partial success's rejected records are counted; both are reported.
func TestRejected(t *testing.T) {
	r := otlprecv.HTTP(t, func(n int) *otlprecv.Answer {
		switch n {
		case 0:
			return &otlprecv.Answer{Status: http.StatusBadRequest}
		case 1:
			return &otlprecv.Answer{Rejected: 3}
		}
		return nil
	})
	x, err := New(Options{Endpoint: r.URL, BatchSize: 10, BatchTimeout: time.Millisecond, FlushWait: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := x.WriteFlows(flows(10)); err != nil {
		t.Fatal(err)
	}
	if err := x.Flush(); !errors.Is(err, ErrRejected) {
		t.Fatalf("Flush: %v, want the batch rejected", err)
	}
	if err := x.WriteFlows(flows(10)); err != nil {
		t.Fatal(err)
	}
	var le *record.LossError
	if err := x.Flush(); !errors.As(err, &le) || le.Dropped != 3 {
		t.Fatalf("Flush: %v, want 3 records rejected", err)
	}
	if s := x.Stats(); s.DroppedRejected != 13 || s.Sent != 7 || s.Retries != 0 || r.Requests() != 2 {
		t.Errorf("stats %+v, %d requests: want 13 rejected, 7 sent, no retry", s, r.Requests())
	}
}

// TestGRPC: OTLP/gRPC delivers every record, with the headers as
// metadata; Unavailable, and ResourceExhausted with a RetryInfo, are
// retried after the delay asked; ResourceExhausted without one is not.
func TestGRPC(t *testing.T) {
	info, _ := status.New(codes.ResourceExhausted, "slow down").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(500 * time.Millisecond)})
	r := otlprecv.GRPC(t, func(n int) *otlprecv.Answer {
		switch n {
		case 0:
			return &otlprecv.Answer{Err: status.Error(codes.Unavailable, "down")}
		case 1:
			return &otlprecv.Answer{Err: info.Err()}
		}
		return nil
	})
	x, err := New(Options{Endpoint: r.URL, Protocol: ProtocolGRPC, Headers: []string{"X-Scope-OrgID: tenant1"}, BatchSize: 1000,
		BatchTimeout: time.Millisecond, FlushWait: 20 * time.Second, minBackoff: time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	in := flows(1500)
	start := time.Now()
	if err := x.WriteFlows(in); err != nil {
		t.Fatal(err)
	}
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 500*time.Millisecond {
		t.Errorf("delivered after %v: the RetryInfo's 500ms was not waited", took)
	}
	checkRecords(t, in, r.Records())
	if s := x.Stats(); s.Sent != 1500 || s.Retries != 2 {
		t.Errorf("stats %+v: want 1500 sent, 2 retries", s)
	}
	if h := r.Headers()[0]["x-scope-orgid"]; len(h) != 1 || h[0] != "tenant1" {
		t.Errorf("metadata %v", r.Headers()[0])
	}

	r2 := otlprecv.GRPC(t, func(n int) *otlprecv.Answer {
		return &otlprecv.Answer{Err: status.Error(codes.ResourceExhausted, "out of memory")}
	})
	x2, err := New(Options{Endpoint: r2.URL, Protocol: ProtocolGRPC, BatchTimeout: time.Millisecond, FlushWait: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x2.Close()
	if err := x2.WriteFlows(flows(5)); err != nil {
		t.Fatal(err)
	}
	if err := x2.Flush(); !errors.Is(err, ErrRejected) {
		t.Fatalf("Flush: %v: want ResourceExhausted without RetryInfo rejected", err)
	}
}

// TestCloseCountsUnsent: Close stops a sender retrying a collector that
// is down, and counts what it held as unsent.
func TestCloseCountsUnsent(t *testing.T) {
	x, err := New(Options{Endpoint: "http://127.0.0.1:1", BatchTimeout: time.Millisecond, minBackoff: time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.WriteFlows(flows(50)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a retry", func() bool { return x.Stats().Retries > 0 })
	if err := x.Close(); !errors.Is(err, ErrFlushTimeout) {
		t.Fatalf("Close: %v", err)
	}
	if s := x.Stats(); s.DroppedUnsent != 50 {
		t.Errorf("stats %+v: want 50 unsent", s)
	}
}

// TestTLS: an https endpoint is checked against the CA file given, or
// not at all with InsecureSkipVerify; against the system's CAs a test
// server's certificate fails, and the component says why.
func TestTLS(t *testing.T) {
	r, ca := otlprecv.HTTPS(t, nil)
	for _, o := range []Options{{CAFile: ca}, {InsecureSkipVerify: true}} {
		o.Endpoint, o.BatchTimeout, o.FlushWait = r.URL, time.Millisecond, 10*time.Second
		x, err := New(o, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := x.WriteFlows(flows(10)); err != nil {
			t.Fatal(err)
		}
		if err := x.Flush(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
		x.Close()
	}
	if n := len(r.Records()); n != 20 {
		t.Errorf("%d records over TLS, want 20", n)
	}
	hr := health.NewRegistry()
	x, err := New(Options{Endpoint: r.URL, BatchTimeout: time.Millisecond, Health: hr, minBackoff: time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := x.WriteFlows(flows(1)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the component failing", func() bool { return len(hr.Failing()) == 1 })
	if err := hr.Failing()[0].Err; !strings.Contains(err.Error(), "certificate") {
		t.Errorf("failing with %v, want a certificate's error", err)
	}
	if _, err := New(Options{Endpoint: r.URL, CAFile: "/nonexistent/ca.pem"}, nil); err == nil {
		t.Error("New with a CA file that is not there: no error")
	}
}

// TestHeadersFile: the headers file's lines are sent beside the headers
// given; a bad line is New's error, naming the file and line.
func TestHeadersFile(t *testing.T) {
	r := otlprecv.HTTP(t, nil)
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	os.WriteFile(good, []byte("# the collector's token\n\nAuthorization: Bearer s3cret\n"), 0o600)
	os.WriteFile(bad, []byte("X-Ok: 1\nno colon here\n"), 0o600)
	if _, err := New(Options{Endpoint: r.URL, HeadersFile: bad}, nil); err == nil || !strings.Contains(err.Error(), bad+":2:") || strings.Contains(err.Error(), "colon here") {
		t.Errorf("bad headers file: %v, want its line named and its text not", err)
	}
	x, err := New(Options{Endpoint: r.URL, Headers: []string{"X-Tenant: a"}, HeadersFile: good, BatchTimeout: time.Millisecond, FlushWait: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := x.WriteFlows(flows(1)); err != nil {
		t.Fatal(err)
	}
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
	h := http.Header(r.Headers()[0])
	if h.Get("Authorization") != "Bearer s3cret" || h.Get("X-Tenant") != "a" {
		t.Errorf("headers %v", h)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		h    string
		want time.Duration
	}{{"", 0}, {"7", 7 * time.Second}, {"-3", 0}, {"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second}, {now.Add(-time.Hour).Format(http.TimeFormat), 0}} {
		if got := retryAfter(c.h, now); got != c.want {
			t.Errorf("Retry-After %q: %v, want %v", c.h, got, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string // "" for valid
	}{
		{Options{Endpoint: "http://127.0.0.1:4318"}, ""},
		{Options{Endpoint: "https://otel:4317", Protocol: ProtocolGRPC, CAFile: "ca.pem"}, ""},
		{Options{}, "endpoint: none given"},
		{Options{Endpoint: "127.0.0.1:4318"}, "must be a URL"},
		{Options{Endpoint: "http://u:p@otel:4318"}, "credentials go in a header"},
		{Options{Endpoint: "http://otel:4317/x", Protocol: ProtocolGRPC}, "no path"},
		{Options{Endpoint: "http://otel:4318", InsecureSkipVerify: true}, "need an https:// endpoint"},
		{Options{Endpoint: "http://otel:4318", Headers: []string{"NoColon"}}, `must be "Name: value": this one has no colon`},
		{Options{Endpoint: "http://otel:4318", Headers: []string{"Bad Name: x"}}, "not allowed in a name"},
		{Options{Endpoint: "http://otel:4318", BatchSize: 5000}, "batch-size: 5000"},
		{Options{Endpoint: "http://otel:4318", Protocol: "thrift"}, "protocol"},
	} {
		err := c.o.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.o, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrOptions)):
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}
