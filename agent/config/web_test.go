package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckWeb: a listen address beyond loopback is refused without a
// web config file that sets TLS or basic auth, naming the option, and
// taken with one; loopback needs none; a web config file the server
// could not read is refused naming the file, whatever the address.
func TestCheckWeb(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	auth := "testdata/ref/web.yml" // basic auth
	headersOnly := write("headers.yml", "http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n")
	badHash := write("badhash.yml", "basic_auth_users:\n  prometheus: not-a-bcrypt-hash\n")
	unknownKey := write("unknown.yml", "basic_auth_user:\n  prometheus: x\n")
	noCert := write("nocert.yml", "tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n")
	missing := filepath.Join(dir, "missing.yml")
	for _, tc := range []struct {
		listen, file string
		want         string // in the error; "" for none
	}{
		{"127.0.0.1:9100", "", ""},
		{"127.1.2.3:9100", "", ""},
		{"[::1]:9100", "", ""},
		{"[::ffff:127.0.0.1]:9100", "", ""},
		{"localhost:9100", "", ""},
		{":9100", "", `listen: ":9100" is reachable beyond this host, and no web config file (web.config-file, --web.config.file) sets TLS or basic auth`},
		{"0.0.0.0:9100", "", `listen: "0.0.0.0:9100" is reachable`},
		{"[::]:9100", "", `listen: "[::]:9100" is reachable`},
		{"192.0.2.1:9100", "", `listen: "192.0.2.1:9100" is reachable`},
		{"monitor.example.net:9100", "", `listen: "monitor.example.net:9100" is reachable`},
		{":9100", auth, ""},
		{"0.0.0.0:9100", auth, ""},
		{":9100", headersOnly, "web config file " + headersOnly + " (web.config-file, --web.config.file) sets neither TLS (tls_server_config) nor basic auth (basic_auth_users)"},
		{"127.0.0.1:9100", headersOnly, ""},
		{"127.0.0.1:9100", badHash, "web.config-file: " + badHash + ": "},
		{"127.0.0.1:9100", unknownKey, "web.config-file: " + unknownKey + ": "},
		{"127.0.0.1:9100", noCert, "web.config-file: " + noCert + ": "},
		{":9100", missing, "web.config-file: " + missing + ": "},
	} {
		c := Default()
		c.Listen, c.Web.ConfigFile = tc.listen, tc.file
		err := c.CheckWeb()
		if s, want := c.Web.Scheme(), map[bool]string{false: "http", true: "https"}[tc.file == noCert]; s != want {
			t.Errorf("web %q: scheme %s, want %s", tc.file, s, want)
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("listen %s, web %q: %v", tc.listen, tc.file, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid)):
			t.Errorf("listen %s, web %q: %v, want %q", tc.listen, tc.file, err, tc.want)
		}
	}
}

// TestWebFlags: --web.config.file and --web.enable-lifecycle set the web
// keys, as Prometheus names its flags, the second a flag without a value.
func TestWebFlags(t *testing.T) {
	c := Default()
	if err := c.Set("web.config.file", "testdata/ref/web.yml"); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("web.enable-lifecycle", "true"); err != nil {
		t.Fatal(err)
	}
	if want := (Web{ConfigFile: abs(t, "testdata/ref/web.yml"), EnableLifecycle: true}); c.Web != want {
		t.Errorf("web after the flags: %+v, want %+v", c.Web, want)
	}
	if !IsBool("web.enable-lifecycle") || IsBool("web.config.file") || IsBool("listen") || IsBool("watchlist") {
		t.Error("IsBool: only web.enable-lifecycle of these is a switch")
	}
}
