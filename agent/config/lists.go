package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/flowmon/flowmon/internal/yamlnode"
	"github.com/flowmon/flowmon/pipeline/watchlist"
)

// watchlists.lists is the one setting that holds a sequence: of {name,
// file} mappings, each element's problems named by its index
// ("watchlists.lists[1].file") and placed at its own line and column.

var watchlistsType = reflect.TypeFor[[]Watchlist]()

// listKeys are an element's keys, in the order Effective writes them.
var listKeys = []string{"name", "file"}

// lists decodes watchlists.lists from v (a null is none), each file
// taken from the file's directory; an element that is not a mapping, a
// key unknown or repeated and a value not a string are errors where they
// are. Every element has its place in c, whatever its problems, so that
// the indexes of check's keys are the file's.
func (p *parser) lists(key string, v *yaml.Node, c *Config) {
	c.Watchlists.Lists = nil
	if v.Tag == "!!null" {
		return
	}
	if v.Kind != yaml.SequenceNode {
		p.errorf(v, key, "want a list of {name, file} mappings, got %s", yamlnode.Describe(v))
		p.bad[key] = true
		return
	}
	for i, e := range v.Content {
		e = yamlnode.Resolve(e)
		ek := fmt.Sprintf("%s[%d]", key, i)
		p.at[ek] = e
		var w Watchlist
		if e.Kind != yaml.MappingNode {
			p.errorf(e, ek, "want a mapping of name and file, got %s", yamlnode.Describe(e))
			for _, k := range listKeys {
				p.bad[ek+"."+k] = true
			}
		} else {
			p.listElement(ek, e, &w)
		}
		c.Watchlists.Lists = append(c.Watchlists.Lists, w)
	}
}

// listElement decodes one {name, file} mapping into w.
func (p *parser) listElement(ek string, e *yaml.Node, w *Watchlist) {
	seen := map[string]int{} // key -> line
	for j := 0; j+1 < len(e.Content); j += 2 {
		k, v := e.Content[j], yamlnode.Resolve(e.Content[j+1])
		switch {
		case k.Kind != yaml.ScalarNode:
			p.errorf(k, ek, "want a key, got %s", yamlnode.Describe(k))
			continue
		case !slices.Contains(listKeys, k.Value):
			p.errorf(k, ek, "unknown key %q (want one of %s)", k.Value, strings.Join(listKeys, ", "))
			continue
		}
		key := ek + "." + k.Value
		if line, ok := seen[k.Value]; ok {
			p.errorf(k, key, "already set at line %d", line)
			continue
		}
		seen[k.Value] = k.Line
		p.at[key] = v
		f := &w.Name
		if k.Value == "file" {
			f = &w.File
		}
		if msg := decode(reflect.ValueOf(f).Elem(), v, false); msg != "" {
			p.errorf(v, key, "%s", msg)
			p.bad[key] = true
		} else if f == &w.File && *f != "" {
			*f = absPath(p.dir, *f)
		}
	}
}

// setWatchlist applies --watchlist NAME=FILE: NAME's file, the list
// added if the configuration has none of that name. It returns what is
// wrong with the flag's form, or "".
func (c *Config) setWatchlist(value string) string {
	name, file, ok := strings.Cut(value, "=")
	if !ok {
		return fmt.Sprintf("want NAME=FILE, got %q", value)
	}
	if file != "" {
		file = absPath("", file)
	}
	lists := slices.Clone(c.Watchlists.Lists) // c may share the array with the configuration Set leaves unchanged on error
	if i := slices.IndexFunc(lists, func(w Watchlist) bool { return w.Name == name }); i >= 0 {
		lists[i].File = file
	} else {
		lists = append(lists, Watchlist{Name: name, File: file})
	}
	c.Watchlists.Lists = lists
	return ""
}

// checkWatchlists says what is wrong with the lists: a name the
// watchlist API would refuse, a name given twice, a file not given.
func checkWatchlists(lists []Watchlist) []problem {
	var ps []problem
	first := map[string]int{} // name -> index
	for i, w := range lists {
		k := fmt.Sprintf("watchlists.lists[%d]", i)
		j, dup := first[w.Name]
		switch err := watchlist.CheckName(w.Name); {
		case w.Name == "":
			ps = append(ps, problem{key: k + ".name", msg: "missing or empty: the name watchlist rules give the list"})
		case err != nil:
			ps = append(ps, problem{key: k + ".name", msg: err.Error()})
		case dup:
			ps = append(ps, problem{key: k + ".name", msg: fmt.Sprintf("%q names lists[%d] too", w.Name, j)})
		default:
			first[w.Name] = i
		}
		if w.File == "" {
			ps = append(ps, problem{key: k + ".file", msg: "missing or empty: the list's text file"})
		}
	}
	return ps
}

// encodeLists writes the lists as the parser reads them: a block
// sequence of {name, file}, or [] for none.
func encodeLists(lists []Watchlist) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	if len(lists) == 0 {
		n.Style = yaml.FlowStyle
	}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	for _, w := range lists {
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map",
			Content: []*yaml.Node{str("name"), str(w.Name), str("file"), str(w.File)}})
	}
	return n
}
