package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// unitFile reads a systemd unit's [Service] settings: each key's values,
// in order.
func unitFile(t *testing.T, name string) map[string][]string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || l[0] == '#' || l[0] == ';':
		case l[0] == '[':
			section = l
		case section == "[Service]":
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				t.Fatalf("%s: %q", name, l)
			}
			keys[k] = append(keys[k], v)
		}
	}
	return keys
}

// TestServiceUnit: docs/flowmon.service is a unit systemd accepts
// (systemd-analyze verify, where the machine has it, with the binary the
// unit starts made here), and what it grants fits the agent: every
// directory the example configuration names under /var is one the unit
// makes writable (ProtectSystem=strict makes the rest read-only), the
// snapshot it passes is in its StateDirectory, and the capabilities the
// agent keeps to reopen an interface (CAP_NET_RAW) are granted and bounded.
func TestServiceUnit(t *testing.T) {
	const unit = "../../docs/flowmon.service"
	keys := unitFile(t, unit)
	if got := keys["ProtectSystem"]; !slices.Equal(got, []string{"strict"}) {
		t.Fatalf("ProtectSystem %v: the test assumes strict", got)
	}
	writable := map[string]bool{}
	for _, d := range keys["StateDirectory"] {
		writable["/var/lib/"+d] = true
	}
	for _, d := range keys["LogsDirectory"] {
		writable["/var/log/"+d] = true
	}
	for _, d := range keys["ReadWritePaths"] {
		for _, p := range strings.Fields(d) {
			writable[p] = true
		}
	}
	example, err := os.ReadFile("../../agent/config/testdata/example.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	paths := regexp.MustCompile(`(/var/[a-z]+/[^\s"']+)`).FindAllString(string(example), -1)
	if len(paths) == 0 {
		t.Fatal("the example configuration names no path under /var")
	}
	start := strings.Join(keys["ExecStart"], " ")
	paths = append(paths, regexp.MustCompile(`--snapshot (\S+)`).FindStringSubmatch(start)[1])
	for _, p := range paths {
		ok := false
		for d := range writable {
			ok = ok || strings.HasPrefix(p, d+"/")
		}
		if !ok {
			t.Errorf("%s is in no directory the unit makes writable (%v)", p, writable)
		}
	}
	for _, k := range []string{"AmbientCapabilities", "CapabilityBoundingSet"} {
		if !slices.Contains(strings.Fields(strings.Join(keys[k], " ")), "CAP_NET_RAW") {
			t.Errorf("%s %v lacks CAP_NET_RAW", k, keys[k])
		}
	}

	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("no systemd-analyze to verify the unit with")
	}
	bin := buildFlowmon(t)
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(t.TempDir(), "flowmon.service")
	if err := os.WriteFile(local, []byte(strings.ReplaceAll(string(b), "/usr/local/bin/flowmon", bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", local).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
