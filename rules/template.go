package rules

import (
	"strings"
	"text/template"
	"time"
)

// TemplateData is what an annotation's template sees, e.g.
// "{{.Value}} half-open flows to {{.Dst}} in {{.Window}}".
type TemplateData struct {
	Alert     string            // the rule's alert name
	Severity  string            // its severity
	Labels    map[string]string // the alert's labels
	Value     float64           // the measured figure (0 for event rules)
	Threshold float64           // the rule's `above` (0 for event rules)
	Window    time.Duration     // the counting window (0 for event rules)
	// The flow whose packet raised the alert, from originator to responder.
	Proto            string
	Src, Dst         string
	SrcPort, DstPort uint16
	ConnState        string
	Anomalies        string // the packet's anomalies, comma-separated ("none")
}

// sampleData checks templates at load time: executing against it catches
// fields that do not exist, which parsing alone does not.
var sampleData = TemplateData{
	Alert: "Sample", Severity: "warning", Labels: map[string]string{"alertname": "Sample"},
	Value: 1, Threshold: 1, Window: time.Second, Proto: "tcp", Src: "192.0.2.1", Dst: "192.0.2.2",
	SrcPort: 1, DstPort: 2, ConnState: "S0", Anomalies: "none",
}

// parseTemplate compiles an annotation's template and runs it once on
// sample data, so that a mistake is an error when the file is loaded and
// not when the alert fires.
func parseTemplate(name, text string) (*template.Template, error) {
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, trimTemplateError(err)
	}
	if err := t.Execute(new(strings.Builder), &sampleData); err != nil {
		return nil, trimTemplateError(err)
	}
	return t, nil
}

// trimTemplateError drops text/template's "template: NAME:" prefix, which
// repeats what the message's position already says.
func trimTemplateError(err error) error {
	return templateError(strings.TrimPrefix(err.Error(), "template: "))
}

type templateError string

func (e templateError) Error() string { return string(e) }
