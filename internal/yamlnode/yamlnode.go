// Package yamlnode holds what flowmon's YAML parsers (rules files, alert
// sink files, the agent's config) share when they walk a yaml.v3 node
// tree themselves, which they do to name every error's line and column,
// and the keys a struct's yaml tags give its fields (Fields), the one
// place settings take their names from.
package yamlnode

import (
	"strconv"

	"gopkg.in/yaml.v3"
)

// Resolve follows aliases (*anchor) to the node they name.
func Resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// Describe names what a node is, for messages saying "want X, got Y":
// "a mapping", "a list", "nothing", a quoted string, or the scalar.
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.Tag {
	case "!!null":
		return "nothing"
	case "!!str":
		return strconv.Quote(n.Value)
	}
	return n.Value
}
