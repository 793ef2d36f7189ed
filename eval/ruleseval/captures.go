package ruleseval

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flowmon/flowmon/alerts"
)

// runCaptures runs the default rules over every capture MANIFEST.tsv in
// dir lists, and prints the alerts of each capture where one fired.
func runCaptures(w io.Writer, dir string) error {
	files, err := manifestCaptures(filepath.Join(dir, "MANIFEST.tsv"))
	if err != nil {
		return err
	}
	byRule := map[string]int{}
	var rows []string
	failed := 0
	for _, f := range files {
		fired, err := replay(filepath.Join(dir, f))
		if err != nil {
			failed++ // damaged: the alerts of the packets before the damage count
		}
		for _, a := range fired {
			byRule[a.Name()]++
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s |", f, a.Name(), keyLabels(&a), a.Annotations["summary"]))
		}
	}
	fmt.Fprintf(w, "## Default rules on the real captures (%d captures, %d ending in damage)\n\n", len(files), failed)
	var totals []string
	for _, k := range slices.Sorted(slices.Values(mapsKeys(byRule))) {
		totals = append(totals, fmt.Sprintf("%s %d", k, byRule[k]))
	}
	if len(totals) == 0 {
		totals = []string{"none"}
	}
	fmt.Fprintf(w, "Alerts: %s.\n\n", strings.Join(totals, ", "))
	fmt.Fprintln(w, "| capture | rule | key | summary |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintln(w, r)
	}
	fmt.Fprintln(w)
	return nil
}

func mapsKeys(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// keyLabels are an alert's labels but for its rule's own.
func keyLabels(a *alerts.Alert) string {
	var parts []string
	for _, l := range a.Labels {
		switch l.Name {
		case "alertname", "severity", "category":
			continue
		}
		parts = append(parts, l.Name+"="+l.Value)
	}
	return strings.Join(parts, " ")
}

// manifestCaptures lists the files of kind "capture" in a MANIFEST.tsv.
func manifestCaptures(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) > 5 && cols[5] == "capture" {
			out = append(out, cols[0])
		}
	}
	return out, sc.Err()
}
