package alerts

import (
	"maps"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends a's JSON object to dst, without a newline:
//
//	{"status":"firing","labels":{...},"annotations":{...},
//	 "startsAt":"...","endsAt":"...","count":3,"value":1200,"flow":{...}}
//
// Times are RFC 3339 with nanoseconds, in UTC; endsAt is left out while the
// alert fires. Labels keep their order, annotations are sorted by key, so
// the same alert always encodes to the same bytes. value is null when it is
// NaN or infinite (JSON has no such numbers); flow is left out when a.Flow
// is the zero Flow and its field names are Flow's json tags. Strings are
// escaped as encoding/json does, invalid UTF-8 becoming U+FFFD.
func AppendJSON(dst []byte, a *Alert) []byte {
	dst = append(dst, `{"status":`...)
	if a.Resolved() {
		dst = append(dst, `"resolved"`...)
	} else {
		dst = append(dst, `"firing"`...)
	}
	dst = append(dst, `,"labels":`...)
	dst = appendLabels(dst, a.Labels)
	dst = append(dst, `,"annotations":`...)
	dst = appendJSONMap(dst, a.Annotations)
	dst = append(dst, `,"startsAt":`...)
	dst = appendJSONTime(dst, a.StartsAt)
	if a.Resolved() {
		dst = append(dst, `,"endsAt":`...)
		dst = appendJSONTime(dst, a.EndsAt)
	}
	dst = append(dst, `,"count":`...)
	dst = strconv.AppendUint(dst, a.Count, 10)
	dst = append(dst, `,"value":`...)
	dst = appendJSONFloat(dst, a.Value)
	if a.Flow != (Flow{}) {
		dst = append(dst, `,"flow":`...)
		dst = appendJSONFlow(dst, &a.Flow)
	}
	return append(dst, '}')
}

func appendJSONFlow(dst []byte, f *Flow) []byte {
	dst = append(dst, `{"proto":`...)
	dst = appendJSONString(dst, f.Proto)
	dst = append(dst, `,"src":`...)
	dst = appendJSONAddr(dst, f.Src)
	dst = append(dst, `,"src_port":`...)
	dst = strconv.AppendUint(dst, uint64(f.SrcPort), 10)
	dst = append(dst, `,"dst":`...)
	dst = appendJSONAddr(dst, f.Dst)
	dst = append(dst, `,"dst_port":`...)
	dst = strconv.AppendUint(dst, uint64(f.DstPort), 10)
	dst = append(dst, `,"conn_state":`...)
	dst = appendJSONString(dst, f.ConnState)
	if f.CommunityID != "" {
		dst = append(dst, `,"community_id":`...)
		dst = appendJSONString(dst, f.CommunityID)
	}
	return append(dst, '}')
}

// appendJSONMap appends m as an object with sorted keys ({} when empty).
func appendJSONMap(dst []byte, m map[string]string) []byte {
	dst = append(dst, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		dst = appendJSONString(dst, m[k])
	}
	return append(dst, '}')
}

func appendJSONTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.UTC().AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"')
}

// appendJSONAddr appends the address as a string, "" for the zero Addr
// (as netip.Addr's MarshalText does).
func appendJSONAddr(dst []byte, a netip.Addr) []byte {
	dst = append(dst, '"')
	if a.IsValid() {
		dst = a.AppendTo(dst)
	}
	return append(dst, '"')
}

// appendJSONFloat appends v as encoding/json would, or null for NaN and
// the infinities, which JSON cannot spell.
func appendJSONFloat(dst []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(dst, "null"...)
	}
	// encoding/json's rule: exponent form only for very small or large
	// magnitudes, so 1200 stays 1200 and not 1.2e+03.
	if abs := math.Abs(v); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		dst = strconv.AppendFloat(dst, v, 'e', -1, 64)
		// and its two-digit exponents: 1e-7, not 1e-07.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
		return dst
	}
	return strconv.AppendFloat(dst, v, 'f', -1, 64)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted and escaped for JSON. Like
// encoding/json it escapes <, > and & too, so the output is safe to embed
// in HTML, and U+2028 and U+2029, which JavaScript treats as newlines.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendLabels appends ls as a JSON object.
func appendLabels(dst []byte, ls Labels) []byte {
	dst = append(dst, '{')
	for i, l := range ls {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, l.Name)
		dst = append(dst, ':')
		dst = appendJSONString(dst, l.Value)
	}
	return append(dst, '}')
}
