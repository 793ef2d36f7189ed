// Package rotfile is a log of lines on disk that rotates: the agent's
// flow log and the alert file sink write through it.
//
// # The files
//
// Open appends to path, creating it. Before a Write that would take a
// non-empty path past Options.MaxSize bytes, or once path is older than
// Options.MaxAge, the files move up one: path.(N-1) becomes path.N, ...,
// path becomes path.1, and a new path is started; at most
// Options.MaxFiles rotated files are kept, so path.MaxFiles, the oldest,
// goes. The shift stops at the first number that is free, so a
// rotation that failed half way and is tried again overwrites nothing
// but the oldest file. Files numbered past MaxFiles (left from a larger
// setting) are not touched.
//
// A Write is a batch of whole lines. The lines that fit in path go there
// and the rest after a rotation, so no file passes MaxSize but one that
// holds a single line longer than it, alone.
//
// A file's age runs from when it was started: the time its first line
// was written, or for a file Open finds with lines in it, its birth time
// (statx(2)'s STATX_BTIME) where the filesystem keeps one (ext4, xfs,
// btrfs, tmpfs), so that a restart does not give an old file a new
// lease, else the time of the Open, so that a restart never rotates a
// file early on a time it cannot know.
//
// # Whole lines only
//
// Open cuts a last line without its newline, which only a crash in the
// middle of write(2) leaves. A Write that fails or is short (a full
// disk) truncates the file back to where it ended before the Write, so
// the file holds whole lines only, and reopens it at the next Write: the
// caller may write the lines again without doubling any. (The lines of a
// Write that spanned a rotation and went to the files before the
// failing one stay: Write's count says how many bytes those were.)
//
// # Crash consistency with a snapshot
//
// A process that saves its state beside the log (a snapshot of flows
// whose records are in it) takes a Mark when it saves: Mark syncs the
// file (and its directory, after a rotation) and says where the log ends,
// by the current file's identity (device, inode and birth time, which a
// rotation's rename keeps; the birth time tells a file from a later one
// given a deleted file's inode) and size. A restart that restores that older state calls
// Rewind before Open: the log is cut back to the mark, the files written
// after it deleted and the marked file renamed back to path, so that the
// log and the state agree again. A mark whose file has been rotated away
// is ErrMarkGone, and nothing changes. The identity is statx(2)'s, so
// Mark and Rewind are Linux's (ErrNotSupported elsewhere).
//
// A File is not safe for concurrent use.
package rotfile
