package p

import "testing"

func init()              { panic("init boom") }
func TestP(t *testing.T) {}
