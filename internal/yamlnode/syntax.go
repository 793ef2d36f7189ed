package yamlnode

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parserProblems are the messages of yaml.v3's parser, as against its
// scanner. For these yaml.v3 gives the line counted from 0 (its marks'
// own count; it adds the 1 for a scanner's error only), so that an error
// would name the line before the one that broke, or before the block it
// broke in.
var parserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected <stream-start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// SyntaxError reads yaml.v3's syntax error, "yaml: line N: msg", into the
// line it means, counted from 1 (0 when it names none), and the message.
// yaml.v3 gives no column, and its line is at times where the enclosing
// block starts rather than where it broke. lines is how many lines the
// document has: a problem at its end names the last.
func SyntaxError(err error, lines int) (line int, msg string) {
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, strings.TrimPrefix(err.Error(), "yaml: ")
	}
	line, _ = strconv.Atoi(m[1])
	if slices.Contains(parserProblems, m[2]) {
		line++
	}
	return min(line, max(lines, 1)), m[2]
}

// Lines is how many lines src has, a last one without its newline counted.
func Lines(src []byte) int {
	n := strings.Count(string(src), "\n")
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}
