package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/flowmon/flowmon/report"
)

func init() {
	commands["flows"] = command{
		summary: "print the top flows, talkers and ports of a flow log (conn.log JSON lines), as replay --top does",
		run:     runFlows,
	}
}

// runFlows reads flow logs (--flows-out's, run's, and their rotations)
// and prints their tops: the figures replay --top and --report give for
// the replay that wrote them.
func runFlows(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("flows", "[flags] FILE...", stderr,
		"\nReads flow logs (conn.log JSON lines, - for stdin) in order and prints the top flows, originators,",
		"responders and responder ports by bytes and by packets, as nfdump -s does; interim records are left out.")
	top := fs.Int("top", 10, "rows in each table, 1 or more")
	asJSON := fs.Bool("json", false, "print the tables as one JSON object (the report's \"tops\")")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError(fs, "no flow log given (- reads standard input)")
	}
	if *top < 1 {
		return usageError(fs, "--top %d: must be 1 or more", *top)
	}
	t := report.NewTops(*top)
	for _, name := range fs.Args() {
		if err := readFlowLog(name, t); err != nil {
			return err
		}
	}
	tt := t.Tables(*top)
	if *asJSON {
		return json.NewEncoder(stdout).Encode(tt)
	}
	return report.WriteTables(stdout, tt)
}

func readFlowLog(name string, t *report.Tops) error {
	if name == "-" {
		return report.ReadFlowLog(stdin, "stdin", t)
	}
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("read flow log: %w", err)
	}
	defer f.Close()
	return report.ReadFlowLog(f, name, t)
}
