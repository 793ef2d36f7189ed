package rotfile

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// fileID is a file's identity, which a rename keeps: its device and
// inode, and its birth time (ns since the epoch; 0 where the filesystem
// keeps none), which tells a file from a later one given the inode a
// deleted file freed.
type fileID struct {
	dev, ino uint64
	born     int64
}

// fileStat is what the package asks of a file.
type fileStat struct {
	id      fileID
	size    int64
	regular bool
}

const statxMask = unix.STATX_TYPE | unix.STATX_INO | unix.STATX_SIZE | unix.STATX_BTIME

func fromStatx(st *unix.Statx_t) fileStat {
	s := fileStat{id: fileID{dev: unix.Mkdev(st.Dev_major, st.Dev_minor), ino: st.Ino},
		size: int64(st.Size), regular: st.Mode&unix.S_IFMT == unix.S_IFREG}
	if st.Mask&unix.STATX_BTIME != 0 {
		s.id.born = time.Unix(st.Btime.Sec, int64(st.Btime.Nsec)).UnixNano()
	}
	return s
}

// statFile stats an open file.
func statFile(f *os.File) (fileStat, error) {
	var st unix.Statx_t
	if err := unix.Statx(int(f.Fd()), "", unix.AT_EMPTY_PATH, statxMask, &st); err != nil {
		return fileStat{}, &os.PathError{Op: "statx", Path: f.Name(), Err: err}
	}
	return fromStatx(&st), nil
}

// statPath stats name, not following a symbolic link.
func statPath(name string) (fileStat, error) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, name, unix.AT_SYMLINK_NOFOLLOW, statxMask, &st); err != nil {
		return fileStat{}, &os.PathError{Op: "statx", Path: name, Err: err}
	}
	return fromStatx(&st), nil
}

const identified = true
