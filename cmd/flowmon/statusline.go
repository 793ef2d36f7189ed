package main

import (
	"io"
	"sync"
)

// clearLine returns the cursor to the line's start and erases the line.
const clearLine = "\r\033[K"

// statusLine is the line a command redraws at the bottom of a terminal
// (replay's progress bar, run's status). Whatever else is written to
// that terminal, an alert on stdout or a log line on stderr, goes through
// around, which erases the line first, so the text starts at the left
// margin instead of after the bar; the next redraw puts the bar back
// below it.
type statusLine struct {
	mu    sync.Mutex
	term  io.Writer
	shown bool // the line is on the terminal now
}

// newStatusLine draws on term, when it is a terminal; nil otherwise.
func newStatusLine(term io.Writer) *statusLine {
	if !isTerminal(term) {
		return nil
	}
	return &statusLine{term: term}
}

// draw replaces the line with s.
func (l *statusLine) draw(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.term, clearLine+s) // a line the terminal refuses is no error of the run
	l.shown = true
}

// clear erases the line, for good until the next draw.
func (l *statusLine) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.term, clearLine)
	l.shown = false
}

// around returns w made to erase the line before each write, when w is a
// terminal (a file or a pipe never saw the line); w itself otherwise, or
// when l is nil.
func (l *statusLine) around(w io.Writer) io.Writer {
	if l == nil || !isTerminal(w) {
		return w
	}
	return &lineWriter{l: l, w: w}
}

// lineWriter writes to w with the status line erased.
type lineWriter struct {
	l *statusLine
	w io.Writer
}

func (lw *lineWriter) Write(p []byte) (int, error) {
	lw.l.mu.Lock()
	defer lw.l.mu.Unlock()
	if lw.l.shown {
		_, _ = io.WriteString(lw.l.term, clearLine)
		lw.l.shown = false
	}
	return lw.w.Write(p)
}
