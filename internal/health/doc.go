// Package health is the one failure record of the agent's parts. Each
// part that can fail while the agent runs (a record sink, an IPFIX
// collector, an alert sink, the periodic snapshot, a capture source, the
// web config file, the kernel's drops) is a Component: it reports Fail
// with the error when an attempt fails and OK when one works. The
// component logs the start of a failure once, naming itself, at Warn, and
// its end at Info with how long it lasted; it counts the failures; and
// the Registry it belongs to exports every component the same way:
//
//	flowmon_component_up{component="NAME"}              1 while it works, 0 while it fails
//	flowmon_component_failures_total{component="NAME"}  failures started
//
// /healthz asks the Registry which components fail now (Failing) and
// names each one.
//
// Backoff is the one wait between attempts at a failing destination:
// doubling from a minimum to a maximum, drawn from the upper half of
// each step so that parts failing together do not retry in step.
package health
