package rules

import _ "embed"

// defaultRules is rules/default.yaml, the rules used when none are given.
//
//go:embed default.yaml
var defaultRules []byte

// DefaultName is how messages name the embedded default rules.
const DefaultName = "default.yaml (embedded)"

// DefaultRules returns the embedded default rules file's content.
func DefaultRules() []byte { return append([]byte(nil), defaultRules...) }

// Default compiles the embedded default rules.
func Default() (*Set, error) {
	f, err := Parse(DefaultName, defaultRules)
	if err != nil {
		return nil, err
	}
	return Compile(f)
}
