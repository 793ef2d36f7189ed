package rules

import (
	"strconv"
	"strings"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/capture"
)

// build makes the alert r raises for a packet at t (ns) of the flow o
// (from originator to responder) leaving it in state st with anomalies an,
// whose measured figure is value; the flow's Community ID has seed
// cidSeed. It allocates: it runs once per alert,
// not per packet. (It takes copies, not the packet: what it keeps must
// not make the packet escape to the heap.)
func (r *rule) build(o capture.Key, st acsm.ConnState, an acsm.Anomaly, t int64, value float64, cidSeed uint16) alerts.Alert {
	ls := append(alerts.Labels(nil), r.labels...)
	switch r.Track {
	case BySrc:
		ls = append(ls, alerts.Label{Name: "src", Value: o.Src.Unmap().String()})
	case ByDst:
		ls = append(ls, alerts.Label{Name: "dst", Value: o.Dst.Unmap().String()})
	case ByPair:
		ls = append(ls, alerts.Label{Name: "src", Value: o.Src.Unmap().String()}, alerts.Label{Name: "dst", Value: o.Dst.Unmap().String()})
	case ByFlow:
		ls = append(ls,
			alerts.Label{Name: "proto", Value: capture.ProtoName(o.Proto)},
			alerts.Label{Name: "src", Value: o.Src.Unmap().String()},
			alerts.Label{Name: "src_port", Value: strconv.Itoa(int(o.SrcPort))},
			alerts.Label{Name: "dst", Value: o.Dst.Unmap().String()},
			alerts.Label{Name: "dst_port", Value: strconv.Itoa(int(o.DstPort))})
	}
	if r.Kind == KindDuplicates {
		ls = ls[:len(r.labels)] // about the whole traffic, not a flow
	}
	ls.Sort()
	a := alerts.Alert{Labels: ls, StartsAt: utc(t), Count: 1, Value: value}
	if r.Kind != KindDuplicates {
		a.Flow = alerts.Flow{
			Proto: capture.ProtoName(o.Proto), Src: o.Src.Unmap(), SrcPort: o.SrcPort,
			Dst: o.Dst.Unmap(), DstPort: o.DstPort, ConnState: st.String(),
			CommunityID: capture.CommunityID(&o, cidSeed),
		}
	}
	if len(r.templates) > 0 {
		d := TemplateData{
			Alert: r.Alert, Severity: r.Severity, Labels: ls.Map(), Value: value,
			Threshold: r.thresh, Window: r.window(),
			Proto: a.Flow.Proto, ConnState: a.Flow.ConnState, SrcPort: o.SrcPort, DstPort: o.DstPort,
			Anomalies: an.String(),
		}
		if a.Flow.Src.IsValid() {
			d.Src, d.Dst = a.Flow.Src.String(), a.Flow.Dst.String()
		}
		a.Annotations = make(map[string]string, len(r.templates))
		for k, t := range r.templates {
			var b strings.Builder
			if err := t.Execute(&b, &d); err != nil {
				// Checked on sample data at load; say so rather than drop it.
				b.WriteString("template error: " + err.Error())
			}
			a.Annotations[k] = b.String()
		}
	}
	return a
}

// threshold is a rule's `above` (0 for event rules): rule.thresh.
func (r *rule) threshold() float64 {
	switch r.Kind {
	case KindThreshold:
		return r.Threshold.Above
	case KindVolume:
		return r.Volume.Above
	case KindDuplicates:
		return r.Duplicates.Above
	}
	return 0
}
