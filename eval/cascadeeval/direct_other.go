//go:build !linux

package cascadeeval

import (
	"fmt"
	"os"
	"runtime"

	"github.com/flowmon/flowmon/filters/cascade"
)

func openDirect(string) (*os.File, error) {
	return nil, fmt.Errorf("O_DIRECT on %s: %w", runtime.GOOS, cascade.ErrNotSupported)
}

func alignedBuf(n int) ([]byte, error) { return make([]byte, n), nil }

func freeBuf([]byte) {}

func openDirectRead(path string) (*os.File, error) { return openDirect(path) }
