package lister

import "github.com/steadywatch/steadywatch/fallback"

// Query is fallback.Query, re-exported for users of this package.
type Query = fallback.Query

// MostRecent is a list at the most recent resourceVersion (resourceVersion
// unset; a consistent read). Add .WithLimit(n) to page.
func MostRecent() Query { return fallback.MostRecentQuery() }

// Any is a list at any resourceVersion (resourceVersion "0"), possibly older
// than one the caller has seen. Cheapest.
func Any() Query { return fallback.AnyQuery() }

// NotOlderThan is a list at rv or newer.
func NotOlderThan(rv string) Query { return fallback.NotOlderThanQuery(rv) }

// Exact is a list at exactly rv, or an ErrExactUnavailable error.
func Exact(rv string) Query { return fallback.ExactQuery(rv) }
