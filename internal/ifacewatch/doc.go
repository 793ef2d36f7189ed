// Package ifacewatch asks after a live capture source's interface by name:
// whether it is there with the index the source is on, and whether it is
// up, and runs a reopen in the network namespace the source was opened in.
// The live sources (capture/afpacket, capture/pcaplive, bpf/source) each
// keep one Watch.
//
// On Linux a Watch holds a socket in the source's network namespace (the
// ioctls answer for the socket's namespace, not the calling thread's) and
// that namespace's file, entered for a reopen when the thread is in
// another one; elsewhere it asks the net package and keeps no namespace.
package ifacewatch
