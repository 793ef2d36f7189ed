package c

import "testing"

func TestOK(t *testing.T)    {}
func TestPanic(t *testing.T) { panic("boom") }
