package listgate_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/listgate"
)

// One gate per apiserver, shared by the listers (and ListerWatchers and
// reflectors) of a process: their collection reads take its slots, the
// limit=1 read of the current resourceVersion does not.
func ExampleNew() {
	cs := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}})
	gate := listgate.New(1)
	c, err := lister.FromClientset(cs, &corev1.ConfigMap{}, "default")
	if err != nil {
		fmt.Println(err)
		return
	}
	l := lister.New(c, lister.Options{ListGate: gate})
	if _, _, err := l.List(context.Background(), lister.MostRecent()); err != nil {
		fmt.Println(err)
		return
	}
	if _, _, err := l.CurrentResourceVersion(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	st := gate.Stats()
	fmt.Printf("slots %d, admitted %d, waited %d, in flight now %d\n", st.Slots, st.Admitted, st.Waited, st.InFlight)
	// Output: slots 1, admitted 1, waited 0, in flight now 0
}
