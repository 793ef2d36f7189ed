package alerts

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// webhookBodies returns the bodies the receiver accepted, one a line.
func webhookBodies(r *receiver) string {
	var b strings.Builder
	for _, q := range r.requests(true) {
		b.Write(q.body)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestWebhook(t *testing.T) {
	r := newReceiver(t)
	r.start()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := newWebhookSink("hook", r.url()+"/hook", httpOptions{bearerTokenFile: tokenFile}, fastRetry)
	if err != nil {
		t.Fatal(err)
	}
	sendAll(t, s, 0, 3)
	waitFor(t, "three alerts", func() bool { return s.Stats().Sent == 3 })
	// The token file is read at every request: a rotated token is used.
	if err := os.WriteFile(tokenFile, []byte("second"), 0o600); err != nil {
		t.Fatal(err)
	}
	sendAll(t, s, 3, 5)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantSeqLines(t, webhookBodies(r), FormatJSON, 0, 5)
	for i, q := range r.requests(false) {
		want := "Bearer first"
		if i >= 3 {
			want = "Bearer second"
		}
		if q.path != "/hook" || q.header.Get("Content-Type") != "application/json" || q.header.Get("Authorization") != want {
			t.Errorf("request %d: %s %v", i, q.path, q.header)
		}
	}
	if st := s.Stats(); st != (SinkStats{Sent: 5}) {
		t.Errorf("stats %+v", st)
	}
}

// TestWebhookStatus: 5xx, 408 and 429 are retried until accepted; another
// 4xx drops the alert at once, counted as failed and dropped.
func TestWebhookStatus(t *testing.T) {
	r := newReceiver(t)
	r.start()
	answers := []int{500, 503, 408, 429, 200, 400, 404, 200, 302, 200}
	r.setAnswer(func(n int, req *http.Request) int {
		if n < len(answers) {
			return answers[n]
		}
		return 200
	})
	s, err := newWebhookSink("hook", r.url(), httpOptions{bearerToken: "tok"}, fastRetry)
	if err != nil {
		t.Fatal(err)
	}
	sendAll(t, s, 0, 5)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Alert 0 after four retries, 1 rejected (400), 2 rejected (404),
	// 3 on its first try, 4 after a 302 that is no success.
	var got []string
	for _, q := range r.requests(false) {
		got = append(got, string(q.body[strings.Index(string(q.body), `"seq":"`)+7]))
		if q.header.Get("Authorization") != "Bearer tok" {
			t.Errorf("Authorization %q", q.header.Get("Authorization"))
		}
	}
	if strings.Join(got, "") != "0000012344" {
		t.Errorf("requests carried alerts %v", got)
	}
	if st := s.Stats(); st != (SinkStats{Sent: 3, Failed: 7, Dropped: 2}) {
		t.Errorf("stats %+v", st)
	}
}

// TestWebhookRestart: a receiver down when the sink starts, then up, then
// down again and up again on the same address, gets every alert that fit
// the queue, once and in order; Send never fails meanwhile.
func TestWebhookRestart(t *testing.T) {
	r := newReceiver(t) // down
	s, err := newWebhookSink("hook", r.url(), httpOptions{}, fastRetry)
	if err != nil {
		t.Fatal(err)
	}
	if n := sendAll(t, s, 0, 20); n != 20 {
		t.Fatalf("accepted %d of 20", n)
	}
	waitFor(t, "failed attempts while down", func() bool { return s.Stats().Failed >= 3 })
	if st := s.Stats(); st.Sent != 0 || st.Queued != 20 || st.Dropped != 0 {
		t.Errorf("stats while down %+v", st)
	}
	r.start()
	waitFor(t, "the first 20 alerts", func() bool { return s.Stats().Sent == 20 })

	r.stop()
	failed := s.Stats().Failed
	if n := sendAll(t, s, 20, 50); n != 30 {
		t.Fatalf("accepted %d of 30", n)
	}
	waitFor(t, "failed attempts while down again", func() bool { return s.Stats().Failed >= failed+3 })
	r.start()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantSeqLines(t, webhookBodies(r), FormatJSON, 0, 50)
	if st := s.Stats(); st.Sent != 50 || st.Dropped != 0 || st.Queued != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestWebhookHangs: a receiver that accepts connections and never answers
// costs the sender nothing: Send returns at once, the queue keeps its
// capacity and drops the rest; Close gives up at its deadline and aborts
// the request.
func TestWebhookHangs(t *testing.T) {
	r := newReceiver(t)
	release := make(chan struct{})
	defer close(release)
	r.setAnswer(func(n int, req *http.Request) int {
		select {
		case <-release:
		case <-req.Context().Done():
		}
		return 200
	})
	r.start()
	o := fastRetry
	o.size = 50
	s, err := newWebhookSink("hook", r.url(), httpOptions{timeout: time.Hour}, o)
	if err != nil {
		t.Fatal(err)
	}
	if n := sendAll(t, s, 0, 5000); n != 50 {
		t.Errorf("accepted %d, want the queue's 50", n)
	}
	waitFor(t, "the request to hang", func() bool { return len(r.requests(false)) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = s.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "50 alerts undelivered") {
		t.Errorf("Close: %v", err)
	}
	if st := s.Stats(); st != (SinkStats{Dropped: 5000}) {
		t.Errorf("stats %+v", st)
	}
}

// TestWebhookTimeout: a request that outlives the timeout is a failure to
// retry; the alert arrives once the receiver answers in time.
func TestWebhookTimeout(t *testing.T) {
	r := newReceiver(t)
	r.setAnswer(func(n int, req *http.Request) int {
		if n == 0 {
			<-req.Context().Done() // until the client gives up
		}
		return 200
	})
	r.start()
	s, err := newWebhookSink("hook", r.url(), httpOptions{timeout: 100 * time.Millisecond}, fastRetry)
	if err != nil {
		t.Fatal(err)
	}
	sendAll(t, s, 0, 1)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// At least the first attempt failed; on a loaded machine a later one
	// may outlive 100ms too.
	if st := s.Stats(); st.Sent != 1 || st.Failed < 1 || st.Dropped != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestWebhookTLS: the server's certificate is trusted through ca_file or
// insecure_skip_verify, and not otherwise (the alert waits, retried).
func TestWebhookTLS(t *testing.T) {
	r := newReceiver(t)
	r.tls = true
	r.start()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.server().Certificate().Raw})
	if err := os.WriteFile(caFile, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		o    httpOptions
		ok   bool
	}{
		{"ca_file", httpOptions{caFile: caFile}, true},
		{"insecure_skip_verify", httpOptions{insecure: true}, true},
		{"untrusted", httpOptions{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newWebhookSink("hook", r.url(), tc.o, fastRetry)
			if err != nil {
				t.Fatal(err)
			}
			sendAll(t, s, 0, 1)
			if tc.ok {
				waitFor(t, "delivery", func() bool { return s.Stats().Sent == 1 })
			} else {
				waitFor(t, "failures", func() bool { return s.Stats().Failed >= 2 })
				if st := s.Stats(); st.Sent != 0 || st.Queued != 1 {
					t.Errorf("stats %+v", st)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			s.Close(ctx)
		})
	}
}

func TestWebhookOpenErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o    httpOptions
		want string
	}{
		{httpOptions{caFile: filepath.Join(dir, "missing.pem")}, "reading CA file: open"},
		{httpOptions{caFile: notPEM}, "no PEM certificate"},
		{httpOptions{bearerTokenFile: filepath.Join(dir, "missing")}, "reading bearer token file: open"},
	} {
		if _, err := newWebhookSink("hook", "http://127.0.0.1:1", tc.o, fastRetry); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	for v, want := range map[string]time.Duration{"": 0, "7": 7 * time.Second, "-1": 0, "soon": 0,
		"Wed, 21 Oct 2015 07:28:00 GMT": 0} {
		if got := parseRetryAfter(v); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", v, got, want)
		}
	}
	future := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	if got := parseRetryAfter(future); got < 58*time.Minute || got > time.Hour {
		t.Errorf("parseRetryAfter(%q) = %v", future, got)
	}
}
