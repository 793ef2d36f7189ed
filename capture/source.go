package capture

import (
	"errors"
	"io"
	"time"
)

// Source is where packets come from: a capture file, several in turn, or a
// live interface (LiveSource says what a live source provides beyond it). The engine reads every source the same way and never
// opens files or sockets itself.
//
// Next decodes the next flow packet into p, in place (p.Payload points
// into the source's buffer until the next call); frames that do not
// decode are counted in Stats by reason and skipped. It returns io.EOF
// at the end, and a *ReadError when the input is damaged, after every
// packet before the damage. Stats returns the source's counters, which
// change as Next is called. A Source is used by one goroutine.
type Source interface {
	Next(p *Packet) error
	Stats() *Stats
	Close() error
}

// DecodeOptionsSetter is a Source that decodes frames itself, with the
// options it is given (DefaultDecodeOptions until then): the file
// readers, and every LiveSource (the eBPF source decodes the frames its
// program hands up whole).
type DecodeOptionsSetter interface {
	SetDecodeOptions(DecodeOptions)
}

// FrameTaker is offered each frame a file source reads, after its
// filter and before it is decoded: a frame it takes (true) is counted as
// read (Stats.Taken) and not decoded; an error ends the reading with it.
// The kernel's flow state takes the frames whose flows it keeps.
type FrameTaker interface {
	TakeFrame(f *Frame) (bool, error)
}

// DatagramTaker is a FrameTaker that is also offered the datagrams
// reassembled from the fragments it left, when they came in no tunnel
// (ip from its IP header on, t the last fragment's time): a flow whose
// packets are in part fragments is then kept in one place, the taker's.
// A datagram it takes is counted in Stats.Taken, and handed on no
// further; an error ends the reading with it.
type DatagramTaker interface {
	TakeDatagram(ip []byte, t time.Time) (bool, error)
}

// FrameTakerSetter is a Source that offers its frames to a FrameTaker: the
// file readers.
type FrameTakerSetter interface {
	SetFrameTaker(FrameTaker)
}

// Progresser is a Source that knows how far through its input it is:
// bytes read, and the input's size (-1 when unknown, as for stdin).
type Progresser interface {
	Progress() (read, total int64)
}

var (
	_ Source     = (*Reader)(nil)
	_ Source     = (*Files)(nil)
	_ Progresser = (*Files)(nil)

	_ DecodeOptionsSetter = (*Reader)(nil)
	_ DecodeOptionsSetter = (*Files)(nil)
	_ DefragSource        = (*Reader)(nil)
	_ DefragSource        = (*Files)(nil)
	_ FrameTakerSetter    = (*Reader)(nil)
	_ FrameTakerSetter    = (*Files)(nil)
)

// Files reads capture files one after another as one Source. Its Stats
// add up the files read so far.
type Files struct {
	names []string
	next  int            // index of the file after cur
	cur   *Reader        // nil once every file is read
	done  Stats          // files already read
	sum   Stats          // done + cur's, what Stats returns
	dec   *DecodeOptions // compiled, every file's (nil: the defaults)
	// defrag is every file's: a datagram's fragments may span two
	// files of one capture cut in pieces.
	defrag Defragmenter
	filter *Filter // every file's
	taker  FrameTaker
}

// SetDecodeOptions has every file's packets from now on decoded with o,
// compiled once for all of them.
func (f *Files) SetDecodeOptions(o DecodeOptions) {
	f.dec = o.Compiled()
	if f.cur != nil {
		f.cur.dec = f.dec
	}
}

// OpenFiles opens the first of names (Open's rules: "-" is stdin, gzip is
// undone) and the others when their turn comes. An error opening the
// first is returned here; one opening a later file, from Next.
func OpenFiles(names ...string) (*Files, error) {
	if len(names) == 0 {
		return nil, errors.New("open capture: no file named")
	}
	r, err := Open(names[0])
	if err != nil {
		return nil, err
	}
	return &Files{names: names, next: 1, cur: r}, nil
}

// Next decodes the next packet of the current file, going on to the next
// file at its end.
func (f *Files) Next(p *Packet) error {
	for f.cur != nil {
		err := f.cur.Next(p)
		if !errors.Is(err, io.EOF) {
			return err
		}
		f.done.Add(f.cur.Stats())
		f.cur.Close()
		f.cur = nil
		if f.next < len(f.names) {
			r, err := Open(f.names[f.next])
			if err != nil {
				return err
			}
			if f.dec != nil {
				r.dec = f.dec
			}
			if f.defrag != nil {
				r.SetDefragmenter(f.defrag)
			}
			r.SetFilter(f.filter)
			r.SetFrameTaker(f.taker)
			f.cur = r
			f.next++
		}
	}
	return io.EOF
}

// SetFilter has every file's reader keep only the frames flt keeps.
func (f *Files) SetFilter(flt *Filter) {
	f.filter = flt
	if f.cur != nil {
		f.cur.SetFilter(flt)
	}
}

// SetFrameTaker has every file's reader offer its frames to t.
func (f *Files) SetFrameTaker(t FrameTaker) {
	f.taker = t
	if f.cur != nil {
		f.cur.SetFrameTaker(t)
	}
}

// SetDefragmenter has every file's reader hand its fragments to d.
func (f *Files) SetDefragmenter(d Defragmenter) {
	f.defrag = d
	if f.cur != nil {
		f.cur.SetDefragmenter(d)
	}
}

// Stats returns the counts of every file read so far.
func (f *Files) Stats() *Stats {
	f.sum = f.done
	if f.cur != nil {
		f.sum.Add(f.cur.Stats())
	}
	return &f.sum
}

// Progress reports how far through the current file the source is.
func (f *Files) Progress() (read, total int64) {
	if f.cur == nil {
		return 0, 0
	}
	return f.cur.Progress()
}

// Close closes the file being read.
func (f *Files) Close() error {
	if f.cur == nil {
		return nil
	}
	err := f.cur.Close()
	f.cur = nil
	return err
}
