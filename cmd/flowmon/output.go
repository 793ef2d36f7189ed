package main

import "flag"

// outFlag defines -o, every command's one name for where its main output
// goes (outfile.Create: - for stdout).
func outFlag(fs *flag.FlagSet) *string {
	return fs.String("o", "-", "write the output to `FILE` (- for stdout)")
}
