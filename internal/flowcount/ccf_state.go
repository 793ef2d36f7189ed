package flowcount

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/flowmon/flowmon/filters/ccf"
)

// A counting cuckoo filter's MarshalBinary keeps its cells, not two
// things a restored window needs to go on exactly as the original:
//
//   - the state of the xorshift generator that picks the resident a full
//     bucket evicts (ccf.Filter.rng). UnmarshalBinary restarts it from the
//     seed, so after the first cuckoo kick a restored filter would place
//     flows in other slots than the original, and near capacity refuse
//     other flows (Dropped) or match other fingerprints.
//   - the options it was built from (Capacity, FPRate, Load), which the
//     encoding reduces to the shape; NewLike carries them to every later
//     window, and Options reports them.
//
// filters/ccf is not this package's to change, so the two fields are read
// and written here through reflection. This is a stopgap: the right home
// is a state method on ccf.Filter (AppendState/RestoreState beside
// MarshalBinary). ccfField checks each field's name and type, so if ccf
// renames or retypes them, AppendState and RestoreState return an error
// (and TestRestoreContinues fails) instead of misbehaving.

// ccfField returns f's unexported field name as a settable Value, after
// checking that it has type want.
func ccfField(f *ccf.Filter, name string, want reflect.Type) (reflect.Value, error) {
	v := reflect.ValueOf(f).Elem().FieldByName(name)
	if !v.IsValid() || v.Type() != want {
		return reflect.Value{}, fmt.Errorf("ccf.Filter has no field %s of type %s: filters/ccf changed, see internal/flowcount/ccf_state.go", name, want)
	}
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem(), nil
}

var (
	rngType  = reflect.TypeFor[uint64]()
	optsType = reflect.TypeFor[ccf.Options]()
)

// ccfRNG returns f's kick generator state.
func ccfRNG(f *ccf.Filter) (uint64, error) {
	v, err := ccfField(f, "rng", rngType)
	if err != nil {
		return 0, err
	}
	return v.Uint(), nil
}

// setCCFState gives f the kick generator state rng and the options of
// like (a filter of the same shape built from the configuration).
func setCCFState(f *ccf.Filter, rng uint64, like *ccf.Filter) error {
	r, err := ccfField(f, "rng", rngType)
	if err != nil {
		return err
	}
	dst, err := ccfField(f, "opts", optsType)
	if err != nil {
		return err
	}
	src, err := ccfField(like, "opts", optsType)
	if err != nil {
		return err
	}
	if rng == 0 {
		return fmt.Errorf("kick generator state 0 (a xorshift state is never 0)")
	}
	r.SetUint(rng)
	dst.Set(src)
	return nil
}
