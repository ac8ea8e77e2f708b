package decode

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/steadywatch/steadywatch/internal/testfake"
)

// knownEach is an Each whose Known takes the items named in known (at
// their resourceVersion in the list) and records every question and every
// item handed over.
func knownEach(known map[string]bool, log *[]string) *Each {
	return &Each{
		Head: func(runtime.Object) error { *log = append(*log, "head"); return nil },
		Item: func(obj runtime.Object) error {
			m, _ := meta.Accessor(obj)
			*log = append(*log, "item "+m.GetName())
			return nil
		},
		Known: func(namespace, name, rv string) (bool, error) {
			*log = append(*log, fmt.Sprintf("known? %s/%s@%s", namespace, name, rv))
			return known[name], nil
		},
	}
}

// Each.Known is asked about every item after Head, with the namespace,
// name and resourceVersion read from the item's metadata alone; an item it
// takes is neither decoded nor handed to Item. Protobuf, JSON and
// unstructured JSON.
func TestEachKnownItemsAreNotDecoded(t *testing.T) {
	full := testfake.RichConfigMaps(4)
	full.Continue, full.RemainingItemCount = "", nil
	known := map[string]bool{full.Items[0].Name: true, full.Items[2].Name: true}
	var want []string
	want = append(want, "head")
	for i, it := range full.Items {
		want = append(want, fmt.Sprintf("known? %s/%s@%s", it.Namespace, it.Name, it.ResourceVersion))
		if i != 0 && i != 2 {
			want = append(want, "item "+it.Name)
		}
	}
	for _, tc := range []struct {
		name         string
		proto        bool
		unstructured bool
	}{{"protobuf", true, false}, {"json", false, false}, {"unstructured json", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			body, _ := testfake.ListBody(t, full, tc.proto, false)
			var log []string
			var err error
			if tc.unstructured {
				_, err = Unstructured(bytes.NewReader(body), knownEach(known, &log))
			} else {
				_, err = List(bytes.NewReader(body), mustShape(t, &corev1.ConfigMapList{}), knownEach(known, &log))
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(log, want) {
				t.Fatalf("calls %q; want %q", log, want)
			}
		})
	}
}

// Items that come before the list's metadata are decoded and held as
// without Known: Known is only asked once Head has seen the list.
func TestEachKnownNotAskedBeforeHead(t *testing.T) {
	full := testfake.RichConfigMaps(2)
	for _, proto := range []bool{true, false} {
		body, _ := testfake.ListBody(t, full, proto, true)
		var log []string
		if _, err := List(bytes.NewReader(body), mustShape(t, &corev1.ConfigMapList{}), knownEach(map[string]bool{full.Items[0].Name: true, full.Items[1].Name: true}, &log)); err != nil {
			t.Fatal(err)
		}
		want := []string{"head", "item " + full.Items[0].Name, "item " + full.Items[1].Name}
		if !slices.Equal(log, want) {
			t.Fatalf("proto %v: calls %q; want %q", proto, log, want)
		}
	}
}

// An error of Known ends the decoding and is returned as it is.
func TestEachKnownError(t *testing.T) {
	full := testfake.RichConfigMaps(3)
	stop := errors.New("stop")
	for _, proto := range []bool{true, false} {
		body, _ := testfake.ListBody(t, full, proto, false)
		n := 0
		_, err := List(bytes.NewReader(body), mustShape(t, &corev1.ConfigMapList{}), &Each{
			Item:  func(runtime.Object) error { n++; return nil },
			Known: func(string, string, string) (bool, error) { return false, stop },
		})
		if err != stop || n != 0 {
			t.Fatalf("proto %v: %v after %d items; want Known's error before any", proto, err, n)
		}
	}
}

// protoItemMeta reads exactly what the item's Unmarshal reads, and refuses
// what it could not read unambiguously.
func TestProtoItemMeta(t *testing.T) {
	cm := testfake.RichConfigMaps(1).Items[0]
	b, err := cm.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	ns, name, rv, ok := protoItemMeta(b)
	if !ok || ns != cm.Namespace || name != cm.Name || rv != cm.ResourceVersion {
		t.Fatalf("read %q %q %q %v; want %q %q %q", ns, name, rv, ok, cm.Namespace, cm.Name, cm.ResourceVersion)
	}
	// The metadata given twice: a decoder merges the two; not read.
	meta2 := corev1.ConfigMap{}
	meta2.ResourceVersion = "999"
	b2, _ := meta2.Marshal()
	if _, _, _, ok := protoItemMeta(append(slices.Clone(b), b2...)); ok {
		t.Fatal("an item with its metadata given twice was read")
	}
	for _, bad := range [][]byte{b[:len(b)/2], {0x0a, 0xff}, {0x00}, nil} {
		if _, _, _, ok := protoItemMeta(bad); ok {
			t.Fatalf("malformed item %x was read", bad)
		}
	}
}

// jsonItemMeta reads the item's metadata case-sensitively, as its decoding.
func TestJSONItemMeta(t *testing.T) {
	ns, name, rv, ok := jsonItemMeta([]byte(`{"metadata":{"namespace":"ns","name":"a","resourceVersion":"7"},"data":{"k":"v"}}`))
	if !ok || ns != "ns" || name != "a" || rv != "7" {
		t.Fatalf("read %q %q %q %v", ns, name, rv, ok)
	}
	for _, raw := range []string{`{"Metadata":{"name":"a","resourceVersion":"7"}}`, `{"metadata":{"name":"a"}}`, `{"metadata":null}`, `{"metadata":`} {
		if _, _, _, ok := jsonItemMeta([]byte(raw)); ok {
			t.Fatalf("%s was read", raw)
		}
	}
}
