package otlp

import (
	"errors"
	"fmt"
	"net/netip"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"

	"github.com/flowmon/flowmon/record/connlog"
)

// ErrNotFlow says a log record is not a flow record of this package's.
var ErrNotFlow = errors.New("otlp: not a flowmon flow record")

// Decode reads a flow log record back into the fields of its conn.log
// line (connlog.Record), from its attributes alone: what a consumer of
// the logs gets of each flow.
func Decode(lr *logspb.LogRecord) (connlog.Record, error) {
	var r connlog.Record
	if lr.GetEventName() != EventName {
		return r, fmt.Errorf("%w: event name %q", ErrNotFlow, lr.GetEventName())
	}
	attrs := make(map[string]*commonpb.AnyValue, len(lr.GetAttributes()))
	for _, kv := range lr.GetAttributes() {
		attrs[kv.GetKey()] = kv.GetValue()
	}
	var errs []error
	str := func(k string) string {
		v, ok := attrs[k]
		if !ok {
			errs = append(errs, fmt.Errorf("%w: no %s", ErrNotFlow, k))
		}
		return v.GetStringValue()
	}
	num := func(k string) uint64 {
		v, ok := attrs[k]
		if !ok || v.GetIntValue() < 0 {
			errs = append(errs, fmt.Errorf("%w: no %s, or negative", ErrNotFlow, k))
		}
		return uint64(v.GetIntValue())
	}
	dbl := func(k string) float64 {
		v, ok := attrs[k]
		if !ok {
			errs = append(errs, fmt.Errorf("%w: no %s", ErrNotFlow, k))
		}
		return v.GetDoubleValue()
	}
	addr := func(k string) netip.Addr {
		a, err := netip.ParseAddr(str(k))
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %w", ErrNotFlow, k, err))
		}
		return a
	}
	r.TS = dbl(AttrTS)
	r.UID = str(AttrUID)
	r.OrigH, r.OrigP = addr(AttrSourceAddress), uint16(num(AttrSourcePort))
	r.RespH, r.RespP = addr(AttrDestinationAddress), uint16(num(AttrDestinationPort))
	r.Proto = str(AttrNetworkTransport)
	r.Duration = dbl(AttrDuration)
	r.OrigBytes, r.RespBytes = num(AttrOrigBytes), num(AttrRespBytes)
	r.ConnState = str(AttrConnState)
	r.MissedBytes = num(AttrMissedBytes)
	r.History = str(AttrHistory)
	r.OrigPkts, r.OrigIPBytes = num(AttrOrigPkts), num(AttrOrigIPBytes)
	r.RespPkts, r.RespIPBytes = num(AttrRespPkts), num(AttrRespIPBytes)
	if v, ok := attrs[AttrTunnelParents]; ok {
		for _, p := range v.GetArrayValue().GetValues() {
			r.TunnelParents = append(r.TunnelParents, p.GetStringValue())
		}
	}
	if v, ok := attrs[AttrCommunityID]; ok {
		r.CommunityID = v.GetStringValue()
	}
	r.Interim = attrs[AttrInterim].GetBoolValue()
	return r, errors.Join(errs...)
}
