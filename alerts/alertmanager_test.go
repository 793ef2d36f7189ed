package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// postableAlert is Alertmanager's API v2 postableAlert (api/v2/openapi.yaml),
// decoded strictly: the sink must send nothing else.
type postableAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       *time.Time        `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
}

// amPosted returns the alerts the receiver accepted, in order.
func amPosted(t *testing.T, r *receiver) []postableAlert {
	t.Helper()
	var all []postableAlert
	for _, q := range r.requests(true) {
		if q.path != "/prefix/api/v2/alerts" || q.header.Get("Content-Type") != "application/json" {
			t.Errorf("request to %s with %v", q.path, q.header)
		}
		d := json.NewDecoder(bytes.NewReader(q.body))
		d.DisallowUnknownFields()
		var batch []postableAlert
		if err := d.Decode(&batch); err != nil {
			t.Fatalf("%v in %s", err, q.body)
		}
		all = append(all, batch...)
	}
	return all
}

// count returns how many posted alerts have label seq = seq, firing or
// resolved.
func count(posted []postableAlert, seq string, resolved bool) int {
	n := 0
	for _, p := range posted {
		if p.Labels["seq"] == seq && (p.EndsAt != nil) == resolved {
			n++
		}
	}
	return n
}

func resolvedSeq(i int) Alert {
	a := seqAlert(i)
	a.EndsAt = a.StartsAt.Add(time.Minute)
	return a
}

// TestAlertmanagerFormat: postableAlerts at <url>/api/v2/alerts; a firing
// alert has no endsAt (its startsAt is 2009: Alertmanager sets endsAt from
// its own clock), a resolved one its own; annotations say what was seen.
func TestAlertmanagerFormat(t *testing.T) {
	r := newReceiver(t)
	r.start()
	s, err := newAlertmanagerSink("am", amOptions{urls: []string{r.url() + "/prefix/"}, generatorURL: "http://flowmon:9100/"},
		httpOptions{bearerToken: "tok"}, fastRetry)
	if err != nil {
		t.Fatal(err)
	}
	firing := synFlood()
	firing.Labels = Labels{{"severity", "critical"}, {"alertname", "SYNFlood"}} // unsorted: sorted for the key
	s.Send(firing)
	resolved := firing
	resolved.EndsAt = firing.StartsAt.Add(5 * time.Minute)
	s.Send(resolved)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	posted := amPosted(t, r)
	if len(posted) != 2 {
		t.Fatalf("posted %d alerts, want 2: %+v", len(posted), posted)
	}
	wantAnn := map[string]string{"summary": "summary text", "description": "more", "count": "3", "value": "1200",
		"flow": "tcp 1.2.3.4:5555->10.0.0.1:80 S0"}
	for i, p := range posted {
		if len(p.Labels) != 2 || p.Labels["alertname"] != "SYNFlood" || p.Labels["severity"] != "critical" {
			t.Errorf("alert %d labels %v", i, p.Labels)
		}
		if len(p.Annotations) != len(wantAnn) {
			t.Errorf("alert %d annotations %v, want %v", i, p.Annotations, wantAnn)
		}
		for k, v := range wantAnn {
			if p.Annotations[k] != v {
				t.Errorf("alert %d annotation %s = %q, want %q", i, k, p.Annotations[k], v)
			}
		}
		if !p.StartsAt.Equal(firing.StartsAt) || p.GeneratorURL != "http://flowmon:9100/" {
			t.Errorf("alert %d: %+v", i, p)
		}
	}
	if posted[0].EndsAt != nil {
		t.Errorf("firing alert posted with endsAt %v", posted[0].EndsAt)
	}
	if posted[1].EndsAt == nil || !posted[1].EndsAt.Equal(resolved.EndsAt) {
		t.Errorf("resolved alert posted with endsAt %v, want %v", posted[1].EndsAt, resolved.EndsAt)
	}
	for _, q := range r.requests(false) {
		if q.header.Get("Authorization") != "Bearer tok" {
			t.Errorf("Authorization %q", q.header.Get("Authorization"))
		}
	}
	// An annotation of the rule's wins over the sink's.
	a := synFlood()
	a.Annotations = map[string]string{"count": "many"}
	if got := amAnnotations(&a)["count"]; got != "many" {
		t.Errorf("count annotation %q", got)
	}
}

// TestAlertmanagerResend: firing alerts are posted again every resend
// interval; a resolved one once more, with endsAt, and then never again.
func TestAlertmanagerResend(t *testing.T) {
	r := newReceiver(t)
	r.start()
	s, err := newAlertmanagerSink("am", amOptions{urls: []string{r.url() + "/prefix"}, resendEvery: 20 * time.Millisecond},
		httpOptions{}, fastRetry)
	if err != nil {
		t.Fatal(err)
	}
	s.Send(seqAlert(1))
	s.Send(seqAlert(2))
	waitFor(t, "both resent twice", func() bool {
		p := amPosted(t, r)
		return count(p, "1", false) >= 3 && count(p, "2", false) >= 3
	})
	s.Send(resolvedSeq(2))
	waitFor(t, "2 resolved", func() bool { return count(amPosted(t, r), "2", true) == 1 })
	p := amPosted(t, r)
	firing2, firing1 := count(p, "2", false), count(p, "1", false)
	waitFor(t, "1 resent three more times", func() bool { return count(amPosted(t, r), "1", false) >= firing1+3 })
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	p = amPosted(t, r)
	if count(p, "2", false) != firing2 || count(p, "2", true) != 1 {
		t.Errorf("2 posted firing %d times (was %d), resolved %d times after resolving", count(p, "2", false), firing2, count(p, "2", true))
	}
	if st := s.Stats(); st != (SinkStats{Sent: uint64(len(p))}) {
		t.Errorf("stats %+v, %d posted", st, len(p))
	}
}

// TestAlertmanagerHA: of two Alertmanagers, one down from the start: the
// other gets every alert meanwhile; the down one, once up on its address,
// gets them all too, in order, then the resends.
func TestAlertmanagerHA(t *testing.T) {
	up, down := newReceiver(t), newReceiver(t)
	up.start()
	s, err := newAlertmanagerSink("am", amOptions{urls: []string{up.url() + "/prefix", down.url() + "/prefix"}, resendEvery: time.Hour},
		httpOptions{}, fastRetry)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if !s.Send(seqAlert(i)) {
			t.Fatalf("Send %d refused", i)
		}
		if i%10 == 0 {
			s.Send(resolvedSeq(i))
		}
	}
	waitFor(t, "the up one to get 110 alerts, and failures at the down one", func() bool {
		st := s.Stats()
		return st.Sent == 110 && st.Failed >= 3
	})
	if st := s.Stats(); st.Queued != 110 || st.Dropped != 0 {
		t.Errorf("stats with one down %+v", st)
	}
	down.start()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*receiver{up, down} {
		var got []string
		for _, p := range amPosted(t, r) {
			got = append(got, p.Labels["seq"])
		}
		var want []string // the resolved ones right after their firing
		for i := range 100 {
			want = append(want, strconv.Itoa(i))
			if i%10 == 0 {
				want = append(want, strconv.Itoa(i))
			}
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s got %v", r.addr, got)
		}
	}
	if st := s.Stats(); st != (SinkStats{Sent: 220, Failed: st.Failed}) {
		t.Errorf("stats %+v", st)
	}
}

// TestAlertmanagerMaxFiring: a new firing alert beyond the set's bound is
// dropped; one already in it may update; a resolve makes room.
func TestAlertmanagerMaxFiring(t *testing.T) {
	r := newReceiver(t)
	r.start()
	s, err := newAlertmanagerSink("am", amOptions{urls: []string{r.url() + "/prefix"}, maxFiring: 2}, httpOptions{}, fastRetry)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a    Alert
		want bool
	}{
		{seqAlert(1), true}, {seqAlert(2), true}, {seqAlert(3), false},
		{seqAlert(1), true}, {resolvedSeq(1), true}, {seqAlert(3), true}, {resolvedSeq(4), true},
	} {
		if got := s.Send(tc.a); got != tc.want {
			t.Errorf("Send(%v, resolved %v) = %v", tc.a.Labels, tc.a.Resolved(), got)
		}
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st != (SinkStats{Sent: 6, Dropped: 1}) {
		t.Errorf("stats %+v", st)
	}
	if s.Send(seqAlert(5)) || s.Stats().Dropped != 2 {
		t.Errorf("Send after Close: %+v", s.Stats())
	}
}

// TestAlertmanagerRejected: a 400 drops the batch, without retrying it.
func TestAlertmanagerRejected(t *testing.T) {
	r := newReceiver(t)
	r.setAnswer(func(n int, req *http.Request) int {
		if n == 0 {
			return http.StatusBadRequest
		}
		return http.StatusOK
	})
	r.start()
	s, err := newAlertmanagerSink("am", amOptions{urls: []string{r.url() + "/prefix"}}, httpOptions{}, fastRetry)
	if err != nil {
		t.Fatal(err)
	}
	s.Send(seqAlert(1))
	waitFor(t, "the rejection", func() bool { return s.Stats().Dropped == 1 })
	s.Send(seqAlert(2))
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st != (SinkStats{Sent: 1, Failed: 1, Dropped: 1}) {
		t.Errorf("stats %+v", st)
	}
	if got := len(r.requests(false)); got != 2 {
		t.Errorf("%d requests, want 2", got)
	}
}

// TestAlertmanagerRestart: an Alertmanager that goes down and comes back
// on its address gets what was sent meanwhile, in order; the log says it
// once when delivery starts failing and once when it works again, not at
// every retry.
func TestAlertmanagerRestart(t *testing.T) {
	r := newReceiver(t)
	r.start()
	var logs syncBuffer
	o := fastRetry
	o.log = slog.New(slog.NewTextHandler(&logs, nil))
	s, err := newAlertmanagerSink("am", amOptions{urls: []string{r.url() + "/prefix"}, resendEvery: time.Hour}, httpOptions{}, o)
	if err != nil {
		t.Fatal(err)
	}
	sendAll(t, s, 0, 5)
	waitFor(t, "the first five", func() bool { return s.Stats().Sent == 5 })
	r.stop()
	for i := range 5 {
		s.Send(resolvedSeq(i))
	}
	waitFor(t, "failures", func() bool { return s.Stats().Failed >= 5 })
	r.start()
	waitFor(t, "the resolved five", func() bool { return s.Stats().Sent == 10 })
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range amPosted(t, r) {
		got = append(got, fmt.Sprintf("%s:%v", p.Labels["seq"], p.EndsAt != nil))
	}
	want := "0:false 1:false 2:false 3:false 4:false 0:true 1:true 2:true 3:true 4:true"
	if strings.Join(got, " ") != want {
		t.Errorf("posted %v\nwant   %s", got, want)
	}
	out := logs.String()
	if strings.Count(out, "component failing") != 1 || strings.Count(out, "component recovered") != 1 ||
		!strings.Contains(out, "component=alerts:am:http://"+r.addr+"/prefix ") {
		t.Errorf("log:\n%s", out)
	}
}
