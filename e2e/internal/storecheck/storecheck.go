// Package storecheck reads what the apiserver holds, to compare a cache
// with: the server's ConfigMaps read straight from it (Truth). The keys in
// which a cache differs are the SDK's own comparison (internal/storediff,
// which the reflector's consistency check uses too). The e2e programs (soak,
// cmd/demo) and suites share it; it needs no Ginkgo. How a difference is
// reported stays with the caller.
package storecheck

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Truth is a fresh MostRecent (consistent) list of the ConfigMaps in ns
// straight from the apiserver behind cs: name -> resourceVersion, and the
// list's resourceVersion.
func Truth(ctx context.Context, cs kubernetes.Interface, ns string) (map[string]string, string, error) {
	l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", err
	}
	out := make(map[string]string, len(l.Items))
	for _, cm := range l.Items {
		out[cm.Name] = cm.ResourceVersion
	}
	return out, l.ResourceVersion, nil
}
