package prometheus_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/steadywatch/steadywatch/lister"
	swprom "github.com/steadywatch/steadywatch/metrics/prometheus"
)

// legacyConfigMaps answers like a v1.18 apiserver, which ignores
// resourceVersionMatch: without a limit it serves its newest state (RV 12).
func legacyConfigMaps(_ context.Context, o metav1.ListOptions) (*corev1.ConfigMapList, error) {
	rv := "12"
	if o.Limit > 0 && o.ResourceVersion != "" {
		rv = o.ResourceVersion
	}
	return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}, nil
}

func noWatch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, fmt.Errorf("not used")
}

// Register the Recorder on your registry (here a fresh one; with
// controller-runtime, sigs.k8s.io/controller-runtime/pkg/metrics.Registry) and
// pass it as Metrics to every lister and reflector; reflector.Options{Metrics:
// rec} works the same way. Here an Exact list against a server that ignores
// resourceVersionMatch takes a fallback, and both show up in the metrics.
func ExampleNew() {
	reg := prometheus.NewRegistry()
	rec := swprom.New(reg, "") // "": the namespace "steadywatch"

	l := lister.New(lister.FromFuncs(legacyConfigMaps, noWatch),
		lister.Options{Name: "v1/configmaps", Metrics: rec})
	if _, _, err := l.List(context.Background(), lister.Exact("10")); err != nil {
		fmt.Println(err)
		return
	}

	families, err := reg.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName()+"="+lp.GetValue())
			}
			fmt.Printf("%s{%s} %v\n", mf.GetName(), strings.Join(labels, ","), m.GetCounter().GetValue())
		}
	}
	// Output:
	// steadywatch_fallbacks_total{name=v1/configmaps,reason=rule2-exact-mismatch-retry-with-limit} 1
	// steadywatch_lists_total{name=v1/configmaps,outcome=ok,semantic=Exact} 1
}
