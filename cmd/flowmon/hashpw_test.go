package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/flowmon/flowmon/agent/config"
)

// TestHashPassword: the hash printed checks against the password, and a
// web config holding it is one the agent accepts.
func TestHashPassword(t *testing.T) {
	old := stdin
	defer func() { stdin = old }()
	stdin = strings.NewReader("s3cret pass\n")
	var out, errb bytes.Buffer
	if code := run([]string{"hash-password", "--cost", "4"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	hash := strings.TrimSpace(out.String())
	if err := bcrypt.CompareHashAndPassword([]byte(hash), []byte("s3cret pass")); err != nil {
		t.Fatalf("hash %q does not check against the password: %v", hash, err)
	}
	web := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(web, []byte("basic_auth_users:\n  prometheus: "+hash+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := (config.Web{ConfigFile: web}).Check("0.0.0.0:9100"); err != nil {
		t.Errorf("a web config with the hash: %v", err)
	}
	stdin = strings.NewReader("")
	if code := run([]string{"hash-password"}, &out, &errb); code != 2 {
		t.Errorf("no password: exit %d, want 2", code)
	}
}
