package agent

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/internal/health"
	"github.com/flowmon/flowmon/internal/testutil/syncbuf"
	"github.com/flowmon/flowmon/pipeline"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key
// into dir (flowmon.crt, flowmon.key), and returns a pool that trusts
// it.
func selfSigned(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "flowmon test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "flowmon.crt"), filepath.Join(dir, "flowmon.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

// testServer serves a pipeline, a rule and the watchlist "blocked" (one
// entry) it asks about, as wc says; its reload counts its calls.
type testServer struct {
	srv     *metricsServer
	lk      *lookups
	reloads int
}

func newTestServer(t *testing.T, addr string, wc config.Web, log io.Writer) (*testServer, error) {
	return newTestServerHealth(t, addr, wc, log, health.NewRegistry())
}

// newTestServerHealth is newTestServer reading hr's components.
func newTestServerHealth(t *testing.T, addr string, wc config.Web, log io.Writer, hr *health.Registry) (*testServer, error) {
	t.Helper()
	dir := t.TempDir()
	list := filepath.Join(dir, "blocked.txt")
	if err := os.WriteFile(list, []byte("192.0.2.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rulesFile := filepath.Join(dir, "rules.yaml")
	rules := "groups:\n  - name: g\n    rules:\n      - {alert: ToBlocked, kind: watchlist, track: by_dst, watchlist: {list: blocked, side: dst}}\n"
	if err := os.WriteFile(rulesFile, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	al, err := newAlerting(rulesFile, "", "", io.Discard, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { al.close() })
	cfg := pipeline.DefaultConfig()
	cfg.Workers = 1
	lk, err := openLookups([]config.Watchlist{{Name: "blocked", File: list}}, "", config.History{}, al, &cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lk.close() })
	pl, err := pipeline.NewPipeline(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{lk: lk}
	reload := func() error { ts.reloads++; return nil }
	if ts.srv, err = serveMetrics(addr, wc, newRegistry(), hr, pl, al, lk, reload, func() bool { return true }, slog.New(slog.NewTextHandler(log, nil))); err != nil {
		return nil, err
	}
	t.Cleanup(func() { ts.srv.close() })
	return ts, nil
}

// do sends a request and returns the status and the body.
func do(t *testing.T, c *http.Client, method, url, user, pass, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeTLSAndBasicAuth: with a web config file of TLS and basic auth
// the agent's server answers plain HTTP with no metrics, a wrong or
// missing password 401, and the right one 200 over TLS, on every
// address (it listens beyond loopback); without the file, an address
// beyond loopback is refused.
func TestServeTLSAndBasicAuth(t *testing.T) {
	if _, err := newTestServer(t, "0.0.0.0:0", config.Web{}, io.Discard); err == nil || !strings.Contains(err.Error(), "--web.config.file") {
		t.Fatalf("0.0.0.0 without a web config: %v", err)
	}
	dir := t.TempDir()
	pool := selfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webFile := filepath.Join(dir, "web.yml")
	conf := "tls_server_config:\n  cert_file: flowmon.crt\n  key_file: flowmon.key\nbasic_auth_users:\n  prometheus: " + string(hash) + "\n"
	if err := os.WriteFile(webFile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	wc := config.Web{ConfigFile: webFile}
	if s := wc.Scheme(); s != "https" {
		t.Errorf("scheme %s", s)
	}
	ts, err := newTestServer(t, "0.0.0.0:0", wc, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ts.srv.addr.String())
	host := "127.0.0.1:" + port
	plain := &http.Client{Timeout: 10 * time.Second}
	if code, body := do(t, plain, "GET", "http://"+host+"/metrics", "prometheus", "s3cret", ""); code != http.StatusBadRequest || strings.Contains(body, "flowmon_") {
		t.Errorf("plain HTTP: %d %q", code, body)
	}
	secure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, tc := range []struct {
		user, pass string
		code       int
	}{
		{"", "", http.StatusUnauthorized},
		{"prometheus", "wrong", http.StatusUnauthorized},
		{"someone", "s3cret", http.StatusUnauthorized},
		{"prometheus", "s3cret", http.StatusOK},
	} {
		code, body := do(t, secure, "GET", "https://"+host+"/metrics", tc.user, tc.pass, "")
		if code != tc.code || (code == http.StatusOK) != strings.Contains(body, `flowmon_component_up{component="web-config"} 1`) {
			t.Errorf("user %q password %q: %d, want %d; body %.200q", tc.user, tc.pass, code, tc.code, body)
		}
	}
	// An untrusted certificate is refused by the client: the server's is
	// the one in the file.
	if resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("https://" + host + "/metrics"); err == nil {
		resp.Body.Close()
		t.Error("a client without the test CA accepted the server's certificate")
	}
}

// TestLifecycle: POST /-/reload and the watchlists' POST answer 403,
// naming --web.enable-lifecycle, and change nothing, unless the
// lifecycle is on; GET keeps working either way.
func TestLifecycle(t *testing.T) {
	for _, on := range []bool{false, true} {
		ts, err := newTestServer(t, "127.0.0.1:0", config.Web{EnableLifecycle: on}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		base := "http://" + ts.srv.addr.String()
		c := &http.Client{Timeout: 10 * time.Second}
		reloadCode, reloadBody := do(t, c, "POST", base+"/-/reload", "", "", "")
		changeCode, changeBody := do(t, c, "POST", base+"/api/v1/watchlists/blocked", "", "", `{"add": ["198.51.100.0/24"]}`)
		n := ts.lk.wl.Get("blocked").Len()
		if on {
			if reloadCode != http.StatusOK || ts.reloads != 1 {
				t.Errorf("lifecycle on: POST /-/reload %d %q, %d reloads", reloadCode, reloadBody, ts.reloads)
			}
			if changeCode != http.StatusOK || n != 2 {
				t.Errorf("lifecycle on: POST /api/v1/watchlists/blocked %d %q, %d entries", changeCode, changeBody, n)
			}
		} else {
			for _, r := range []struct {
				code int
				body string
			}{{reloadCode, reloadBody}, {changeCode, changeBody}} {
				if r.code != http.StatusForbidden || !strings.Contains(r.body, "--web.enable-lifecycle") || !strings.Contains(r.body, "web.enable-lifecycle: true") {
					t.Errorf("lifecycle off: %d %q", r.code, r.body)
				}
			}
			if ts.reloads != 0 || n != 1 {
				t.Errorf("lifecycle off: %d reloads, %d entries; want nothing changed", ts.reloads, n)
			}
		}
		for _, path := range []string{"/metrics", "/healthz", "/-/ready", "/api/v1/watchlists/"} {
			if code, body := do(t, c, "GET", base+path, "", "", ""); code != http.StatusOK {
				t.Errorf("lifecycle %v: GET %s %d %q", on, path, code, body)
			}
		}
	}
}

// TestWebConfigFailing: a web config file that stops loading while the
// server runs is logged once when it starts failing and once when it
// loads again, counted, and named by /healthz meanwhile.
func TestWebConfigFailing(t *testing.T) {
	dir := t.TempDir()
	good, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "web.yml")
	write := func(hashOfA string) {
		if err := os.WriteFile(file, []byte("basic_auth_users:\n  a: "+hashOfA+"\n  b: "+string(good)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(string(good))
	var log lockedBuffer
	ts, err := newTestServer(t, "127.0.0.1:0", config.Web{ConfigFile: file}, &log)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	get := func(path string) (int, string) {
		return do(t, c, "GET", "http://"+ts.srv.addr.String()+path, "b", "pw", "")
	}
	wh := ts.srv.web
	wh.check() // as its ticker does
	if code, body := get("/healthz"); code != http.StatusOK || log.String() != "" {
		t.Fatalf("a good file: /healthz %d %q, logged %q", code, body, log.String())
	}
	write("not-a-hash") // a's hash broken: b still gets in
	wh.check()
	wh.check()
	if code, body := get("/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "web-config failing since") || !strings.Contains(body, file) {
		t.Errorf("a broken file: /healthz %d %q", code, body)
	}
	if _, body := get("/metrics"); !strings.Contains(body, `flowmon_component_up{component="web-config"} 0`) || !strings.Contains(body, `flowmon_component_failures_total{component="web-config"} 1`) {
		t.Errorf("a broken file: metrics\n%s", grepMetrics(body, "flowmon_component_"))
	}
	write(string(good))
	wh.check()
	if code, body := get("/healthz"); code != http.StatusOK {
		t.Errorf("fixed: /healthz %d %q", code, body)
	}
	if _, body := get("/metrics"); !strings.Contains(body, `flowmon_component_up{component="web-config"} 1`) || !strings.Contains(body, `flowmon_component_failures_total{component="web-config"} 1`) {
		t.Errorf("fixed: metrics\n%s", grepMetrics(body, "flowmon_component_"))
	}
	logged := log.String()
	if strings.Count(logged, `msg="component failing" component=web-config`) != 1 || strings.Count(logged, `msg="component recovered" component=web-config`) != 1 {
		t.Errorf("logged\n%s", logged)
	}
}

// grepMetrics is the lines of an exposition that start with prefix.
func grepMetrics(text, prefix string) string {
	var b strings.Builder
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// lockedBuffer is the buffer the test reads while goroutines write it.
type lockedBuffer = syncbuf.Buffer
