package headless

import (
	"image"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConsoleErrorsSeen: a page whose script throws is caught, so a
// test that finds no console message has looked.
func TestConsoleErrorsSeen(t *testing.T) {
	b := New(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.html")
	if err := os.WriteFile(bad, []byte(`<!DOCTYPE html><html><body><p id="x">a</p><script>console.error("seen"); nosuch();</script></body></html>`), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, console := b.DOM(t, bad)
	if !strings.Contains(dom, `id="x"`) {
		t.Errorf("the DOM lacks the page's element:\n%s", dom)
	}
	if len(console) < 2 {
		t.Errorf("the console's error and the exception not seen: %q", console)
	}
	img, _ := b.Screenshot(t, bad, 400, 300)
	if v := Variance(img, image.Rect(0, 0, 400, 300)); v == 0 {
		t.Errorf("the screenshot of a page with text is blank")
	}
	if v := Variance(img, image.Rect(200, 200, 400, 300)); v > 1e-6 {
		t.Errorf("an empty area has variance %v", v)
	}
}
