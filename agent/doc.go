// Package agent wires flowmon's parts into the programs `flowmon run`
// and `flowmon replay` are: it opens what a configuration names (the
// capture sources, the flow log, the rules and their alert sinks, the
// watchlists, the host-pair history, the snapshot, the metrics server),
// attaches them to a pipeline, runs it, and closes them in order.
//
// Open builds the live agent from an agent/config.Config; Agent.Run
// captures until its context is done and returns the summary; Close
// flushes and closes. OpenReplay and Replayer.Run do the same for
// capture files. Both keep running what may change while they run: the
// rules reload on SIGHUP, when their file changes and on POST /-/reload
// (a file that does not load leaves the old rules running, and
// flowmon_rules_last_reload_successful says so); the live agent's config
// file and watchlists reload on SIGHUP.
//
// The HTTP server is secured as Prometheus's (agent/config.Web):
// exporter-toolkit serves it, with TLS and basic auth from its web config
// file, needed for an address beyond loopback; POST /-/reload and the
// watchlists' POST answer 403 unless the lifecycle is enabled.
//
// The agent says what it does (a reload, a restored snapshot) on its Log
// writer; printing the summary is its caller's.
package agent
