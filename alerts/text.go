package alerts

import (
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// AppendText appends a's one-line, human-readable form to dst, without a
// newline, for a terminal or a replay's standard error:
//
//	2009-11-18T08:00:01Z FIRING SYNFlood severity=critical dst=10.0.0.1 count=3 value=1200 flow=tcp 1.2.3.4:5555->10.0.0.1:80 S0 — summary text
//
// The time is StartsAt while the alert fires and EndsAt once it is
// RESOLVED. severity comes first among the labels (it is what a reader
// scans for), the others follow in their order, alertname being the
// alert's name already; a value with spaces, quotes, '=' or nothing at all
// is quoted. value is left out when 0 (event rules), flow when a.Flow is
// the zero Flow, and the text after the dash is the summary annotation (or
// else the description), if any. Control characters are escaped so the
// alert stays on one line.
func AppendText(dst []byte, a *Alert) []byte {
	t, state := a.StartsAt, "FIRING"
	if a.Resolved() {
		t, state = a.EndsAt, "RESOLVED"
	}
	dst = t.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, ' ')
	dst = append(dst, state...)
	dst = append(dst, ' ')
	dst = appendTextValue(dst, a.Name())
	if sev := a.Labels.Get("severity"); sev != "" {
		dst = append(dst, " severity="...)
		dst = appendTextValue(dst, sev)
	}
	for _, l := range a.Labels {
		if l.Name == "alertname" || l.Name == "severity" {
			continue
		}
		dst = append(dst, ' ')
		dst = appendTextValue(dst, l.Name)
		dst = append(dst, '=')
		dst = appendTextValue(dst, l.Value)
	}
	dst = append(dst, " count="...)
	dst = strconv.AppendUint(dst, a.Count, 10)
	if a.Value != 0 {
		dst = append(dst, " value="...)
		dst = strconv.AppendFloat(dst, a.Value, 'g', -1, 64)
	}
	if a.Flow != (Flow{}) {
		dst = append(dst, " flow="...)
		dst = appendFlowText(dst, &a.Flow)
	}
	summary := a.Annotations["summary"]
	if summary == "" {
		summary = a.Annotations["description"]
	}
	if summary != "" {
		dst = append(dst, " — "...)
		dst = appendEscaped(dst, summary)
	}
	return dst
}

// appendFlowText appends "tcp 1.2.3.4:5555->10.0.0.1:80 S0" (IPv6
// addresses in brackets; the state left out when unknown).
func appendFlowText(dst []byte, f *Flow) []byte {
	dst = appendEscaped(dst, f.Proto)
	dst = append(dst, ' ')
	dst = appendAddrPort(dst, f.Src, f.SrcPort)
	dst = append(dst, "->"...)
	dst = appendAddrPort(dst, f.Dst, f.DstPort)
	if f.ConnState != "" && f.ConnState != "-" {
		dst = append(dst, ' ')
		dst = appendEscaped(dst, f.ConnState)
	}
	return dst
}

func appendAddrPort(dst []byte, a netip.Addr, port uint16) []byte {
	if !a.IsValid() {
		dst = append(dst, '?')
		dst = append(dst, ':')
		return strconv.AppendUint(dst, uint64(port), 10)
	}
	return netip.AddrPortFrom(a, port).AppendTo(dst)
}

// appendTextValue appends s, quoted when a reader could not tell where it
// ends (spaces, quotes, '=') or could not see it (empty).
func appendTextValue(dst []byte, s string) []byte {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool {
		return r == ' ' || r == '"' || r == '=' || !unicode.IsPrint(r)
	}) {
		return strconv.AppendQuote(dst, s)
	}
	return append(dst, s...)
}

// appendEscaped appends s with control characters and invalid UTF-8
// escaped, Go-style, so that it cannot break the line.
func appendEscaped(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			q := strconv.AppendQuote(nil, s[i:i+size])
			dst = append(dst, q[1:len(q)-1]...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}
