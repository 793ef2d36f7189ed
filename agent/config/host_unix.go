//go:build unix

package config

import (
	"os"
	"slices"
	"syscall"
)

// writable reports whether a user (uid, in groups gids) may create files
// in the directory st describes, by its permission bits: root's too,
// since the agent drops CAP_DAC_OVERRIDE with the other capabilities it
// no longer needs once its sockets are open, and writes the snapshot, the
// flow log and its rotations after.
func writable(st os.FileInfo, uid int, gids []int) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return true // no owner to check against: leave it to the open
	}
	mode := st.Mode().Perm()
	switch {
	case int(sys.Uid) == uid:
		return mode&0o300 == 0o300
	case slices.Contains(gids, int(sys.Gid)):
		return mode&0o030 == 0o030
	}
	return mode&0o003 == 0o003
}
