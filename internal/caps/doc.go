// Package caps narrows a process's Linux capabilities to the few it still
// needs, on every thread.
//
// Capabilities are a thread's in Linux, and a Go process has many
// threads: a capset(2) on one leaves the others as they were. So every
// change goes through syscall.AllThreadsSyscall, which runs it on each
// thread, as Go's own setuid does. That is not possible in a cgo build
// (libpcap's, -tags pcap): there the calls return ErrAllThreads and
// change nothing.
//
// Elsewhere than Linux the package does nothing.
package caps
