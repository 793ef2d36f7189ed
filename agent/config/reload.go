package config

import "reflect"

// Reloadable compares the running configuration c with a new one, as
// read again at SIGHUP, and returns the keys that differ, in the file's
// order. A running agent takes a change of rules (it loads the new rules
// file) and of watchlists.lists (it opens the lists added, reads a list
// whose file changed from the new file and closes the lists removed:
// watchlist.Set.Update). The alert sinks it keeps, so alerting, like
// every other setting: the interface, the source and its ring, the
// pipeline's sizes and workers, where the watchlists persist, the flow
// history, listen, web, snapshot, flow-log, user, stop-timeout, is fixed when
// the agent starts. If only those two changed, c becomes new; if any
// other setting did, the error is a *RestartError naming them (wrapping
// ErrNeedsRestart) and c is unchanged: the reload is all or nothing.
// new is expected valid (from Parse or Load).
func (c *Config) Reloadable(new Config) (changed []string, err error) {
	var fixed []string
	for _, s := range settings {
		if reflect.DeepEqual(s.field(c).Interface(), s.field(&new).Interface()) {
			continue
		}
		changed = append(changed, s.key)
		if !s.reload {
			fixed = append(fixed, s.key)
		}
	}
	if len(fixed) > 0 {
		return changed, &RestartError{Keys: fixed}
	}
	*c = new
	return changed, nil
}
