package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"

	"github.com/flowmon/flowmon/internal/testutil/otlprecv"
	"github.com/flowmon/flowmon/record/connlog"
	"github.com/flowmon/flowmon/record/otlp"
)

// genTrace writes a generated trace of flows flows (flowmon gen) into the
// test's temp dir.
func genTrace(t *testing.T, flows string) string {
	t.Helper()
	trace := filepath.Join(t.TempDir(), "gen.pcap")
	var out, errb bytes.Buffer
	if code := run([]string{"gen", "-o", trace, "--flows", flows, "--duration", "30s", "--seed", "7"}, &out, &errb); code != 0 {
		t.Fatalf("flowmon gen: exit %d: %s", code, errb.String())
	}
	return trace
}

// otlpKey names a record: its uid and whether it is an interim one.
type otlpKey struct {
	uid     string
	interim bool
	ts      float64
}

// compareOTLP checks that recs are the log records of the records of the
// flow log at connLog, one each (with complete, every one of them): read
// back (otlp.Decode) each equals its conn.log line field by field, and
// its body, when it has one, is that line. It returns how many matched.
func compareOTLP(t *testing.T, connLog string, recs []*logspb.LogRecord, complete bool) int {
	t.Helper()
	want := map[otlpKey]connlog.Record{}
	lines := map[otlpKey]string{}
	f, err := os.ReadFile(connLog)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(bytes.TrimSpace(f), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r connlog.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		k := otlpKey{r.UID, r.Interim, r.TS}
		if r.Interim {
			k.ts = r.Duration // a flow's interim records differ by their counts so far
		}
		if _, dup := want[k]; dup {
			t.Fatalf("conn.log has %v twice", k)
		}
		want[k], lines[k] = r, string(line)
	}
	n, missingCID := 0, 0
	for _, lr := range recs {
		got, err := otlp.Decode(lr)
		if err != nil {
			t.Errorf("log record: %v", err)
			continue
		}
		k := otlpKey{got.UID, got.Interim, got.TS}
		if got.Interim {
			k.ts = got.Duration
		}
		w, ok := want[k]
		if !ok {
			t.Errorf("log record %v: not in conn.log, or twice", k)
			continue
		}
		delete(want, k)
		got.OrigH, got.RespH, w.OrigH, w.RespH = got.OrigH.Unmap(), got.RespH.Unmap(), w.OrigH.Unmap(), w.RespH.Unmap()
		if !reflect.DeepEqual(got, w) {
			t.Errorf("log record %v:\n%+v\nconn.log:\n%+v", k, got, w)
		}
		// No body is nil from a receiver, an empty value through a
		// collector's JSON.
		if b, ok := lr.GetBody().GetValue().(*commonpb.AnyValue_StringValue); ok && b.StringValue != lines[k] {
			t.Errorf("log record %v: body %q, conn.log line %q", k, b.StringValue, lines[k])
		}
		if got.CommunityID == "" {
			missingCID++
		}
		n++
	}
	if complete && len(want) > 0 {
		t.Errorf("%d conn.log records not exported", len(want))
	}
	if missingCID > 0 {
		t.Errorf("%d log records without a community_id", missingCID)
	}
	return n
}

// TestReplayOTLP: a replay of a generated 5,000-flow trace exports one
// log record a flow record to an independent OTLP receiver, over
// OTLP/HTTP and over OTLP/gRPC, each equal to its --flows-out line; the
// summary's otlp section counts them sent.
func TestReplayOTLP(t *testing.T) {
	trace := genTrace(t, "5000")
	for _, proto := range []string{"http", "grpc"} {
		t.Run(proto, func(t *testing.T) {
			r := otlprecv.HTTP(t, nil)
			if proto == "grpc" {
				r = otlprecv.GRPC(t, nil)
			}
			flows := filepath.Join(t.TempDir(), "flows.jsonl")
			var out, errb bytes.Buffer
			// HTTP with the conn.log lines as bodies, gRPC uncompressed.
			extra := map[string][]string{"http": {"--otlp-body", "connlog"}, "grpc": {"--otlp-compression", "none"}}[proto]
			args := append([]string{"replay", "--json", "--rules", "none", "--flows-out", flows, "--otlp", r.URL, "--otlp-protocol", proto}, extra...)
			if code := run(append(args, trace), &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			var s struct {
				Flows uint64 `json:"flows"`
				OTLP  struct {
					Sent, Dropped uint64
				} `json:"otlp"`
			}
			if err := json.Unmarshal(out.Bytes(), &s); err != nil {
				t.Fatal(err)
			}
			n := compareOTLP(t, flows, r.Records(), true)
			for _, lr := range r.Records() {
				if (lr.GetBody() != nil) != (proto == "http") {
					t.Fatalf("%s: a log record's body is %v", proto, lr.GetBody())
				}
			}
			if n != 5000 || s.OTLP.Sent != 5000 || s.OTLP.Dropped != 0 {
				t.Errorf("%d log records compared, summary's otlp %+v: want 5000 sent", n, s.OTLP)
			}
		})
	}
}

// TestReplayOTLPFlags: OTLP settings without --otlp, and bad ones, are
// usage errors naming the flag.
func TestReplayOTLPFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--otlp-protocol", "grpc"}, "--otlp-protocol does nothing without --otlp"},
		{[]string{"--otlp", "127.0.0.1:4318"}, "--otlp: \"127.0.0.1:4318\" must be a URL"},
		{[]string{"--otlp", "http://h:4318", "--otlp-batch-size", "0"}, "--otlp-batch-size: 0 must be between"},
		{[]string{"--otlp", "http://h:4318", "--otlp-header", "x"}, "--otlp-header: [0]: a header must be \"Name: value\""},
	} {
		var out, errb bytes.Buffer
		if code := run(append(append([]string{"replay"}, c.args...), "../../pcaps/sample.pcap"), &out, &errb); code != 2 || !bytes.Contains(errb.Bytes(), []byte(c.want)) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
}
