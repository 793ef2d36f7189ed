package ccf

import "errors"

// The encoding (marshal.go) carries a filter's cells, which is all two
// agents comparing windows need. A filter that must go on exactly as
// another, as a window restored after a restart, also needs what the
// encoding leaves out: the state of the generator that picks which
// resident a full bucket evicts (without it, after the first kick the
// restored filter places flows in other slots, and near capacity refuses
// others), and the options the filter was built from, which the encoding
// reduces to its shape.

// KickState returns the state of f's eviction generator.
func (f *Filter) KickState() uint64 { return f.rng }

// Resume makes f, decoded from a filter's encoding, go on as that filter
// would: its eviction generator takes the state rng (that filter's
// KickState) and its options those of like, a filter built from the same
// options, whose shape f must have.
func (f *Filter) Resume(rng uint64, like *Filter) error {
	if rng == 0 {
		return errors.New("eviction generator state 0 (a xorshift state is never 0)")
	}
	if err := like.Compatible(f); err != nil {
		return err
	}
	f.rng, f.opts = rng, like.opts
	return nil
}
