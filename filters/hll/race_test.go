//go:build race

package hll

// raceEnabled: the race detector makes every atomic operation about a
// hundred times slower, so the long tests add fewer items under it.
const raceEnabled = true
