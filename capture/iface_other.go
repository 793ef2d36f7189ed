//go:build !linux

package capture

import (
	"fmt"
	"net"
)

// ifaceWatch asks after a live source's interface by name (iface_linux.go
// says why); off Linux there are no network namespaces to keep.
type ifaceWatch struct{ name string }

func newIfaceWatch(name string) (*ifaceWatch, error) { return &ifaceWatch{name: name}, nil }

func (w *ifaceWatch) close() {}

// state says how the interface named w.name is for a source on index.
func (w *ifaceWatch) state(index int) IfaceState {
	now, up, err := w.lookup()
	switch {
	case err != nil || now != index:
		return IfaceGone
	case !up:
		return IfaceDown
	}
	return IfaceUp
}

func (w *ifaceWatch) lookup() (index int, up bool, err error) {
	ifi, err := net.InterfaceByName(w.name)
	if err != nil {
		return 0, false, fmt.Errorf("interface %q: %w", w.name, err)
	}
	return ifi.Index, ifi.Flags&net.FlagUp != 0, nil
}

func (w *ifaceWatch) do(f func() error) error { return f() }
