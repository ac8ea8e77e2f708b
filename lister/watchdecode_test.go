package lister

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"

	"github.com/steadywatch/steadywatch/internal/decode"
	"github.com/steadywatch/steadywatch/internal/testfake"
)

// watchCases are JSON watch streams as a server (or a broken proxy) may send
// them: what FromDynamicConfig's Watch decodes must be what the dynamic
// client's Watch decodes from the same bytes, event for event, errors
// included.
var watchCases = map[string]string{
	"custom resources": `{"type":"ADDED","object":{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","resourceVersion":"7","generation":2,"labels":{"a":"b"}},"spec":{"n":1,"f":1.5,"big":9007199254740993,"huge":123456789012345678901234567890,"neg":-3,"exp":1e3,"l":[1,"x",null,{"a":[]}],"t":true,"u":"\u00e9\ud83d\ude00"}}}
{"type":"MODIFIED","object":{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","resourceVersion":"8"},"spec":{}}}
{"type":"DELETED","object":{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","resourceVersion":"9"}}}
`,
	"built-in kind, bookmarks": `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c","namespace":"ns","resourceVersion":"3"},"data":{"k":"v"}}}
{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"4","annotations":{"k8s.io/initial-events-end":"true"}}}}
{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"5"}}}
`,
	"ERROR event with a Status (typed, as client-go decodes it)": `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}
`,
	"an object with top-level items":       `{"type":"ADDED","object":{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"i"},"items":[{"a":1}]}}` + "\n",
	"pretty-printed, whitespace":           "{\n  \"type\" : \"ADDED\",\n  \"object\" : {\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"p\"}}\n}\n\n",
	"keys in another order, unknown keys":  `{"object":{"kind":"Widget","metadata":{"name":"o"},"apiVersion":"example.com/v1"},"extra":1,"type":"ADDED"}` + "\n",
	"duplicate keys":                       `{"type":"ADDED","object":{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"d"},"spec":{"x":1,"x":2}}}` + "\n",
	"invalid event type":                   `{"type":"SOMETHING","object":{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x"}}}` + "\n",
	"event type in other case":             `{"Type":"ADDED","Object":{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x"}}}` + "\n",
	"object without kind":                  `{"type":"ADDED","object":{"apiVersion":"example.com/v1","metadata":{"name":"x"}}}` + "\n",
	"object without apiVersion":            `{"type":"ADDED","object":{"kind":"Widget","metadata":{"name":"x"}}}` + "\n",
	"object with a bad apiVersion":         `{"type":"ADDED","object":{"apiVersion":"a/b/c","kind":"Widget","metadata":{"name":"x"}}}` + "\n",
	"kind that is not a string":            `{"type":"ADDED","object":{"apiVersion":"example.com/v1","kind":7,"metadata":{"name":"x"}}}` + "\n",
	"null object":                          `{"type":"ADDED","object":null}` + "\n",
	"no object":                            `{"type":"ADDED"}` + "\n",
	"object that is not an object":         `{"type":"ADDED","object":[1,2]}` + "\n",
	"a bare Status, not an event":          `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"boom","code":500}` + "\n",
	"a Status under another group/version": `{"type":"ERROR","object":{"kind":"Status","apiVersion":"example.com/v1","status":"Failure","code":500}}` + "\n",
	"other-case apiVersion key":            `{"type":"ADDED","object":{"ApiVersion":"v1","apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x"}}}` + "\n",
	"another meta/v1 kind as the object":   `{"type":"ADDED","object":{"kind":"WatchEvent","apiVersion":"v1","type":"ADDED"}}` + "\n",
	"malformed object":                     `{"type":"ADDED","object":{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x"},"spec":{"a":tru}}}` + "\n",
	"truncated stream":                     `{"type":"ADDED","object":{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a"}}}` + "\n" + `{"type":"ADDED","object":{"apiVersion":"exa`,
	"not JSON at all":                      "<html>proxy error</html>\n",
}

func TestFromDynamicConfigWatchMatchesTheDynamicClient(t *testing.T) {
	cfg, answer, last := answering(t)
	opts := metav1.ListOptions{LabelSelector: "a=b", ResourceVersion: "5", AllowWatchBookmarks: true, SendInitialEvents: ptrTo(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, TimeoutSeconds: ptrTo(int64(30))}
	eachDynamicResource(t, cfg, func(resource string, c Client, ri dynamic.ResourceInterface) {
		for name, body := range watchCases {
			what := resource + ": " + name
			answer(200, body)
			got := drain(t, what, c.Watch, opts)
			gotReq := last()
			want := drain(t, what, ri.Watch, opts)
			if wantReq := last(); gotReq != wantReq {
				t.Errorf("%s: request\n got  %s\n want %s", what, gotReq, wantReq)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: events\n got  %#v\n want %#v", what, got, want)
			}
			if len(want) == 0 {
				t.Errorf("%s: no event at all: the case tests nothing", what)
			}
		}
	})
}

// A watch answered with an error status is the dynamic client's error.
func TestFromDynamicConfigWatchErrors(t *testing.T) {
	cfg, answer, _ := answering(t)
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	c, err := FromDynamicConfig(cfg, gvr, "ns")
	if err != nil {
		t.Fatal(err)
	}
	ri := dynamic.NewForConfigOrDie(cfg).Resource(gvr).Namespace("ns")
	for _, status := range []int{400, 403, 410, 500} {
		answer(status, fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"m%d","code":%d}`, status, status))
		_, gotErr := c.Watch(context.Background(), metav1.ListOptions{})
		_, wantErr := ri.Watch(context.Background(), metav1.ListOptions{})
		if gotErr == nil || wantErr == nil || gotErr.Error() != wantErr.Error() || !reflect.DeepEqual(gotErr, wantErr) {
			t.Errorf("status %d: got %v, want %v", status, gotErr, wantErr)
		}
	}
}

// drain opens a watch and returns its events until the stream ends.
func drain(t *testing.T, what string, open func(context.Context, metav1.ListOptions) (watch.Interface, error), o metav1.ListOptions) []watch.Event {
	t.Helper()
	w, err := open(context.Background(), o)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	defer w.Stop()
	return testfake.Drain(t, w, 10*time.Second)
}

// FuzzJSONWatchStream decodes arbitrary bytes as a JSON watch stream with
// the dynamic client's serializers and with FromDynamicConfig's: the same
// events, the same errors, in the same order.
func FuzzJSONWatchStream(f *testing.F) {
	for _, body := range watchCases {
		f.Add([]byte(body))
	}
	base := dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer
	type decoded struct {
		Type watch.EventType
		Obj  runtime.Object
		Err  string
	}
	clientGo, ours := jsonWatchDecoders(f, base), jsonWatchDecoders(f, decode.FastJSONWatch(base))
	decode := func(open func([]byte) *restclientwatch.Decoder, data []byte) []decoded {
		d := open(data)
		var out []decoded
		for range 64 {
			typ, o, err := d.Decode()
			if err != nil {
				return append(out, decoded{Err: err.Error()})
			}
			out = append(out, decoded{Type: typ, Obj: o})
		}
		return out
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		want, got := decode(clientGo, data), decode(ours, data)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("stream %q:\n got  %#v\n want %#v", data, got, want)
		}
	})
}

// jsonWatchDecoders negotiates ns's JSON stream decoding as client-go's REST
// client does for a watch (rest.Request.Watch) and returns a function that
// opens client-go's watch decoder over one stream's bytes.
func jsonWatchDecoders(tb testing.TB, ns runtime.NegotiatedSerializer) func([]byte) *restclientwatch.Decoder {
	tb.Helper()
	obj, ser, framer, err := runtime.NewClientNegotiator(ns, schema.GroupVersion{}).StreamDecoder(runtime.ContentTypeJSON, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return func(data []byte) *restclientwatch.Decoder {
		return restclientwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(io.NopCloser(bytes.NewReader(data))), ser), obj)
	}
}
