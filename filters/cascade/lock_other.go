//go:build !unix

package cascade

import (
	"os"
	"path/filepath"
)

// lockDir only opens dir/LOCK here: there is no flock, so nothing stops
// two Filters opening one directory (the package doc says not to).
func lockDir(dir string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
}
