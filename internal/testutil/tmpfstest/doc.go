// Package tmpfstest gives tests a small file system of their own to fill:
// a tmpfs mounted on a new directory, unmounted when the test ends.
//
// New skips the test where it cannot mount one (not root, or no
// CAP_SYS_ADMIN); anything else that fails is a test failure.
//
// The package is Linux's; elsewhere it is empty.
package tmpfstest
