package a

import "testing"

func TestPass(t *testing.T) { t.Log("pass log") }
func TestFail(t *testing.T) {
	t.Log("before")
	t.Run("ok", func(t *testing.T) { t.Log("sub ok log") })
	t.Run("bad", func(t *testing.T) { t.Error("sub bad") })
}
func TestSkip(t *testing.T) { t.Skip("why") }
func TestSubSkip(t *testing.T) {
	t.Run("s", func(t *testing.T) { t.Skip("sub skipped") })
	t.Run("p", func(t *testing.T) { t.Parallel() })
}
