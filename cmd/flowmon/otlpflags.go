package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/flowmon/flowmon/record/otlp"
)

// otlpFlags adds the OTLP exporter's flags, read into o.
func otlpFlags(fs *flag.FlagSet, o *otlp.Options) {
	fs.StringVar(&o.Endpoint, "otlp", "", "export the flow records as OTLP logs to the OpenTelemetry collector at `URL` (OTLP/HTTP: http(s)://HOST:4318, records POSTed to URL/v1/logs; gRPC: http(s)://HOST:4317)")
	fs.StringVar(&o.Protocol, "otlp-protocol", otlp.ProtocolHTTP, "OTLP protocol: http (protobuf, gzip) or grpc")
	fs.Func("otlp-header", "send `Name: value` with every OTLP request (repeatable), e.g. an Authorization", func(s string) error {
		o.Headers = append(o.Headers, s)
		return nil
	})
	fs.StringVar(&o.HeadersFile, "otlp-headers-file", "", "send the headers in `FILE` (one Name: value a line) with every OTLP request: a token stays off the command line")
	fs.StringVar(&o.CAFile, "otlp-ca", "", "https: check the collector's certificate against the CAs in `FILE` (PEM; default the system's)")
	fs.StringVar(&o.CertFile, "otlp-cert", "", "https: client certificate `FILE` (PEM), with --otlp-key")
	fs.StringVar(&o.KeyFile, "otlp-key", "", "https: client key `FILE` (PEM)")
	fs.BoolVar(&o.InsecureSkipVerify, "otlp-insecure-skip-verify", false, "https: check no certificate (tests only)")
	fs.StringVar(&o.Body, "otlp-body", otlp.BodyNone, "OTLP log record body: none (the attributes hold every field) or connlog (the record's conn.log line too)")
	fs.StringVar(&o.Compression, "otlp-compression", otlp.CompressionGzip, "OTLP request compression: gzip or none (a collector on this host)")
	fs.IntVar(&o.BatchSize, "otlp-batch-size", otlp.DefaultBatchSize, fmt.Sprintf("records an OTLP request carries at most, %d..%d", otlp.MinBatchSize, otlp.MaxBatchSize))
	fs.DurationVar(&o.BatchTimeout, "otlp-batch-timeout", otlp.DefaultBatchTimeout, fmt.Sprintf("how long an OTLP batch waits to fill, %v..%v", otlp.MinBatchTimeout, otlp.MaxBatchTimeout))
	fs.IntVar(&o.Queue, "otlp-queue", otlp.DefaultQueue, fmt.Sprintf("records waiting for the OTLP collector, %d..%d (a replay waits for room while the collector works)", otlp.MinQueue, otlp.MaxQueue))
	fs.DurationVar(&o.Timeout, "otlp-timeout", otlp.DefaultTimeout, fmt.Sprintf("an OTLP request's timeout, %v..%v", otlp.MinTimeout, otlp.MaxTimeout))
}

// checkOTLPFlags refuses OTLP settings without --otlp and reports the
// exporter's Validate errors with the flags' names.
func checkOTLPFlags(fs *flag.FlagSet, o *otlp.Options, given map[string]bool) error {
	if o.Endpoint == "" {
		for name := range given {
			if strings.HasPrefix(name, "otlp-") {
				return usageError(fs, "--%s does nothing without --otlp", name)
			}
		}
		if given["otlp"] {
			return usageError(fs, "--otlp: no URL given (http://HOST:4318)")
		}
		return nil
	}
	problems := o.Problems()
	if len(problems) == 0 {
		return nil
	}
	for _, p := range problems {
		name := "otlp-" + p.Key
		switch p.Key {
		case "endpoint":
			name = "otlp"
		case "headers":
			name = "otlp-header"
		case "cert-file":
			name = "otlp-cert"
		}
		_ = usageError(fs, "--%s: %s", name, p.Msg) // prints; errUsage is returned below
	}
	return errUsage
}
