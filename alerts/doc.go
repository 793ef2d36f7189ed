// Package alerts carries what the rules raise to where operators look:
// the Alert (alert.go), the Manager that folds repeats and tracks firing
// alerts (manager.go), and the sinks that deliver alerts to a terminal, a
// file, a webhook or Alertmanager, each through its own bounded queue.
//
// # Alerts on the wire
//
// AppendJSON writes an alert as one JSON object, the line of the stdout
// and file sinks and the body of a webhook:
//
//	{"status":"firing","labels":{"alertname":"SYNFlood","dst":"10.0.0.1","severity":"critical"},
//	 "annotations":{"summary":"..."},"startsAt":"2009-11-18T08:00:01Z","count":3,"value":1200,
//	 "flow":{"proto":"tcp","src":"1.2.3.4","src_port":5555,"dst":"10.0.0.1","dst_port":80,"conn_state":"S0"}}
//
// (one line; endsAt appears once the alert resolves, status "resolved").
// AppendText writes the line a person reads, as a replay prints on
// standard error:
//
//	2009-11-18T08:00:01Z FIRING SYNFlood severity=critical dst=10.0.0.1 count=3 value=1200 flow=tcp 1.2.3.4:5555->10.0.0.1:80 S0 — summary text
//
// Times are packet time: a replayed capture's alerts carry its clock.
//
// # Sinks and their queues
//
// A Sink's Send queues a copy of the alert and returns at once, whatever
// the destination does: the caller is on a packet path. Every sink has one
// queue (an Alertmanager sink one per URL) and one goroutine delivering
// from it (queue.go), oldest first. An alert leaves the queue only when
// delivered, or rejected for good, so a destination that is down at start,
// or goes down and comes back, loses nothing that fits the queue; only a
// full queue drops (Send returns false). Failed attempts are retried after
// an exponential backoff from min_backoff (100ms) doubling to max_backoff
// (30s), each wait drawn from the upper half of its step so that sinks
// failing together spread out, and no shorter than a server's Retry-After
// (up to max_backoff). Close delivers what it can until its context ends.
//
//   - stdout (NewWriterSink for any io.Writer): JSON or text lines, a
//     batch of up to 64 a Write.
//   - file: JSON or text lines appended to path (internal/rotfile); past
//     max_size bytes, or once older than max_age, the file rotates to
//     path.1, path.1 to path.2, ... keeping max_files. A write that fails
//     (a full disk) is cut back off the file, so it holds whole alerts
//     only, and the alerts are retried; a partial last line a crash left
//     is cut when the sink opens the file.
//   - webhook: one alert a POST, its AppendJSON object, to url, with an
//     optional bearer token and TLS settings. A 2xx answer delivers; 408,
//     429, 5xx, other answers and network errors are retried; any other
//     4xx rejects the alert for good (counted failed and dropped).
//   - alertmanager: Alertmanager's API v2, POST <url>/api/v2/alerts with a
//     JSON array (up to 64) of postableAlert {labels, annotations,
//     startsAt, endsAt, generatorURL}, to every URL of an HA set, each with
//     its own queue so that one down holds back none of the others. The
//     sink keeps the firing alerts by label set (at most max_firing, 10000;
//     a new one beyond is dropped) and posts them all again every
//     resend_interval (1m, wall clock: this is delivery, not packet time),
//     since Alertmanager resolves an alert it has not heard of for its
//     resolve_timeout (5m by default). A resolved alert is posted once
//     with its endsAt and forgotten. Because startsAt is packet time, maybe
//     years old, a firing alert is posted without endsAt: Alertmanager then
//     sets it from its own clock to now plus resolve_timeout, renewed by
//     every resend. The annotations gain count, value and flow (in
//     AppendText's form) unless the rule has its own.
//
// SinkStats count what was sent, failed attempts, drops and the queue's
// length; the engine exports them as metrics (this package does not
// import Prometheus).
//
// # Configuration
//
// ParseConfig reads the sinks from YAML; Config.Open makes them:
//
//	sinks:
//	  - name: console            # unique: letters, digits, _ - .
//	    type: stdout             # stdout | file | webhook | alertmanager
//	    format: json             # json | text (stdout, file)
//	    queue: 1024              # every type; and min_backoff, max_backoff
//	  - name: archive
//	    type: file
//	    path: /var/log/flowmon/alerts.jsonl
//	    max_size: 10MiB          # or bytes; kB, MB, GB and KiB, MiB, GiB
//	    max_age: 24h             # none by default
//	    max_files: 5
//	  - name: hook
//	    type: webhook
//	    url: https://example/hook
//	    bearer_token: secret     # or bearer_token_file, read at each request
//	    tls: {ca_file: ca.pem, insecure_skip_verify: false}
//	    timeout: 5s
//	  - name: am
//	    type: alertmanager       # also bearer_token(_file), tls, timeout
//	    urls: [http://am1:9093, http://am2:9093]
//	    resend_interval: 1m
//	    max_firing: 10000
//	    generator_url: http://flowmon:9100/
//
// Decoding is strict and reports every error at once, each as
// "file:line:col: sink NAME: what is wrong": unknown keys and keys of
// another sink type, wrong types, bad durations and sizes, missing
// required keys, names used twice. Relative paths are taken from the
// configuration file's directory.
//
// Sinks and the Manager are safe for concurrent use; Alert and Config are
// plain data.
package alerts
