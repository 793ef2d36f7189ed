package otlp

import (
	"net/netip"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"

	"github.com/flowmon/flowmon/record"
	"github.com/flowmon/flowmon/record/connlog"
)

// EventName is every flow record's event name.
const EventName = "flowmon.flow"

// ScopeName is the instrumentation scope of the records.
const ScopeName = "github.com/flowmon/flowmon/record/otlp"

// The attributes' keys (doc.go says what each holds).
const (
	AttrSourceAddress      = "source.address"
	AttrSourcePort         = "source.port"
	AttrDestinationAddress = "destination.address"
	AttrDestinationPort    = "destination.port"
	AttrNetworkTransport   = "network.transport"
	AttrNetworkType        = "network.type"
	AttrUID                = "flowmon.uid"
	AttrTS                 = "flowmon.ts"
	AttrDuration           = "flowmon.duration"
	AttrOrigBytes          = "flowmon.orig_bytes"
	AttrRespBytes          = "flowmon.resp_bytes"
	AttrConnState          = "flowmon.conn_state"
	AttrMissedBytes        = "flowmon.missed_bytes"
	AttrHistory            = "flowmon.history"
	AttrOrigPkts           = "flowmon.orig_pkts"
	AttrOrigIPBytes        = "flowmon.orig_ip_bytes"
	AttrRespPkts           = "flowmon.resp_pkts"
	AttrRespIPBytes        = "flowmon.resp_ip_bytes"
	AttrTunnelParents      = "flowmon.tunnel_parents"
	AttrCommunityID        = "flowmon.community_id"
	AttrConfidence         = "flowmon.confidence"
	AttrEndReason          = "flowmon.end_reason"
	AttrInterim            = "flowmon.interim"
)

// maxAttrs is the most attributes a record has.
const maxAttrs = 23

// encoder turns batches of flow records into one export request. It
// reuses the request's messages from batch to batch, so that a batch
// allocates only the strings its records spell; a request built is
// valid until the next build.
type encoder struct {
	body bool
	req  collogspb.ExportLogsServiceRequest
	rl   logspb.ResourceLogs
	sl   logspb.ScopeLogs

	recs  []logspb.LogRecord
	ptrs  []*logspb.LogRecord
	kvs   []commonpb.KeyValue
	kvp   []*commonpb.KeyValue
	vals  []commonpb.AnyValue
	strs  []commonpb.AnyValue_StringValue
	ints  []commonpb.AnyValue_IntValue
	dbls  []commonpb.AnyValue_DoubleValue
	bools []commonpb.AnyValue_BoolValue
	arrs  []commonpb.AnyValue_ArrayValue
	alist []commonpb.ArrayValue
	line  []byte
}

// newEncoder returns an encoder whose requests carry res.
func newEncoder(res *resourcepb.Resource, version string, body bool) *encoder {
	e := &encoder{body: body}
	e.sl.Scope = &commonpb.InstrumentationScope{Name: ScopeName, Version: version}
	e.rl.Resource = res
	e.rl.ScopeLogs = []*logspb.ScopeLogs{&e.sl}
	e.req.ResourceLogs = []*logspb.ResourceLogs{&e.rl}
	return e
}

// resource is the records' resource: service.name flowmon, and the
// host and interface when known.
func resource(hostName, iface, version string) *resourcepb.Resource {
	attrs := []*commonpb.KeyValue{strKV("service.name", "flowmon")}
	if version != "" {
		attrs = append(attrs, strKV("service.version", version))
	}
	if hostName != "" {
		attrs = append(attrs, strKV("host.name", hostName))
	}
	if iface != "" {
		attrs = append(attrs, strKV("network.interface.name", iface))
	}
	return &resourcepb.Resource{Attributes: attrs}
}

func strKV(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// build makes the request for flows, observed at observed (Unix
// nanoseconds).
func (e *encoder) build(flows []record.Flow, observed uint64) *collogspb.ExportLogsServiceRequest {
	n := len(flows)
	if cap(e.recs) < n {
		e.recs = make([]logspb.LogRecord, n)
		e.ptrs = make([]*logspb.LogRecord, n)
		e.kvs = make([]commonpb.KeyValue, n*maxAttrs)
		e.kvp = make([]*commonpb.KeyValue, n*maxAttrs)
		e.vals = make([]commonpb.AnyValue, n*(maxAttrs+1))
		e.strs = make([]commonpb.AnyValue_StringValue, n*10)
		e.ints = make([]commonpb.AnyValue_IntValue, n*10)
		e.dbls = make([]commonpb.AnyValue_DoubleValue, n*3)
		e.bools = make([]commonpb.AnyValue_BoolValue, n)
		e.arrs = make([]commonpb.AnyValue_ArrayValue, n)
		e.alist = make([]commonpb.ArrayValue, n)
	}
	a := arena{e: e}
	for i := range flows {
		e.ptrs[i] = a.record(&e.recs[i], &flows[i], observed)
	}
	e.sl.LogRecords = e.ptrs[:n]
	return &e.req
}

// arena hands out a batch's messages from the encoder's slices, in
// order.
type arena struct {
	e                                  *encoder
	kv, val, nstr, nint, ndbl, nb, arr int
}

func (a *arena) value() *commonpb.AnyValue {
	v := take(a.e.vals, &a.val)
	v.Value = nil
	return v
}

// take is the next of s, counted in *n.
func take[T any](s []T, n *int) *T {
	w := &s[*n]
	*n++
	return w
}

func (a *arena) str(s string) *commonpb.AnyValue {
	w := take(a.e.strs, &a.nstr)
	w.StringValue = s
	v := a.value()
	v.Value = w
	return v
}

func (a *arena) int64(n int64) *commonpb.AnyValue {
	w := take(a.e.ints, &a.nint)
	w.IntValue = n
	v := a.value()
	v.Value = w
	return v
}

func (a *arena) double(f float64) *commonpb.AnyValue {
	w := take(a.e.dbls, &a.ndbl)
	w.DoubleValue = f
	v := a.value()
	v.Value = w
	return v
}

func (a *arena) boolean(b bool) *commonpb.AnyValue {
	w := take(a.e.bools, &a.nb)
	w.BoolValue = b
	v := a.value()
	v.Value = w
	return v
}

// strs is an array of strings (a record has at most one).
func (a *arena) strs(ss ...string) *commonpb.AnyValue {
	l := &a.e.alist[a.arr]
	w := &a.e.arrs[a.arr]
	a.arr++
	l.Values = l.Values[:0]
	for _, s := range ss {
		l.Values = append(l.Values, &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}})
	}
	w.ArrayValue = l
	v := a.value()
	v.Value = w
	return v
}

// record fills r with f, its attributes from the arena.
func (a *arena) record(r *logspb.LogRecord, f *record.Flow, observed uint64) *logspb.LogRecord {
	e := a.e
	start := a.kv
	add := func(k string, v *commonpb.AnyValue) {
		kv := &e.kvs[a.kv]
		kv.Key, kv.Value = k, v
		e.kvp[a.kv] = kv
		a.kv++
	}
	counts := func(k string, n uint64) { add(k, a.int64(int64(n))) }
	add(AttrSourceAddress, a.str(f.Orig.String()))
	add(AttrSourcePort, a.int64(int64(f.OrigPort)))
	add(AttrDestinationAddress, a.str(f.Resp.String()))
	add(AttrDestinationPort, a.int64(int64(f.RespPort)))
	add(AttrNetworkTransport, a.str(connlog.Proto(f.Proto)))
	add(AttrNetworkType, a.str(networkType(f.Orig)))
	add(AttrUID, a.str(record.UIDString(f.UID)))
	add(AttrTS, a.double(float64(f.Start)/1e9))
	add(AttrDuration, a.double(f.Duration()))
	counts(AttrOrigBytes, f.OrigBytes)
	counts(AttrRespBytes, f.RespBytes)
	add(AttrConnState, a.str(f.State.String()))
	counts(AttrMissedBytes, f.MissedBytes)
	add(AttrHistory, a.str(f.History.String()))
	counts(AttrOrigPkts, f.OrigPkts)
	counts(AttrOrigIPBytes, f.OrigIPBytes)
	counts(AttrRespPkts, f.RespPkts)
	counts(AttrRespIPBytes, f.RespIPBytes)
	if f.TunnelParent != 0 {
		add(AttrTunnelParents, a.strs(record.UIDString(f.TunnelParent)))
	}
	if f.CommunityID[0] != 0 {
		add(AttrCommunityID, a.str(string(f.CommunityID[:])))
	}
	add(AttrConfidence, a.double(float64(f.Confidence)))
	add(AttrEndReason, a.str(f.EndReason.String()))
	if f.EndReason == record.EndActive {
		add(AttrInterim, a.boolean(true))
	}
	r.TimeUnixNano = uint64(f.End)
	r.ObservedTimeUnixNano = observed
	r.SeverityNumber = logspb.SeverityNumber_SEVERITY_NUMBER_INFO
	r.SeverityText = ""
	r.EventName = EventName
	r.Attributes = e.kvp[start:a.kv]
	r.Body = nil
	if e.body {
		e.line = connlog.AppendJSON(e.line[:0], f)
		r.Body = a.str(string(e.line[:len(e.line)-1])) // without its '\n'
	}
	return r
}

// networkType is network.type: ipv4 or ipv6 (an IPv4-mapped IPv6
// address is IPv4's).
func networkType(a netip.Addr) string {
	if a.Unmap().Is4() {
		return "ipv4"
	}
	return "ipv6"
}
