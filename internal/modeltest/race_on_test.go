//go:build race

package modeltest

// raceEnabled: under the race detector every history costs several times
// the CPU, so the default run plays fewer (defaultHistories).
const raceEnabled = true
