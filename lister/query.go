package lister

import "github.com/steadywatch/steadywatch/fallback"

// MostRecent is a list at the most recent resourceVersion (resourceVersion
// unset; a consistent read). Add .WithLimit(n) to page.
func MostRecent() fallback.Query { return fallback.Query{Semantic: fallback.MostRecent} }

// Any is a list at any resourceVersion (resourceVersion "0"), possibly older
// than one the caller has seen. Cheapest.
func Any() fallback.Query { return fallback.Query{Semantic: fallback.Any} }

// NotOlderThan is a list at rv or newer.
func NotOlderThan(rv string) fallback.Query {
	return fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: rv}
}

// Exact is a list at exactly rv, or an ErrExactUnavailable error.
func Exact(rv string) fallback.Query {
	return fallback.Query{Semantic: fallback.Exact, ResourceVersion: rv}
}
