// Package otlprecv is an OTLP logs receiver for tests, independent of
// the exporter under test: an OTLP/HTTP server (net/http) and an
// OTLP/gRPC server (grpc's LogsService) that decode requests with the
// official protobuf types and keep the log records, and answer as the
// test says.
package otlprecv

import (
	"compress/gzip"
	"context"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // the server decodes gzip
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// Answer is what the receiver does with request n (from 0): nil takes
// it; an HTTP answer gives Status (and RetryAfter, a Retry-After header)
// without taking it; a gRPC answer returns Err. Rejected, on a request
// taken, is a partial success's count.
type Answer struct {
	Status     int
	RetryAfter string
	Err        error
	Rejected   int64
}

// Receiver keeps what it was sent.
type Receiver struct {
	mu       sync.Mutex
	reqs     int
	records  []*logspb.LogRecord
	resource []*logspb.ResourceLogs
	headers  []map[string][]string
	answer   func(n int) *Answer

	// URL is the endpoint to export to (http://127.0.0.1:PORT).
	URL string
}

// Records returns the log records taken so far, in order.
func (r *Receiver) Records() []*logspb.LogRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*logspb.LogRecord(nil), r.records...)
}

// Resources returns the resource logs of each request taken.
func (r *Receiver) Resources() []*logspb.ResourceLogs {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*logspb.ResourceLogs(nil), r.resource...)
}

// Requests is the count of requests received, taken or not.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs
}

// Headers returns each request's headers (gRPC: its metadata).
func (r *Receiver) Headers() []map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string][]string(nil), r.headers...)
}

// next counts a request and returns its answer.
func (r *Receiver) next(h map[string][]string) *Answer {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.reqs
	r.reqs++
	r.headers = append(r.headers, h)
	if r.answer == nil {
		return nil
	}
	return r.answer(n)
}

func (r *Receiver) take(req *collogspb.ExportLogsServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rl := range req.GetResourceLogs() {
		r.resource = append(r.resource, rl)
		for _, sl := range rl.GetScopeLogs() {
			r.records = append(r.records, sl.GetLogRecords()...)
		}
	}
}

// HTTP starts an OTLP/HTTP receiver (POST /v1/logs, protobuf, gzip or
// not) answering as answer says (nil: takes everything), closed at the
// test's end.
func HTTP(t testing.TB, answer func(n int) *Answer) *Receiver {
	srv := httptest.NewServer(nil)
	return serveHTTP(t, srv, answer)
}

// HTTPS is HTTP over TLS: the URL is https://, and CAFile the PEM file of
// the server's certificate, which a client checks it with.
func HTTPS(t testing.TB, answer func(n int) *Answer) (r *Receiver, caFile string) {
	srv := httptest.NewUnstartedServer(nil)
	srv.StartTLS()
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	return serveHTTP(t, srv, answer), caFile
}

// serveHTTP serves the receiver on srv, started, closed at the test's
// end.
func serveHTTP(t testing.TB, srv *httptest.Server, answer func(n int) *Answer) *Receiver {
	r := &Receiver{answer: answer}
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		if hr.URL.Path != "/v1/logs" || hr.Method != http.MethodPost || hr.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want POST /v1/logs of application/x-protobuf", http.StatusBadRequest)
			return
		}
		var body io.Reader = hr.Body
		if hr.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(hr.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req collogspb.ExportLogsServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		a := r.next(hr.Header.Clone())
		if a != nil && a.Status != 0 {
			if a.RetryAfter != "" {
				w.Header().Set("Retry-After", a.RetryAfter)
			}
			http.Error(w, http.StatusText(a.Status), a.Status)
			return
		}
		r.take(&req)
		resp := &collogspb.ExportLogsServiceResponse{}
		if a != nil && a.Rejected > 0 {
			resp.PartialSuccess = &collogspb.ExportLogsPartialSuccess{RejectedLogRecords: a.Rejected, ErrorMessage: "rejected by the test"}
		}
		out, _ := proto.Marshal(resp)
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	})
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// GRPC starts an OTLP/gRPC receiver answering as answer says, closed at
// the test's end.
func GRPC(t testing.TB, answer func(n int) *Answer) *Receiver {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{answer: answer, URL: "http://" + l.Addr().String()}
	s := grpc.NewServer()
	collogspb.RegisterLogsServiceServer(s, &logsServer{r: r})
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return r
}

type logsServer struct {
	collogspb.UnimplementedLogsServiceServer
	r *Receiver
}

func (s *logsServer) Export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	a := s.r.next(md)
	if a != nil && a.Err != nil {
		return nil, a.Err
	}
	s.r.take(req)
	resp := &collogspb.ExportLogsServiceResponse{}
	if a != nil && a.Rejected > 0 {
		resp.PartialSuccess = &collogspb.ExportLogsPartialSuccess{RejectedLogRecords: a.Rejected}
	}
	return resp, nil
}
