package config

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"github.com/flowmon/flowmon/alerts"
)

// CheckHost checks what c needs of the machine it runs on, which Validate
// (about the settings alone) cannot: the user to run as exists, and the
// directories the agent writes in exist and are writable by the user it
// runs as (c.User, or the one running this): the snapshot's (else the
// state is lost at the stop), the flow log's, the alert files' (of the
// alerting file's file sinks; the file itself is checked by its own
// parser), the watchlists' and the history's. It returns every problem,
// each a *conferr.Error naming its key.
func (c Config) CheckHost() error {
	var errs []error
	add := func(key, format string, a ...any) {
		errs = append(errs, invalid(key, fmt.Sprintf(format, a...)))
	}
	uid, gids := os.Getuid(), []int{os.Getgid()}
	if c.User != "" {
		u, err := user.Lookup(c.User)
		if err != nil {
			add("user", "%q: %v", c.User, err)
			return errors.Join(errs...)
		}
		uid, _ = strconv.Atoi(u.Uid)
		g, _ := strconv.Atoi(u.Gid)
		gids = []int{g}
		if more, err := u.GroupIds(); err == nil {
			for _, s := range more {
				if n, err := strconv.Atoi(s); err == nil {
					gids = append(gids, n)
				}
			}
		}
	}
	dir := func(key, d string) {
		st, err := os.Stat(d)
		switch {
		case err != nil:
			add(key, "%v", err)
		case !st.IsDir():
			add(key, "%s is not a directory", d)
		case !writable(st, uid, gids):
			who := "this user"
			if c.User != "" {
				who = "user " + c.User
			}
			add(key, "%s is not writable by %s", d, who)
		}
	}
	if p := c.Snapshot.Path; p != "" {
		dir("snapshot.path", filepath.Dir(p))
	}
	if p := c.FlowLog; p != "" && p != "-" {
		dir("flow-log", filepath.Dir(p))
	}
	if d := c.Watchlists.Dir; d != "" {
		dir("watchlists.dir", d)
	}
	if c.Alerting != "" {
		// An alert file the user cannot write would be found only at the
		// first alert, as a failing sink.
		if data, err := os.ReadFile(c.Alerting); err == nil {
			if ac, err := alerts.ParseConfig(c.Alerting, data); err == nil {
				for _, sc := range ac.Sinks {
					if sc.Type == alerts.SinkFile && sc.Path != "" {
						dir("alerting", filepath.Dir(sc.Path))
					}
				}
			}
		}
	}
	if d := c.History.Dir; d != "" {
		if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
			dir("history.dir", filepath.Dir(d)) // the agent makes it
		} else {
			dir("history.dir", d)
		}
	}
	return errors.Join(errs...)
}
