// Package headless is tests' headless Chromium: it loads a page from a
// file, as a reader's browser would, and returns the DOM after its
// scripts ran, what its console said, and a screenshot.
package headless

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/internal/testutil/testgate"
)

// Browser is a Chromium to load pages with.
type Browser struct {
	path    string
	profile string
}

// New finds Chromium, skipping the test without it (failing it under CI:
// testgate.Tool).
func New(tb testing.TB) *Browser {
	tb.Helper()
	path := testgate.Tool(tb, "chromium", "apt-get install chromium; scripts/install-deps.sh test installs it")
	return &Browser{path: path, profile: tb.TempDir()}
}

// run runs Chromium headless on the file with args and returns its
// standard output and error.
func (b *Browser) run(tb testing.TB, file string, args ...string) (stdout, stderr []byte) {
	tb.Helper()
	abs, err := filepath.Abs(file)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	all := append([]string{"--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
		"--no-first-run", "--user-data-dir=" + b.profile, "--enable-logging=stderr", "--v=0"}, args...)
	cmd := exec.CommandContext(ctx, b.path, append(all, "file://"+abs)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		tb.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	return out.Bytes(), errb.Bytes()
}

// DOM loads file and returns the document as it is once loaded (its
// scripts run) and the console's messages.
func (b *Browser) DOM(tb testing.TB, file string) (dom string, console []string) {
	tb.Helper()
	out, errb := b.run(tb, file, "--dump-dom")
	return string(out), Console(errb)
}

// Screenshot loads file in a window of w by h CSS pixels and returns
// what it shows, and the console's messages.
func (b *Browser) Screenshot(tb testing.TB, file string, w, h int) (image.Image, []string) {
	tb.Helper()
	shot := filepath.Join(tb.TempDir(), "shot.png")
	_, errb := b.run(tb, file, "--screenshot="+shot, "--window-size="+strconv.Itoa(w)+","+strconv.Itoa(h),
		"--force-device-scale-factor=1")
	f, err := os.Open(shot)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		tb.Fatal(err)
	}
	return img, Console(errb)
}

// Console picks the page's console messages (errors, warnings, logs and
// uncaught exceptions) out of Chromium's log.
func Console(log []byte) []string {
	var msgs []string
	for l := range strings.SplitSeq(string(log), "\n") {
		if strings.Contains(l, ":CONSOLE") || strings.Contains(l, "Uncaught") {
			msgs = append(msgs, l)
		}
	}
	return msgs
}

// Variance is the variance of the luminance of img's pixels in r: 0 for
// an area of one colour.
func Variance(img image.Image, r image.Rectangle) float64 {
	r = r.Intersect(img.Bounds())
	var n, sum, sq float64
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			l := (0.299*float64(cr) + 0.587*float64(cg) + 0.114*float64(cb)) / 257
			n++
			sum += l
			sq += l * l
		}
	}
	if n == 0 {
		return 0
	}
	m := sum / n
	return sq/n - m*m
}
