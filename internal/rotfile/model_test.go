package rotfile

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// model is the rotated files as the package doc says they are: files[0]
// is path, files[i] path.i; the lines go one at a time.
type model struct {
	o      Options
	files  []string
	ids    []int       // which file each is, as a mark names it
	starts []time.Time // of files[0] only, the rest unused
	nextID int
}

func (m *model) rotate(now time.Time) {
	m.nextID++
	m.files = append([]string{""}, m.files...)
	m.ids = append([]int{m.nextID}, m.ids...)
	if len(m.files) > m.o.MaxFiles+1 {
		m.files, m.ids = m.files[:m.o.MaxFiles+1], m.ids[:m.o.MaxFiles+1]
	}
	m.starts[0] = now
}

func (m *model) write(now time.Time, lines []string) {
	for _, l := range lines {
		if m.files[0] == "" {
			m.starts[0] = now
		} else if (m.o.MaxAge > 0 && now.Sub(m.starts[0]) >= m.o.MaxAge) ||
			(m.o.MaxSize > 0 && int64(len(m.files[0])+len(l)) > m.o.MaxSize) {
			m.rotate(now)
		}
		m.files[0] += l
	}
}

// checkModel runs the operations ops spells against a File and the model
// and fails where the files on disk are not the model's. Byte by byte:
// the options first (max size, max age in minutes, max files), then
// operations: write some lines, move the clock, take a mark, rewind to
// a mark taken, reopen.
func checkModel(t *testing.T, ops []byte) {
	next := func() int {
		if len(ops) == 0 {
			return 0
		}
		b := ops[0]
		ops = ops[1:]
		return int(b)
	}
	o := Options{MaxSize: int64(next() % 64), MaxAge: time.Duration(next()%8) * time.Minute, MaxFiles: 1 + next()%4}
	c := newClock()
	o.now = c.now
	path := filepath.Join(t.TempDir(), "log")
	w, _, err := Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { w.Close() }()
	m := &model{o: o.withDefaults(), files: []string{""}, ids: []int{0}, starts: []time.Time{c.t}}
	type taken struct {
		mark Mark
		id   int
		off  int
	}
	var marks []taken
	line := 0
	for step := 0; len(ops) > 0; step++ {
		switch op := next() % 5; op {
		case 0:
			var lines []string
			for range 1 + next()%4 {
				head := fmt.Sprintf("%d", line)
				line++
				lines = append(lines, head+strings.Repeat("x", next()%40)+"\n")
			}
			s := strings.Join(lines, "")
			if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
				t.Fatalf("step %d: write %q: %d, %v", step, s, n, err)
			}
			m.write(c.t, lines)
		case 1:
			c.t = c.t.Add(time.Duration(next()%10) * time.Minute)
		case 2:
			if !identified {
				continue
			}
			mk, err := w.Mark()
			if err != nil {
				t.Fatalf("step %d: mark: %v", step, err)
			}
			marks = append(marks, taken{mk, m.ids[0], len(m.files[0])})
		case 3:
			if len(marks) == 0 {
				continue
			}
			k := next() % len(marks)
			tk := marks[k]
			// The marks taken after it are of a log that is no more.
			marks = marks[:k+1]
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			_, err := Rewind(path, o, tk.mark)
			at := -1
			for i, id := range m.ids {
				if id == tk.id {
					at = i
				}
			}
			switch {
			case at < 0 && !errors.Is(err, ErrMarkGone):
				t.Fatalf("step %d: rewind to a file rotated away: %v", step, err)
			case at >= 0 && len(m.files[at]) < tk.off:
				// A rewind to an earlier mark cut the file below a
				// later one: refused.
				if err == nil || errors.Is(err, ErrMarkGone) {
					t.Fatalf("step %d: rewind past the file's end: %v", step, err)
				}
			case at >= 0 && err != nil:
				t.Fatalf("step %d: rewind: %v", step, err)
			case at >= 0:
				m.files = append([]string{m.files[at][:tk.off]}, m.files[at+1:]...)
				m.ids = append([]int{m.ids[at]}, m.ids[at+1:]...)
			}
			if w, _, err = Open(path, o); err != nil {
				t.Fatal(err)
			}
			m.starts[0] = c.t // no birth time that the fake clock knows
		case 4:
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if w, _, err = Open(path, o); err != nil {
				t.Fatal(err)
			}
			m.starts[0] = c.t
		}
		if got := files(t, path, m.o.MaxFiles); !equal(got, m.files) {
			t.Fatalf("step %d (options %+v): files %q, want %q", step, o, got, m.files)
		}
	}
}

// TestModel runs random operations against the model.
func TestModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 100 {
		ops := make([]byte, 10+r.IntN(200))
		for j := range ops {
			ops[j] = byte(r.Uint32())
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkModel(t, ops) })
	}
}

func FuzzModel(f *testing.F) {
	f.Add([]byte{20, 3, 2, 0, 3, 10, 20, 30, 2, 0, 2, 5, 5, 3, 0, 1, 7, 0, 1, 1})
	f.Fuzz(checkModel)
}
