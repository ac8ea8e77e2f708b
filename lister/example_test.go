package lister_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/lister"
)

// legacyConfigMaps behaves like a v1.18 apiserver that ignores
// resourceVersionMatch: without a limit it serves the newest data (RV 12);
// with a limit it serves exactly the RV asked for.
func legacyConfigMaps(_ context.Context, o metav1.ListOptions) (*corev1.ConfigMapList, error) {
	rv := "12"
	if o.Limit > 0 && o.ResourceVersion != "" {
		rv = o.ResourceVersion
	}
	return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: rv},
		Items: []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}}}, nil
}

func noWatch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, fmt.Errorf("unused")
}

// Exact(10) against a server that ignores the match: the answer at RV 12 is
// caught and the list is retried with a limit (rule 2); the Record says so.
// With a typed clientset: lister.FromClientset(cs, &corev1.ConfigMap{}, ns).
func ExampleLister_List() {
	l := lister.New(lister.FromFuncs(legacyConfigMaps, noWatch), lister.Options{})
	list, rec, err := l.List(context.Background(), lister.Exact("10"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("served at", rec.ServedResourceVersion, "items", len(list.(*corev1.ConfigMapList).Items))
	for _, r := range rec.Requests {
		fmt.Printf("sent rv=%s match=%q limit=%d -> %s at %s\n", r.Options.ResourceVersion, r.Options.ResourceVersionMatch, r.Options.Limit, r.Class, r.ServedResourceVersion)
	}
	for _, ev := range rec.Fallbacks {
		fmt.Println("fallback:", ev.Reason)
	}
	// Output:
	// served at 10 items 1
	// sent rv=10 match="Exact" limit=0 -> served-newer-than-exact at 12
	// sent rv=10 match="" limit=500 -> ok at 10
	// fallback: rule2-exact-mismatch-retry-with-limit
}

// Pages are handed over one at a time; OnRestart voids them if a continue
// token expires and the list restarts on a new snapshot.
func ExampleLister_ListPages() {
	l := lister.New(lister.FromFuncs(legacyConfigMaps, noWatch), lister.Options{})
	var kept []runtime.Object
	rec, err := l.ListPages(context.Background(), lister.MostRecent().WithLimit(100),
		func(p runtime.Object) error { kept = append(kept, p); return nil },
		lister.OnRestart(func(ev fallback.Event) error { kept = nil; return nil }))
	fmt.Println(err, rec.Pages, len(kept))
	// Output: <nil> 1 1
}
