package d

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) { fmt.Println("main out"); os.Exit(3) }
func TestA(t *testing.T)    {}
