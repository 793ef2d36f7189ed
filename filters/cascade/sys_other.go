//go:build !linux

package cascade

import (
	"fmt"
	"os"
	"runtime"
)

func directSupported() error {
	return fmt.Errorf("uncached reads (O_DIRECT) on %s: %w", runtime.GOOS, ErrNotSupported)
}

func openDirect(string) (*os.File, error) { return nil, directSupported() }

func dropCache(*os.File) {}

func alignedBuf(n int) []byte { return make([]byte, n) }

func freeBuf([]byte) {}
