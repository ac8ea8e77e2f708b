package watchpipe

import (
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cm(name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

func discard() logr.Logger { return logr.Discard() }

func endBookmark(rv string) *corev1.ConfigMap {
	o := cm("", rv)
	o.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	return o
}
