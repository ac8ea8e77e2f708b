package fallback_test

import (
	"errors"
	"fmt"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/lister"
)

// A query is validated against the API Concepts list table before anything is sent.
func ExampleQuery_Validate() {
	err := lister.Exact("0").Validate()
	var iq *fallback.InvalidQueryError
	fmt.Println(errors.Is(err, fallback.ErrInvalidQuery), errors.As(err, &iq), iq.Rule)
	fmt.Println(lister.NotOlderThan("42").WithLimit(500).Validate())
	// Output:
	// true true exact-with-zero
	// <nil>
}
