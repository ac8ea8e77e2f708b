package engine_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/vocab"
)

// What client-go's reflector sends, read as explicit semantics.
func ExampleFromListOptions() {
	for _, o := range []metav1.ListOptions{
		{ResourceVersion: "0", Limit: 500},
		{ResourceVersion: "1234", Limit: 500},
		{ResourceVersion: "1234"},
		{ResourceVersion: "1234", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 500},
	} {
		q, _ := engine.FromListOptions(o)
		fmt.Println(q)
	}
	// Output:
	// Any limit=500
	// Exact(1234) limit=500
	// NotOlderThan(1234)
	// NotOlderThan(1234) limit=500
}

// The two wire forms of the same query.
func ExampleListOptions() {
	q := fallback.Query{Semantic: fallback.Exact, ResourceVersion: "1234"}
	m, l := engine.ListOptions(q, vocab.Match), engine.ListOptions(q, vocab.Legacy)
	fmt.Printf("match:  rv=%s match=%s limit=%d\n", m.ResourceVersion, m.ResourceVersionMatch, m.Limit)
	fmt.Printf("legacy: rv=%s match=%s limit=%d\n", l.ResourceVersion, l.ResourceVersionMatch, l.Limit)
	// Output:
	// match:  rv=1234 match=Exact limit=0
	// legacy: rv=1234 match= limit=500
}
