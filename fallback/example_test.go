package fallback_test

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadywatch/steadywatch/fallback"
)

// A query is validated against the API Concepts list table before anything is sent.
func ExampleQuery_Validate() {
	err := fallback.ExactQuery("0").Validate()
	var iq *fallback.InvalidQueryError
	fmt.Println(errors.Is(err, fallback.ErrInvalidQuery), errors.As(err, &iq) && iq.Rule == fallback.RuleExactZero)
	fmt.Println(fallback.NotOlderThanQuery("42").WithLimit(500).Validate())
	// Output:
	// true true
	// <nil>
}

// What client-go's reflector sends, read as explicit semantics.
func ExampleFromListOptions() {
	for _, o := range []metav1.ListOptions{
		{ResourceVersion: "0", Limit: 500},
		{ResourceVersion: "1234", Limit: 500},
		{ResourceVersion: "1234"},
		{ResourceVersion: "1234", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 500},
	} {
		q, _ := fallback.FromListOptions(o)
		fmt.Println(q)
	}
	// Output:
	// Any limit=500
	// Exact(1234) limit=500
	// NotOlderThan(1234)
	// NotOlderThan(1234) limit=500
}

// The two wire forms of the same query.
func ExampleQuery_ListOptions() {
	q := fallback.ExactQuery("1234")
	m, l := q.ListOptions(fallback.Match), q.ListOptions(fallback.Legacy)
	fmt.Printf("match:  rv=%s match=%s limit=%d\n", m.ResourceVersion, m.ResourceVersionMatch, m.Limit)
	fmt.Printf("legacy: rv=%s match=%s limit=%d\n", l.ResourceVersion, l.ResourceVersionMatch, l.Limit)
	// Output:
	// match:  rv=1234 match=Exact limit=0
	// legacy: rv=1234 match= limit=500
}
