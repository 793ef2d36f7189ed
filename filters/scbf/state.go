package scbf

import "fmt"

// State is how Open found a file.
type State uint8

// The states of a file (see the package doc, "Crash consistency").
const (
	// Clean: flushed after its last operation.
	Clean State = iota + 1
	// Consistent: written after its last flush by a writer that stopped
	// on this boot; the file holds its operations 1..Seq exactly.
	Consistent
	// Rebuild: written after its last flush, and the machine may have
	// restarted since; the file cannot be trusted.
	Rebuild
)

func (s State) String() string {
	switch s {
	case Clean:
		return "clean"
	case Consistent:
		return "consistent"
	case Rebuild:
		return "rebuild"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// OpenState is what Open found.
type OpenState struct {
	State State
	// Seq: the file holds operations 1..Seq (Clean, Consistent); for
	// Rebuild, the last operation flushed.
	Seq uint64
	// Flushed is the seq of the last flush.
	Flushed uint64
	// Undone names the operation cut short that Open undid ("add",
	// "remove"), if any: operation Seq+1.
	Undone string
	// BootChanged: for Rebuild, the boot id differs (false: this system
	// has none to compare).
	BootChanged bool
}

// String is the message a caller logs.
func (s OpenState) String() string {
	switch s.State {
	case Clean:
		return fmt.Sprintf("clean as of operation %d", s.Seq)
	case Consistent:
		m := fmt.Sprintf("consistent as of operation %d: its writer stopped %d operations after its last flush, without flushing, on this boot (the kernel kept its writes)", s.Seq, s.Seq-s.Flushed)
		if s.Undone != "" {
			m += fmt.Sprintf("; the %s it was running (operation %d) was undone", s.Undone, s.Seq+1)
		}
		return m + "; replay what came after"
	case Rebuild:
		why := "the machine has restarted since (its boot id changed)"
		if !s.BootChanged {
			why = "this system has no boot id to tell whether the machine restarted since"
		}
		return fmt.Sprintf("must be rebuilt: written after its last flush (operation %d) and %s, so those writes may be partly on disk", s.Seq, why)
	}
	return s.State.String()
}
