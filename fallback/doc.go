// Package fallback is the KEP-2523 logic of steadywatch, with no I/O: the four
// list semantics and their validation against the seeds' table, the mapping
// to and from wire ListOptions, the classification of apiserver errors, and
// the decision table that says what to do when a server answers in a way
// that needs a fallback. Every decision the SDK takes lives in table.go, one
// row per rule, each citing the seed it implements.
//
// It is not a client: package lister executes what this package decides.
package fallback
