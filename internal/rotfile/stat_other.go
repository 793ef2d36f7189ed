//go:build !linux

package rotfile

import "os"

// fileID is a file's identity: none outside Linux, where Mark and Rewind
// are ErrNotSupported.
type fileID struct {
	dev, ino uint64
	born     int64
}

type fileStat struct {
	id      fileID
	size    int64
	regular bool
}

func statFile(f *os.File) (fileStat, error) {
	fi, err := f.Stat()
	if err != nil {
		return fileStat{}, err
	}
	return fileStat{size: fi.Size(), regular: fi.Mode().IsRegular()}, nil
}

func statPath(name string) (fileStat, error) {
	fi, err := os.Lstat(name)
	if err != nil {
		return fileStat{}, err
	}
	return fileStat{size: fi.Size(), regular: fi.Mode().IsRegular()}, nil
}

const identified = false
