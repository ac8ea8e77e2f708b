package fallback_test

import (
	"errors"
	"fmt"

	"github.com/steadywatch/steadywatch/fallback"
)

// A query is validated against the API Concepts list table before anything is sent.
func ExampleQuery_Validate() {
	err := fallback.ExactQuery("0").Validate()
	var iq *fallback.InvalidQueryError
	fmt.Println(errors.Is(err, fallback.ErrInvalidQuery), errors.As(err, &iq), iq.Rule)
	fmt.Println(fallback.NotOlderThanQuery("42").WithLimit(500).Validate())
	// Output:
	// true true exact-with-zero
	// <nil>
}
