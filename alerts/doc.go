// Package alerts will hold the Alert type, suppression and the sinks
// (stdout, files, webhooks, Alertmanager) with bounded queues.
//
// Empty for now: alerts are a later issue.
package alerts
