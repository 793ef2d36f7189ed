//go:build !linux

package ifacewatch

import (
	"fmt"
	"net"
)

// Watch asks after a live source's interface by name (watch_linux.go
// says why); off Linux there are no network namespaces to keep.
type Watch struct {
	Name string // the interface's
}

// Open opens the watch of name.
func Open(name string) (*Watch, error) { return &Watch{Name: name}, nil }

// Close does nothing: there is nothing to release.
func (w *Watch) Close() {}

// On says how the interface named w.Name is for a source on index: there
// is false if there is none or it has another index, up whether it is up.
func (w *Watch) On(index int) (there, up bool) {
	now, up, err := w.Lookup()
	return err == nil && now == index, up
}

// Lookup returns the index of the interface named w.Name and whether it
// is up.
func (w *Watch) Lookup() (index int, up bool, err error) {
	ifi, err := net.InterfaceByName(w.Name)
	if err != nil {
		return 0, false, fmt.Errorf("interface %q: %w", w.Name, err)
	}
	return ifi.Index, ifi.Flags&net.FlagUp != 0, nil
}

// Do runs f: there is no namespace to enter.
func (w *Watch) Do(f func() error) error { return f() }
