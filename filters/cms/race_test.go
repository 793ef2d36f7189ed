//go:build race

package cms

// raceEnabled: the race detector makes every atomic operation about a
// hundred times slower, so the 10M-key test adds fewer keys under it.
const raceEnabled = true
