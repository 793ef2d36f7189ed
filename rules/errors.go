package rules

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by every error a rules file's content causes.
var ErrInvalid = errors.New("invalid rules")

// ruleIn names the rule alert in errors (conferr.Error's In): rule
// "syn-flood"; "" for none.
func ruleIn(alert string) string {
	if alert == "" {
		return ""
	}
	return fmt.Sprintf("rule %q", alert)
}
