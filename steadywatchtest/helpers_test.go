package steadywatchtest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type cmServer = steadywatchtest.Server[*corev1.ConfigMap]

// withObjects returns a server with faults f holding the ConfigMaps ns/names.
func withObjects(t *testing.T, f steadywatchtest.Faults, names ...string) *cmServer {
	t.Helper()
	s := newCM(steadywatchtest.Options{Faults: f})
	for _, n := range names {
		s.MustCreate(testfake.ConfigMap(n, ""))
	}
	t.Cleanup(s.Close)
	return s
}

func newCM(o steadywatchtest.Options) *cmServer {
	return steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](o)
}

// history builds the store every table uses: a@1 b@2 c@3 (namespace ns),
// then a updated @4 and b deleted @5. Current state: a@4, c@3.
func history(t *testing.T, o steadywatchtest.Options) *cmServer {
	t.Helper()
	s := newCM(o)
	s.MustCreate(testfake.ConfigMap("a", "", testfake.Labels("app", "x")), testfake.ConfigMap("b", "", testfake.Labels("app", "y")), testfake.ConfigMap("c", "", testfake.Labels("app", "x")))
	a, _ := s.Get("ns", "a")
	a.Data = map[string]string{"v": "2"}
	if _, err := s.Update(a); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("ns", "b"); err != nil {
		t.Fatal(err)
	}
	if got := s.ResourceVersion(); got != "5" {
		t.Fatalf("history: resourceVersion %s, want 5", got)
	}
	return s
}

// items renders a list as "name@rv" strings.
func items(t *testing.T, obj runtime.Object) string {
	t.Helper()
	objs, err := meta.ExtractList(obj)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		m, _ := meta.Accessor(o)
		out = append(out, m.GetName()+"@"+m.GetResourceVersion())
	}
	return strings.Join(out, " ")
}

func code(err error) int32 {
	if s, ok := err.(apierrors.APIStatus); ok {
		return s.Status().Code
	}
	if err != nil {
		return -1
	}
	return 200
}

// ev renders an event as "TYPE name@rv" (bookmarks: "BOOKMARK @rv[ end]";
// errors: "ERROR code reason").
func ev(e watch.Event) string {
	if e.Type == watch.Error {
		st, _ := e.Object.(*metav1.Status)
		return fmt.Sprintf("ERROR %d %s", st.Code, st.Reason)
	}
	m, _ := meta.Accessor(e.Object)
	s := fmt.Sprintf("%s %s@%s", e.Type, m.GetName(), m.GetResourceVersion())
	if e.Type == watch.Bookmark && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
		s += " end"
	}
	return s
}

// next returns the watch's next event, or "CLOSED"; it fails after 5s.
func next(t *testing.T, w watch.Interface) string {
	t.Helper()
	select {
	case e, ok := <-w.ResultChan():
		if !ok {
			return "CLOSED"
		}
		return ev(e)
	case <-time.After(5 * time.Second):
		t.Fatal("no watch event within 5s")
		return ""
	}
}

// take reads n events (or until the stream closes: "CLOSED" is the last).
func take(t *testing.T, w watch.Interface, n int) []string {
	t.Helper()
	var out []string
	for range n {
		e := next(t, w)
		out = append(out, e)
		if e == "CLOSED" {
			break
		}
	}
	return out
}

func watchOf(t *testing.T, s *cmServer, o metav1.ListOptions) watch.Interface {
	t.Helper()
	w, err := s.Watch(context.Background(), o)
	if err != nil {
		t.Fatalf("watch %+v: %v", o, err)
	}
	t.Cleanup(w.Stop)
	return w
}

// touch updates ns/name (a new resourceVersion) and returns it.
func touch(t *testing.T, s *cmServer, name string) string {
	t.Helper()
	o, ok := s.Get("ns", name)
	if !ok {
		t.Fatalf("no %s", name)
	}
	if o.Data == nil {
		o.Data = map[string]string{}
	}
	o.Data["touched"] += "x"
	u, err := s.Update(o)
	if err != nil {
		t.Fatal(err)
	}
	return u.ResourceVersion
}

func ptr[T any](v T) *T { return &v }

func streaming(rv string) metav1.ListOptions {
	return metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		SendInitialEvents: ptr(true), AllowWatchBookmarks: true}
}
