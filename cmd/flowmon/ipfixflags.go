package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/flowmon/flowmon/record/ipfix"
)

// ipfixFlags adds the IPFIX exporter's flags, read into o.
func ipfixFlags(fs *flag.FlagSet, o *ipfix.Options) {
	fs.Func("ipfix", "export the flow records as IPFIX to `HOST:PORT[,...]` (collectors; each gets every record)", func(s string) error {
		o.Collectors = ipfix.ParseCollectors(s)
		return nil
	})
	fs.StringVar(&o.Transport, "ipfix-transport", ipfix.TransportUDP, "IPFIX transport: udp or tcp")
	fs.StringVar(&o.Mode, "ipfix-mode", ipfix.ModeBiflow, "IPFIX records: biflow (one record a flow, RFC 5103 reverse elements) or compat (two one-way records a flow, for collectors without RFC 5103)")
	fs.IntVar(&o.MTU, "ipfix-mtu", ipfix.DefaultMTU, fmt.Sprintf("path MTU to the IPFIX collectors, %d..%d: a message fills it less the IP and UDP/TCP headers", ipfix.MinMTU, ipfix.MaxMTU))
	fs.DurationVar(&o.TemplateRefresh, "ipfix-template-refresh", ipfix.DefaultTemplateRefresh, fmt.Sprintf("how often UDP collectors get the IPFIX templates again, %v..%v", ipfix.MinTemplateRefresh, ipfix.MaxTemplateRefresh))
	fs.IntVar(&o.Rate, "ipfix-rate", ipfix.DefaultRate, fmt.Sprintf("data records a second sent to each UDP IPFIX collector, %d..%d: what it reads at its default socket buffer (TCP is not paced)", ipfix.MinRate, ipfix.MaxRate))
	fs.Func("ipfix-enterprise", "your private enterprise number `PEN`, under which conn_state, history and confidence are exported too (default none)", func(s string) error {
		_, err := fmt.Sscan(s, &o.EnterpriseNumber)
		return err
	})
	fs.Func("ipfix-domain", "IPFIX observation domain `ID` (default 0)", func(s string) error {
		_, err := fmt.Sscan(s, &o.ObservationDomain)
		return err
	})
}

// checkIPFIXFlags refuses IPFIX settings without --ipfix and reports the
// exporter's Validate errors with the flags' names.
func checkIPFIXFlags(fs *flag.FlagSet, o *ipfix.Options, given map[string]bool) error {
	if len(o.Collectors) == 0 {
		for name := range given {
			if strings.HasPrefix(name, "ipfix-") {
				return usageError(fs, "--%s does nothing without --ipfix", name)
			}
		}
		if given["ipfix"] {
			return usageError(fs, "--ipfix: no collector given (HOST:PORT[,...])")
		}
		return nil
	}
	err := o.Validate()
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		_ = usageError( // prints; errUsage is returned below
			fs, "--ipfix: %s", strings.TrimPrefix(e.Error(), ipfix.ErrOptions.Error()+": "))
	}
	return errUsage
}
