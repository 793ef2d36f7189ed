package report

// heavy keeps the keys of a weighted stream with the largest weights in
// fixed memory: Space-Saving (Metwally, Agrawal and El Abbadi, "Efficient
// computation of frequent and top-k elements in data streams", ICDT
// 2005). It holds at most capacity keys; a new key when it is full takes
// the place of the lightest, inheriting its weight as its error. While no
// key has been replaced (Exact) every figure is the stream's; after, a
// key's weight is over its true weight by at most its Err, every key
// heavier than total/capacity is held, and the other figures (flows,
// packets or bytes beside the weight) count from when it was last taken
// in.
//
// Its keys are kept in a min-heap by weight, each entry knowing its place,
// so a weight that grows moves its entry down with no map write; the heap
// holds the weights beside the entries, so sifting reads no entry; the
// map and the entries are sized once.
type heavy[K comparable] struct {
	by       figure // what the weight is
	capacity int
	idx      map[K]*heavyEntry[K]
	entries  []heavyEntry[K] // the storage, filled in order
	heap     []heapSlot[K]
	replaced uint64 // keys that took another's place
}

type heapSlot[K comparable] struct {
	w uint64
	e *heavyEntry[K]
}

// figure names one of a Row's counts.
type figure uint8

const (
	byBytes figure = iota
	byPackets
)

type heavyEntry[K comparable] struct {
	key K
	Row
	pos int
}

// Row is one key's figures.
type Row struct {
	Flows, Packets, Bytes uint64
	// Err bounds how much the ordering figure is over the stream's (0 while
	// the table is exact).
	Err uint64
}

func (r Row) get(f figure) uint64 {
	if f == byPackets {
		return r.Packets
	}
	return r.Bytes
}

func newHeavy[K comparable](by figure, capacity int) *heavy[K] {
	return &heavy[K]{by: by, capacity: capacity, idx: make(map[K]*heavyEntry[K], capacity),
		entries: make([]heavyEntry[K], 0, capacity), heap: make([]heapSlot[K], 0, capacity)}
}

// add counts one flow of packets and bytes for k.
func (h *heavy[K]) add(k K, packets, bytes uint64) {
	e := h.idx[k]
	switch {
	case e != nil:
	case len(h.entries) < h.capacity:
		h.entries = append(h.entries, heavyEntry[K]{key: k, pos: len(h.heap)})
		e = &h.entries[len(h.entries)-1]
		h.heap = append(h.heap, heapSlot[K]{0, e})
		h.idx[k] = e
		h.up(e.pos)
	default:
		// Space-Saving: the lightest key's place, weight and error.
		e = h.heap[0].e
		delete(h.idx, e.key)
		w := e.get(h.by)
		e.key, e.Row = k, Row{Err: w}
		if h.by == byPackets {
			e.Packets = w
		} else {
			e.Bytes = w
		}
		h.idx[k] = e
		h.replaced++
	}
	e.Flows++
	e.Packets += packets
	e.Bytes += bytes
	h.heap[e.pos].w = e.get(h.by)
	h.down(e.pos)
}

func (h *heavy[K]) less(i, j int) bool { return h.heap[i].w < h.heap[j].w }

func (h *heavy[K]) swap(i, j int) {
	h.heap[i], h.heap[j] = h.heap[j], h.heap[i]
	h.heap[i].e.pos, h.heap[j].e.pos = i, j
}

func (h *heavy[K]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *heavy[K]) down(i int) {
	n := len(h.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && h.less(r, l) {
			j = r
		}
		if !h.less(j, i) {
			return
		}
		h.swap(i, j)
		i = j
	}
}
