package lister

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/internal/decode"
)

// BenchmarkJSONWatchEvent decodes a JSON watch stream of custom resources
// (about 2.4 KB each, as in e2e/bench's initial-sync runs) the way a dynamic
// client's watch does: client-go's serializers against FromDynamicConfig's
// (decode.FastJSONWatch). Per event; compare with benchstat.
func BenchmarkJSONWatchEvent(b *testing.B) {
	const events = 1000
	var stream bytes.Buffer
	for i := range events {
		fmt.Fprintf(&stream, `{"type":"ADDED","object":{"apiVersion":"bench.steadywatch.dev/v1","kind":"BenchItem","metadata":{"name":"item-%d","namespace":"p1","uid":"6b1d2c9e-8a1f-4e7b-9d3c-%012d","resourceVersion":"%d","generation":1,"creationTimestamp":"2026-11-27T00:00:00Z","labels":{"set":"bench"},"managedFields":[{"manager":"bench","operation":"Update","apiVersion":"bench.steadywatch.dev/v1","time":"2026-11-27T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:config":{},"f:notes":{},"f:owner":{},"f:replicas":{}}}}]},"spec":{"config":"%s","owner":"%s","notes":"%s","replicas":%d,"ratio":0.5,"enabled":true}}}`+"\n",
			i, i, 1000+i, strings.Repeat("c", 1500), strings.Repeat("o", 40), strings.Repeat("n", 300), i%7)
	}
	data := stream.Bytes()
	base := dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer
	for _, c := range []struct {
		name string
		ns   runtime.NegotiatedSerializer
	}{{"impl=client-go", base}, {"impl=steadywatch", decode.FastJSONWatch(base)}} {
		b.Run(c.name, func(b *testing.B) {
			open := jsonWatchDecoders(b, c.ns)
			b.SetBytes(int64(len(data) / events))
			b.ReportAllocs()
			b.ResetTimer()
			for n := 0; n < b.N; {
				d := open(data)
				for ; n < b.N; n++ {
					if _, _, err := d.Decode(); err == io.EOF {
						break
					} else if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
