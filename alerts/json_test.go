package alerts

import (
	"bytes"
	"encoding/json"
	"math"
	"net/netip"
	"testing"
	"time"
)

// synFlood is the alert of the package doc's examples.
func synFlood() Alert {
	return Alert{
		Labels: Labels{
			{"alertname", "SYNFlood"}, {"dst", "10.0.0.1"}, {"severity", "critical"},
		},
		Annotations: map[string]string{"summary": "summary text", "description": "more"},
		StartsAt:    time.Date(2009, 11, 18, 8, 0, 1, 0, time.UTC),
		Count:       3,
		Value:       1200,
		Flow: Flow{
			Proto: "tcp", Src: netip.MustParseAddr("1.2.3.4"), SrcPort: 5555,
			Dst: netip.MustParseAddr("10.0.0.1"), DstPort: 80, ConnState: "S0",
		},
	}
}

func TestAppendJSON(t *testing.T) {
	firing := synFlood()
	resolved := synFlood()
	resolved.EndsAt = time.Date(2009, 11, 18, 8, 5, 0, 250_000_000, time.FixedZone("CET", 3600))
	resolved.Flow.CommunityID = "1:abc="
	bare := Alert{Labels: Labels{{"alertname", "X"}}, StartsAt: time.Unix(0, 1).UTC(), Count: 1}
	for _, tc := range []struct {
		name string
		a    Alert
		want string
	}{
		{"firing", firing, `{"status":"firing","labels":{"alertname":"SYNFlood","dst":"10.0.0.1","severity":"critical"},` +
			`"annotations":{"description":"more","summary":"summary text"},"startsAt":"2009-11-18T08:00:01Z","count":3,"value":1200,` +
			`"flow":{"proto":"tcp","src":"1.2.3.4","src_port":5555,"dst":"10.0.0.1","dst_port":80,"conn_state":"S0"}}`},
		// endsAt in UTC whatever its zone, the community ID when there is one.
		{"resolved", resolved, `{"status":"resolved","labels":{"alertname":"SYNFlood","dst":"10.0.0.1","severity":"critical"},` +
			`"annotations":{"description":"more","summary":"summary text"},"startsAt":"2009-11-18T08:00:01Z","endsAt":"2009-11-18T07:05:00.25Z","count":3,"value":1200,` +
			`"flow":{"proto":"tcp","src":"1.2.3.4","src_port":5555,"dst":"10.0.0.1","dst_port":80,"conn_state":"S0","community_id":"1:abc="}}`},
		// no annotations: {}; no flow: left out.
		{"bare", bare, `{"status":"firing","labels":{"alertname":"X"},"annotations":{},"startsAt":"1970-01-01T00:00:00.000000001Z","count":1,"value":0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := AppendJSON([]byte("prefix"), &tc.a)
			if string(got) != "prefix"+tc.want {
				t.Errorf("got  %s\nwant prefix%s", got, tc.want)
			}
			if !json.Valid(got[len("prefix"):]) {
				t.Errorf("not valid JSON: %s", got)
			}
		})
	}
}

// TestAppendJSONDecodes decodes the output with encoding/json into the
// fields a receiver would use and compares them with the alert.
func TestAppendJSONDecodes(t *testing.T) {
	a := synFlood()
	a.EndsAt = a.StartsAt.Add(90 * time.Second)
	a.Labels = append(a.Labels, Label{"odd", "quote\" back\\ nl\n tab\t <&> \u2028 \x01 é 日本"})
	a.Flow.Src = netip.MustParseAddr("2001:db8::1")
	var got struct {
		Status      string            `json:"status"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
		StartsAt    time.Time         `json:"startsAt"`
		EndsAt      time.Time         `json:"endsAt"`
		Count       uint64            `json:"count"`
		Value       float64           `json:"value"`
		Flow        Flow              `json:"flow"`
	}
	if err := json.Unmarshal(AppendJSON(nil, &a), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status != "resolved" || !got.StartsAt.Equal(a.StartsAt) || !got.EndsAt.Equal(a.EndsAt) ||
		got.Count != a.Count || got.Value != a.Value || got.Flow != a.Flow {
		t.Errorf("decoded %+v from %+v", got, a)
	}
	for _, l := range a.Labels {
		if got.Labels[l.Name] != l.Value {
			t.Errorf("label %s: got %q, want %q", l.Name, got.Labels[l.Name], l.Value)
		}
	}
	if len(got.Annotations) != len(a.Annotations) || got.Annotations["summary"] != a.Annotations["summary"] {
		t.Errorf("annotations %v, want %v", got.Annotations, a.Annotations)
	}
}

// TestAppendJSONFloat pins numbers to encoding/json's spelling, and NaN and
// the infinities to null.
func TestAppendJSONFloat(t *testing.T) {
	for _, v := range []float64{0, 1, -1, 1200, 0.1, 1e-6, 1e-7, 123456789e-15, 1e20, 1e21, 1.5e300, -2.5e-300,
		math.MaxFloat64, math.SmallestNonzeroFloat64, math.Copysign(0, -1)} {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONFloat(nil, v); !bytes.Equal(got, want) {
			t.Errorf("%v: got %s, want %s", v, got, want)
		}
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got := appendJSONFloat(nil, v); string(got) != "null" {
			t.Errorf("%v: got %s, want null", v, got)
		}
	}
}

// FuzzAppendJSONString checks the string escaping against encoding/json,
// which also replaces invalid UTF-8 and escapes <, >, &, U+2028/9.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"b\\", "\n\r\t\x00\x1f\x7f", "<a&b>", "\u2028\u2029", "\xff\xfe", "é日本\U0001F600", "a\xc3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	})
}

// FuzzAppendJSON: whatever the labels and annotations hold, the output is
// one line of valid JSON.
func FuzzAppendJSON(f *testing.F) {
	f.Add("SYNFlood", "dst", "10.0.0.1", "summary\n", "tcp", 1200.5)
	f.Fuzz(func(t *testing.T, name, lname, lvalue, summary, proto string, value float64) {
		a := Alert{
			Labels:      Labels{{"alertname", name}, {lname, lvalue}},
			Annotations: map[string]string{"summary": summary, lname: lvalue},
			Value:       value,
			Flow:        Flow{Proto: proto},
		}
		out := AppendJSON(nil, &a)
		if !json.Valid(out) || bytes.IndexByte(out, '\n') >= 0 {
			t.Errorf("not one line of valid JSON: %q", out)
		}
		if text := AppendText(nil, &a); bytes.IndexByte(text, '\n') >= 0 || bytes.IndexByte(text, '\r') >= 0 {
			t.Errorf("text form breaks the line: %q", text)
		}
	})
}

func TestAppendText(t *testing.T) {
	firing := synFlood()
	resolved := synFlood()
	resolved.EndsAt = time.Date(2009, 11, 18, 8, 5, 0, 0, time.UTC)
	resolved.Flow = Flow{Proto: "udp", Src: netip.MustParseAddr("2001:db8::1"), SrcPort: 53,
		Dst: netip.MustParseAddr("2001:db8::2"), DstPort: 40000, ConnState: "-"}
	resolved.Annotations = map[string]string{"description": "line one\nline two"}
	event := Alert{
		Labels:   Labels{{"alertname", "Scan"}, {"note", "two words"}, {"empty", ""}, {"eq", "a=b"}},
		StartsAt: time.Date(2024, 1, 2, 3, 4, 5, 600_000_000, time.UTC),
		Count:    1,
	}
	for _, tc := range []struct {
		name string
		a    Alert
		want string
	}{
		{"firing", firing, "2009-11-18T08:00:01Z FIRING SYNFlood severity=critical dst=10.0.0.1 count=3 value=1200 flow=tcp 1.2.3.4:5555->10.0.0.1:80 S0 — summary text"},
		{"resolved", resolved, `2009-11-18T08:05:00Z RESOLVED SYNFlood severity=critical dst=10.0.0.1 count=3 value=1200 flow=udp [2001:db8::1]:53->[2001:db8::2]:40000 — line one\nline two`},
		{"event", event, `2024-01-02T03:04:05.6Z FIRING Scan note="two words" empty="" eq="a=b" count=1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(AppendText(nil, &tc.a)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
