// Package rules will hold the YAML rule format, its validation (errors
// name file:line:col), the compiled rule set evaluated against flow state
// and per-flow counts, and reload that keeps the old rules on error.
//
// Empty for now: rules are a later issue.
package rules
