package period

import "testing"

func TestOf(t *testing.T) {
	for _, c := range []struct{ t, n, want int64 }{
		{0, 10, 0}, {9, 10, 0}, {10, 10, 1}, {-1, 10, -1}, {-10, 10, -1}, {-11, 10, -2},
	} {
		if got := Of(c.t, c.n); got != c.want {
			t.Errorf("Of(%d, %d) = %d, want %d", c.t, c.n, got, c.want)
		}
	}
}
