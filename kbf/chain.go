package kbf

import "fmt"

// Chain is a growing kBF (Section III-G): when the newest filter holds its
// p-capacity of keys, a new filter of the same size and seed is added, so
// each filter keeps its false-positive rate at p. Queries look at every
// filter. A Chain is not safe for concurrent use.
type Chain struct {
	opt     Options
	filters []*Filter
}

// NewChain starts a chain with one filter built from o.
func NewChain(o Options) (*Chain, error) {
	f, err := New(o)
	if err != nil {
		return nil, err
	}
	return &Chain{opt: f.opt, filters: []*Filter{f}}, nil
}

// Filters returns the chain's filters, oldest first.
func (c *Chain) Filters() []*Filter { return c.filters }

// MemoryBytes is the total size of the cell arrays.
func (c *Chain) MemoryBytes() int {
	n := 0
	for _, f := range c.filters {
		n += f.MemoryBytes()
	}
	return n
}

// Insert adds key to the newest filter, first growing the chain when that
// filter has reached its p-capacity. Growing allocates; nothing else does.
func (c *Chain) Insert(key uint64, v uint32) error {
	last := c.filters[len(c.filters)-1]
	if int(last.st.Keys) >= last.capacity {
		f, err := New(c.opt)
		if err != nil {
			return fmt.Errorf("growing chain: %w", err)
		}
		c.filters = append(c.filters, f)
		last = f
	}
	return last.Insert(key, v)
}

// Query asks every filter. One filter finding the key gives its value;
// filters finding different values, or a filter answering Unknown where no
// other finds the key, give Unknown.
func (c *Chain) Query(key uint64) (v uint32, r Result) {
	r = Absent
	unknown := false
	for _, f := range c.filters {
		fv, fr := f.Query(key)
		switch fr {
		case Found:
			if r == Found && fv != v {
				return 0, Unknown
			}
			v, r = fv, Found
		case Unknown:
			unknown = true
		}
	}
	if r != Found && unknown {
		return 0, Unknown
	}
	return v, r
}

// Delete removes key from the newest filter that holds it with value v.
func (c *Chain) Delete(key uint64, v uint32) error {
	var err error
	for i := len(c.filters) - 1; i >= 0; i-- {
		if err = c.filters[i].Delete(key, v); err == nil {
			return nil
		}
	}
	return err
}

// Update changes key's value in the newest filter that holds it with old.
func (c *Chain) Update(key uint64, old, new uint32) error {
	var err error
	for i := len(c.filters) - 1; i >= 0; i-- {
		if err = c.filters[i].Update(key, old, new); err == nil {
			return nil
		}
	}
	return err
}

// Compact merges the filters while the merged key count stays within one
// filter's p-capacity, oldest first (Section III-G). It returns how many
// filters were removed.
func (c *Chain) Compact() (int, error) {
	removed := 0
	out := c.filters[:1]
	for _, f := range c.filters[1:] {
		last := out[len(out)-1]
		if int(last.st.Keys+f.st.Keys) > last.capacity {
			out = append(out, f)
			continue
		}
		m, err := Merge(last, f)
		if err != nil {
			return removed, fmt.Errorf("compacting chain: %w", err)
		}
		out[len(out)-1] = m
		removed++
	}
	c.filters = out
	return removed, nil
}

// Merge returns the filter of the union of the keys of a and b (Section
// III-G): cells XORed, counters added. Both must have the same shape, codes
// and seed (else ErrIncompatible). A counter sum at or above the maximum
// saturates (sticky). Every key of a and b is still consistent with its
// cells, but each cell now carries both loads, so fewer keys decode and the
// false-positive rate is that of the summed load.
func Merge(a, b *Filter) (*Filter, error) {
	if a.opt != b.opt || a.m != b.m || a.k != b.k {
		return nil, fmt.Errorf("merging filters: %w: options %+v and %+v", ErrIncompatible, a.opt, b.opt)
	}
	out, err := New(a.opt)
	if err != nil {
		return nil, err
	}
	for i := 0; i < a.m; i++ {
		wa, wb := a.cell(i), b.cell(i)
		ca, cb := wa&a.ctrMask, wb&a.ctrMask
		c := ca + cb
		if ca == a.ctrMax || cb == a.ctrMax || c >= a.ctrMax {
			c = a.ctrMax
			out.st.Saturated++
		}
		out.setCell(i, (wa^wb)&^a.ctrMask|c)
	}
	out.st.Keys = a.st.Keys + b.st.Keys
	out.st.Inserts = a.st.Inserts + b.st.Inserts
	out.st.Deletes = a.st.Deletes + b.st.Deletes
	return out, nil
}
