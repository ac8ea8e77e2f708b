package watchpipe

import (
	"github.com/go-logr/logr"
	"github.com/steadywatch/steadywatch/internal/testfake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func discard() logr.Logger { return logr.Discard() }

func endBookmark(rv string) *corev1.ConfigMap {
	o := testfake.ConfigMap("", rv)
	o.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	return o
}
