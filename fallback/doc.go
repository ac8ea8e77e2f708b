// Package fallback is the public vocabulary of steadywatch's KEP-2523 logic,
// with no I/O: the four list semantics (Query, Semantic) and their validation
// against the Kubernetes API Concepts list table, the mapping to and from wire
// ListOptions, the comparison of resource versions, the classification of
// apiserver errors, the Policy that configures fallbacks, and the Actions,
// ReasonCode and Events that report them.
//
// The decision table itself (which action follows which answer) is internal
// to the SDK and executed by package lister; docs/rules.md shows it row by row
// with the public text each row implements (SourceKEP2523,
// SourceResourceVersions, SourceChunks).
//
// It is not a client: package lister executes what is decided.
package fallback
