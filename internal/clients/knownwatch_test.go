package clients

import (
	"context"
	"net/http"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/decode"
	"github.com/steadywatch/steadywatch/internal/testfake"
)

// A typed client's streaming list sent with a known-object function on its
// context (decode.WithKnown) is the request the typed client sends without
// one (the same URL, the same Accept header, for a clientset with the
// default content types and one configured for JSON), and an event object
// the function returns is handed on undecoded.
func TestTypedStreamingListWithKnownObjects(t *testing.T) {
	for _, tc := range []struct {
		name      string
		configure func(*rest.Config)
	}{
		{"default content types", func(*rest.Config) {}},
		{"JSON", func(c *rest.Config) { c.ContentType, c.AcceptContentTypes = "application/json", "application/json" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu   sync.Mutex
				seen []string // Accept and URI of each request
			)
			cfg, _ := testfake.WireServer(t, false, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, r.Header.Get("Accept")+" "+r.URL.RequestURI())
				mu.Unlock()
				mediaType, ct := runtime.ContentTypeJSON, "application/json"
				if r.Header.Get("Accept") != "application/json" {
					mediaType, ct = runtime.ContentTypeProtobuf, "application/vnd.kubernetes.protobuf;stream=watch"
				}
				info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
				w.Header().Set("Content-Type", ct)
				enc := restclientwatch.NewEncoder(streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(w), info.StreamSerializer.Serializer),
					scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion))
				_ = enc.Encode(&watch.Event{Type: watch.Added, Object: testfake.ConfigMap("a", "1")})
			})
			tc.configure(cfg)
			cs, err := kubernetes.NewForConfig(fallback.NoHiddenRetries(cfg))
			if err != nil {
				t.Fatal(err)
			}
			tr, err := TypedResourceOf(&corev1.ConfigMap{})
			if err != nil {
				t.Fatal(err)
			}
			c := tr.Client(cs, "ns")
			send := true
			o := metav1.ListOptions{ResourceVersion: "10", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, SendInitialEvents: &send, AllowWatchBookmarks: true}
			held := testfake.ConfigMap("a", "1")
			var asked []string
			known := func(namespace, name, rv string) (runtime.Object, bool) {
				asked = append(asked, namespace+"/"+name+"@"+rv)
				return held, true
			}
			var got []runtime.Object
			for _, ctx := range []context.Context{context.Background(), decode.WithKnown(context.Background(), decode.Known{Object: known})} {
				w, err := c.Watch(ctx, o)
				if err != nil {
					t.Fatal(err)
				}
				ev, ok := <-w.ResultChan()
				w.Stop()
				if !ok || ev.Type != watch.Added {
					t.Fatalf("event %v %v", ev.Type, ok)
				}
				got = append(got, ev.Object)
			}
			if len(seen) != 2 || seen[0] != seen[1] {
				t.Fatalf("requests %q; want the same request twice", seen)
			}
			if len(asked) != 1 || asked[0] != "ns/a@1" || got[1] != runtime.Object(held) {
				t.Fatalf("asked %q, handed on %p; want ns/a@1 asked and the held object %p", asked, got[1], held)
			}
			if got[0] == runtime.Object(held) {
				t.Fatal("without a known-object function the event object is the held one")
			}
		})
	}
}
