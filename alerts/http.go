package alerts

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultTimeout bounds one HTTP request of a webhook or Alertmanager
// sink, connection and response included.
const DefaultTimeout = 10 * time.Second

// httpOptions configure the client of a webhook or Alertmanager sink.
type httpOptions struct {
	bearerToken     string
	bearerTokenFile string // read at every request, so it may be rotated
	caFile          string
	insecure        bool
	timeout         time.Duration
}

// httpClient posts JSON and sorts the answers into delivered, to retry,
// and rejected for good.
type httpClient struct {
	c         *http.Client
	tr        *http.Transport
	token     string
	tokenFile string
}

func newHTTPClient(o httpOptions) (*httpClient, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: o.insecure}
	if o.caFile != "" {
		pem, err := os.ReadFile(o.caFile)
		if err != nil {
			return nil, fmt.Errorf("reading CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("reading CA file %s: no PEM certificate in it", o.caFile)
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	if o.bearerTokenFile != "" {
		// Read once now so that a wrong path fails the configuration
		// rather than every delivery.
		if _, err := readToken(o.bearerTokenFile); err != nil {
			return nil, err
		}
	}
	timeout := o.timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &httpClient{
		c:  &http.Client{Transport: tr, Timeout: timeout},
		tr: tr, token: o.bearerToken, tokenFile: o.bearerTokenFile,
	}, nil
}

func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading bearer token file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// post sends body to url as JSON. A 2xx answer is success; any other is a
// *StatusError, marked permanent for a 4xx other than 408 (Request
// Timeout) and 429 (Too Many Requests), which retrying cannot cure.
func (h *httpClient) post(ctx context.Context, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return &permanentError{err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "flowmon")
	token := h.token
	if h.tokenFile != "" {
		if token, err = readToken(h.tokenFile); err != nil {
			return err
		}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := h.c.Do(req)
	if err != nil {
		return err // a *url.Error naming the URL, its password redacted
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	// Read a little more so that the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	se := &StatusError{URL: req.URL.Redacted(), Status: resp.Status, Code: resp.StatusCode,
		Body: strings.TrimSpace(string(msg)), RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"))}
	if se.Code/100 == 4 && se.Code != http.StatusRequestTimeout && se.Code != http.StatusTooManyRequests {
		return &permanentError{se}
	}
	return se
}

func (h *httpClient) close() { h.tr.CloseIdleConnections() }

// A StatusError is an HTTP answer other than 2xx from a webhook or an
// Alertmanager.
type StatusError struct {
	URL        string // the password redacted
	Status     string // "503 Service Unavailable"
	Code       int
	Body       string        // its first bytes, which often say why
	RetryAfter time.Duration // the Retry-After header, 0 if none
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("POST %s: %s", e.URL, e.Status)
	}
	return fmt.Sprintf("POST %s: %s: %s", e.URL, e.Status, e.Body)
}

func (e *StatusError) retryAfter() time.Duration { return e.RetryAfter }

// parseRetryAfter reads delay-seconds or an HTTP date; 0 if neither.
func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
