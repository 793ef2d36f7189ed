// Package rules holds flowmon's detection rules: their YAML format, its
// strict parsing, the compiled rule set, and its evaluation on the
// pipeline's shards. What fires goes to an alerts.Manager.
//
// # Format
//
// A rules file is shaped like Prometheus's alerting rules:
//
//	groups:
//	  - name: attacks
//	    interval: 10s              # the window of the group's counting rules
//	    rules:
//	      - alert: SYNFlood        # the alert's name
//	        kind: threshold        # transition | anomaly | threshold | volume | duplicates | watchlist | novelty
//	        track: by_dst          # by_flow (default) | by_src | by_dst | by_pair
//	        match: {protocol: tcp, dst: [198.18.0.0/15], dst_ports: "80,443,8000-8100",
//	                flags: [SYN, "!ACK"], conn_state: [S0]}
//	        threshold: {event: half_open, above: 500, window: 10s, error: 1e-4}
//	        for: 0s                # hold that long (packet time) before firing
//	        suppress: 5m           # repeats inside fold into the firing alert
//	        severity: critical
//	        labels: {team: net}
//	        annotations: {summary: "SYN flood to {{.Dst}}: {{.Value}} half-open"}
//
// Source and destination are the flow's originator and responder. The
// kinds' conditions: transition {from: [states], to: [states]} (a flow
// enters a conn_state, from given ones); anomaly [names] (the ACSM's flag
// anomalies, acsm.AnomalyNames, or any); threshold {event, above, window,
// error} with events new_flow, attempt (a bare SYN opening a flow),
// half_open (attempts less the flows that left S0), conn_state (flows
// entering match.conn_state), packet, distinct_dst_ports,
// distinct_dst_hosts and distinct_src_hosts; volume {measure: packets or
// bytes, above, window, error}; duplicates {above: a share, min_packets,
// window}; watchlist {list: a watchlist's name, side: either, src or dst}
// (a new flow touches a listed address: the shards' Lookups.Watchlists,
// which must have the list, or the rules are refused); novelty {} (a new
// flow between hosts the flow history had not seen together within its
// horizon: Lookups.Novel; match.src and match.dst limit it to CIDRs).
// Annotations are text/template over TemplateData, compiled and
// run on sample data when the file is loaded.
//
// Parse reports every error of a file at once, each as
// file:line:col: rule "NAME": what is wrong (conferr.Errors); unknown fields,
// wrong types, bad CIDRs, ports, durations, conn_states, anomalies,
// kinds, duplicate names in a group and templates that do not run are
// errors. testdata/*.bad.yaml and their .golden files pin the messages.
//
// # Evaluation
//
// Each pipeline shard runs a Shard (the engine's consumer hook) on its own
// goroutine: per packet, one atomic load of the Set, and only the rules
// the packet can trigger. Counting rules count per key in sketches whose
// memory is fixed by the rule's error, not by the keys an attacker picks
// (sketch.go): count-min with conservative update for occurrences, a
// count-min grid of HyperLogLogs for distinct items (of bitmaps, linear
// counting, for a threshold small enough for them). The shards share
// them (a destination's flows are spread over all shards) through atomic
// updates, in three window slots (window.go); a threshold fires when an
// update carries a key's estimate across it, once per window, and the
// alert resolves at the end of the first window in which the key stayed
// at or under it. Event rules (transition, anomaly) fire per event; the
// manager folds repeats within the suppress window and resolves the alert
// when a suppress window passes without one. Nothing on the per-packet
// path allocates: an alert is built only when it fires anew.
//
// Flows kept in the kernel bring flow events instead of packets (their
// start, interim records, their end): a Shard of their own evaluates the
// same rules on them (Shard.Flow), each kind at the event that tells
// what it counts (flow.go; docs/rules.md, "Flows kept in the kernel").
//
// Time is packet time throughout: a replay raises the same alerts every
// run, with the capture's timestamps.
package rules
