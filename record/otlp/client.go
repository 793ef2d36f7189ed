package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	grpcgzip "google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// maxResponse bounds the body of a collector's answer that is read.
const maxResponse = 64 << 10

// client sends one export request and says how it went.
type client interface {
	// export sends req; rejected is the records the collector said it
	// did not take (a partial success). An error is a *sendError.
	export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (rejected int64, bytes int, err error)
	close() error
}

// sendError is a failed request: Retry says whether the same request may
// be sent again (a collector that is down or overloaded), After is the
// wait the collector asked for (0: none).
type sendError struct {
	Err   error
	Retry bool
	After time.Duration
}

func (e *sendError) Error() string { return e.Err.Error() }
func (e *sendError) Unwrap() error { return e.Err }

// tlsConfig is o's TLS, nil for an http:// endpoint.
func tlsConfig(o Options, https bool) (*tls.Config, error) {
	if !https {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: o.InsecureSkipVerify} //nolint:gosec // the operator's choice, documented as for tests
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("otlp: read CA file: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("otlp: CA file %s: no PEM certificate in it", o.CAFile)
		}
	}
	if o.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("otlp: client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// httpClient is OTLP/HTTP with binary protobuf, gzip-compressed.
type httpClient struct {
	url     string
	headers http.Header
	hc      *http.Client
	buf     []byte
	gz      *gzip.Writer // nil: no compression
	body    bytes.Buffer
}

func newHTTPClient(endpoint string, o Options, tc *tls.Config) *httpClient {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	c := &httpClient{url: strings.TrimSuffix(endpoint, "/") + "/v1/logs", headers: http.Header{},
		hc: &http.Client{Transport: tr}}
	// The fastest level: a batch compresses to about a fifth at it
	// already, and the default level costs the replay several times the
	// CPU (docs/results/otlp.md).
	if o.Compression == CompressionGzip {
		c.gz, _ = gzip.NewWriterLevel(&c.body, gzip.BestSpeed)
	}
	for _, h := range o.Headers {
		name, value, _ := splitHeader(h)
		c.headers.Add(name, value)
	}
	return c
}

func (c *httpClient) export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (int64, int, error) {
	var err error
	if c.buf, err = (proto.MarshalOptions{}).MarshalAppend(c.buf[:0], req); err != nil {
		return 0, 0, &sendError{Err: fmt.Errorf("otlp: encode: %w", err)}
	}
	payload := c.buf
	if c.gz != nil {
		c.body.Reset()
		c.gz.Reset(&c.body)
		if _, err := c.gz.Write(c.buf); err != nil {
			return 0, 0, &sendError{Err: err}
		}
		if err := c.gz.Close(); err != nil {
			return 0, 0, &sendError{Err: err}
		}
		payload = c.body.Bytes()
	}
	n := len(payload)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(payload))
	if err != nil {
		return 0, 0, &sendError{Err: err}
	}
	for k, v := range c.headers {
		hr.Header[k] = v
	}
	hr.Header.Set("Content-Type", "application/x-protobuf")
	if c.gz != nil {
		hr.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.hc.Do(hr)
	if err != nil {
		return 0, 0, &sendError{Err: err, Retry: true}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if resp.StatusCode/100 == 2 {
		var r collogspb.ExportLogsServiceResponse
		if len(body) > 0 && resp.Header.Get("Content-Type") == "application/x-protobuf" {
			if err := proto.Unmarshal(body, &r); err == nil && r.PartialSuccess != nil {
				return r.PartialSuccess.RejectedLogRecords, n, nil
			}
		}
		return 0, n, nil
	}
	e := &sendError{Err: fmt.Errorf("otlp: POST %s: %s%s", c.url, resp.Status, httpMessage(body, resp.Header.Get("Content-Type")))}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		e.Retry = true
		e.After = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return 0, n, e
}

// httpMessage is the collector's message in an error's body (a
// google.rpc.Status in protobuf, or text), short, or "".
func httpMessage(body []byte, contentType string) string {
	if len(body) == 0 {
		return ""
	}
	msg := ""
	if contentType == "application/x-protobuf" {
		var st spb.Status
		if proto.Unmarshal(body, &st) == nil {
			msg = st.GetMessage()
		}
	} else if strings.HasPrefix(contentType, "text/") || strings.HasPrefix(contentType, "application/json") {
		msg = string(body)
	}
	msg = strings.TrimSpace(msg)
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date; 0 for
// none or one in the past.
func retryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(h)); err == nil {
		return max(time.Duration(s)*time.Second, 0)
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

func (c *httpClient) close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// grpcClient is OTLP/gRPC, gzip-compressed.
type grpcClient struct {
	cc   *grpc.ClientConn
	ls   collogspb.LogsServiceClient
	md   metadata.MD
	opts []grpc.CallOption
}

// grpcGzipLevel sets grpc's gzip compressor to the level OTLP/HTTP's
// uses, once: the setting is the process's, and flowmon's only gRPC
// client is this one.
var grpcGzipLevel sync.Once

func newGRPCClient(host string, o Options, tc *tls.Config) (*grpcClient, error) {
	grpcGzipLevel.Do(func() { _ = grpcgzip.SetLevel(gzip.BestSpeed) })
	creds := insecure.NewCredentials()
	if tc != nil {
		creds = credentials.NewTLS(tc)
	}
	cc, err := grpc.NewClient(host, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("otlp: grpc client: %w", err)
	}
	c := &grpcClient{cc: cc, ls: collogspb.NewLogsServiceClient(cc), md: metadata.MD{}}
	if o.Compression == CompressionGzip {
		c.opts = append(c.opts, grpc.UseCompressor(grpcgzip.Name))
	}
	for _, h := range o.Headers {
		name, value, _ := splitHeader(h)
		c.md.Append(strings.ToLower(name), value)
	}
	return c, nil
}

func (c *grpcClient) export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (int64, int, error) {
	if len(c.md) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, c.md)
	}
	n := proto.Size(req)
	resp, err := c.ls.Export(ctx, req, c.opts...)
	if err == nil {
		return resp.GetPartialSuccess().GetRejectedLogRecords(), n, nil
	}
	st := status.Convert(err)
	e := &sendError{Err: fmt.Errorf("otlp: grpc Export: %s: %s", st.Code(), st.Message())}
	var hasInfo bool
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.RetryDelay != nil {
			hasInfo = true
			e.After = max(ri.RetryDelay.AsDuration(), 0)
		}
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Aborted, codes.OutOfRange, codes.Unavailable, codes.DataLoss:
		e.Retry = true
	case codes.ResourceExhausted:
		// The collector may be out of memory for good: only its
		// RetryInfo says that it will take the request later.
		e.Retry = hasInfo
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		e.Retry = false
	}
	return 0, n, e
}

func (c *grpcClient) close() error { return c.cc.Close() }
