package scbf

// point is a place inside Add or Remove where a test can stop the
// process, to check that Open recovers from a crash there.
type point uint8

const (
	pointIntent       point = iota + 1 // the intent recorded, nothing changed
	pointResized                       // the image grown, the new sub-filter not written
	pointSubInit                       // the new sub-filter written, not counted
	pointGrown                         // after any growth, no counter changed
	pointHalf                          // half the counters changed
	pointBeforeCommit                  // everything changed but seq
)

// crashHook, set by tests, is called at each point.
var crashHook func(point)

func crashPoint(p point) {
	if crashHook != nil {
		crashHook(p)
	}
}
