// Package vocab is the vocabulary of the SDK's decision table
// (internal/engine): the Actions it takes, the Classes of answers it decides
// on, the wire forms of a list query, the comparison of resource versions,
// the rules of the API Concepts list table a query is validated against, and
// the public sources they cite. It imports nothing of the SDK, so the public
// packages can report these values (fallback.Event, lister.Record) without
// exporting them.
package vocab
