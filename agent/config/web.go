package config

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v2"
)

// CheckWeb checks the HTTP server's protection on the configuration as
// it will run (the file with the flags over it: a --listen flag and a
// --web.config.file flag may come in either order): c.Web.Check for
// c.Listen.
func (c Config) CheckWeb() error { return c.Web.Check(c.Listen) }

// Check reads the web config file as the server will (exporter-toolkit's
// web.Validate: its keys, its bcrypt hashes, its certificate and key),
// and refuses an address other than loopback (127.0.0.0/8, ::1,
// localhost) unless the file sets TLS or basic auth: a server that lets
// anyone reach it reload the rules or change a watchlist, or read what
// it sees, is refused rather than started. The error is a *conferr.Error
// naming the key and the file.
func (w Web) Check(listen string) error {
	secured := false
	if w.ConfigFile != "" {
		if err := web.Validate(w.ConfigFile); err != nil {
			return invalid("web.config-file", fmt.Sprintf("%s: %v", w.ConfigFile, err))
		}
		c, err := readWeb(w.ConfigFile)
		if err != nil {
			return invalid("web.config-file", fmt.Sprintf("%s: %v", w.ConfigFile, err))
		}
		secured = c.TLSConfig.IsEnabled() || len(c.Users) > 0
	}
	if secured || Loopback(listen) {
		return nil
	}
	why := "no web config file (web.config-file, --web.config.file) sets TLS or basic auth"
	if w.ConfigFile != "" {
		why = fmt.Sprintf("web config file %s (web.config-file, --web.config.file) sets neither TLS (tls_server_config) nor basic auth (basic_auth_users)", w.ConfigFile)
	}
	return invalid("listen", fmt.Sprintf("%q is reachable beyond this host, and %s: give one that does, or listen on 127.0.0.1", listen, why))
}

// Scheme is the server's URL scheme: https when the web config file
// sets TLS, else http.
func (w Web) Scheme() string {
	if w.ConfigFile != "" {
		if c, err := readWeb(w.ConfigFile); err == nil && c.TLSConfig.IsEnabled() {
			return "https"
		}
	}
	return "http"
}

// readWeb decodes a web config file as exporter-toolkit does (strictly;
// web.Validate checks the rest).
func readWeb(path string) (*web.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c web.Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// Loopback reports whether host:port listens on loopback only: an
// address of 127.0.0.0/8 or ::1 (IPv4-mapped too), or localhost. No host
// (":9100") is every address; another name may resolve to any.
func Loopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}
