package decode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/steadywatch/steadywatch/internal/testfake"
)

// recordingEach is an Each that reports what it is handed, in order:
// "head@RV" and "item NAME".
func recordingEach(events chan<- string) *Each {
	return &Each{
		Head: func(list runtime.Object) error {
			lm, err := meta.ListAccessor(list)
			if err != nil {
				return err
			}
			if n := meta.LenList(list); n != 0 {
				return fmt.Errorf("head has %d items", n)
			}
			events <- "head@" + lm.GetResourceVersion()
			return nil
		},
		Item: func(obj runtime.Object) error {
			m, err := meta.Accessor(obj)
			if err != nil {
				return err
			}
			events <- "item " + m.GetName()
			return nil
		},
	}
}

// With Each.Item, a list's items are handed over one by one as they are
// decoded: the first ones before the rest of the body has arrived, after
// Head. Items that come before the metadata are held until it arrives.
// Both encodings, typed and unstructured.
func TestEachHandsItemsOverAsDecoded(t *testing.T) {
	full := testfake.RichConfigMaps(5)
	full.Continue, full.RemainingItemCount = "", nil
	for _, tc := range []struct {
		name         string
		proto        bool
		itemsFirst   bool
		unstructured bool
	}{
		{"protobuf", true, false, false},
		{"json", false, false, false},
		{"unstructured json", false, false, true},
		{"protobuf, items before metadata", true, true, false},
		{"json, items before metadata", false, true, false},
		{"unstructured json, items before metadata", false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, cuts := testfake.ListBody(t, full, tc.proto, tc.itemsFirst)
			pr, pw := io.Pipe()
			events := make(chan string, 100)
			type result struct {
				list runtime.Object
				err  error
			}
			done := make(chan result, 1)
			go func() {
				var (
					l   runtime.Object
					err error
				)
				if tc.unstructured {
					l, err = Unstructured(pr, recordingEach(events))
				} else {
					l, err = List(pr, mustShape(t, &corev1.ConfigMapList{}), recordingEach(events))
				}
				done <- result{l, err}
			}()
			if _, err := pw.Write(body[:cuts[2]]); err != nil {
				t.Fatal(err)
			}
			if !tc.itemsFirst {
				// The decoder holds 2 items; it has handed them over
				// before the rest is written.
				for _, want := range []string{"head@12345", "item cm-0", "item cm-1"} {
					if got := <-events; got != want {
						t.Fatalf("got %q; want %q", got, want)
					}
				}
			}
			if _, err := pw.Write(body[cuts[2]:]); err != nil {
				t.Fatal(err)
			}
			_ = pw.Close()
			res := <-done
			if res.err != nil {
				t.Fatal(res.err)
			}
			close(events)
			var got []string
			if !tc.itemsFirst {
				got = []string{"head@12345", "item cm-0", "item cm-1"}
			}
			for e := range events {
				got = append(got, e)
			}
			want := []string{"head@12345"}
			for i := range full.Items {
				want = append(want, "item "+full.Items[i].Name)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("handed over %q; want %q", got, want)
			}
			if n := meta.LenList(res.list); n != 0 {
				t.Fatalf("the list returned holds %d items; want none", n)
			}
		})
	}
}

// The items handed over are the items decoding the whole list gives,
// transform applied; unstructured items get the list's kind and
// apiVersion.
func TestEachItemsEqualTheWholeList(t *testing.T) {
	full := testfake.RichConfigMaps(30)
	tf := func(obj runtime.Object) (runtime.Object, error) {
		m, _ := meta.Accessor(obj)
		m.SetManagedFields(nil)
		return obj, nil
	}
	for _, proto := range []bool{true, false} {
		body, _ := testfake.ListBody(t, full, proto, false)
		sh := mustShape(t, &corev1.ConfigMapList{})
		whole, err := List(bytes.NewReader(body), sh, &Each{Transform: tf})
		if err != nil {
			t.Fatal(err)
		}
		var items []runtime.Object
		if _, err := List(bytes.NewReader(body), sh, &Each{Transform: tf, Item: func(obj runtime.Object) error {
			items = append(items, obj)
			return nil
		}}); err != nil {
			t.Fatal(err)
		}
		wl := whole.(*corev1.ConfigMapList)
		if len(items) != len(wl.Items) {
			t.Fatalf("proto %v: %d items handed over; want %d", proto, len(items), len(wl.Items))
		}
		for i := range items {
			if !equalObjects(items[i], &wl.Items[i]) {
				t.Fatalf("proto %v: item %d differs from the whole list's", proto, i)
			}
		}
	}
	body, _ := testfake.ListBody(t, full, false, true)
	var kinds []string
	if _, err := Unstructured(bytes.NewReader(body), &Each{Item: func(obj runtime.Object) error {
		kinds = append(kinds, obj.(*unstructured.Unstructured).GetAPIVersion()+"/"+obj.GetObjectKind().GroupVersionKind().Kind)
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	if len(kinds) != 30 || kinds[0] != "v1/ConfigMap" {
		t.Fatalf("unstructured items %q; want v1/ConfigMap", kinds)
	}
}

func equalObjects(a, b runtime.Object) bool { return reflect.DeepEqual(a, b) }

// Errors: a Head or Item error ends the decoding and is returned as it is
// (Head's before any item is handed over); a metadata given again after
// items were handed over is a malformed body; a Status hands nothing over.
func TestEachErrors(t *testing.T) {
	sh := mustShape(t, &corev1.ConfigMapList{})
	full := testfake.RichConfigMaps(3)
	stop := errors.New("stop")
	for _, proto := range []bool{true, false} {
		body, _ := testfake.ListBody(t, full, proto, false)
		n := 0
		_, err := List(bytes.NewReader(body), sh, &Each{Head: func(runtime.Object) error { return stop }, Item: func(runtime.Object) error { n++; return nil }})
		if err != stop || n != 0 {
			t.Fatalf("proto %v: Head failing: %v, %d items handed over; want its error, none", proto, err, n)
		}
		_, err = List(bytes.NewReader(body), sh, &Each{Item: func(runtime.Object) error { n++; return stop }})
		if err != stop || n != 1 {
			t.Fatalf("proto %v: Item failing: %v after %d items; want its error after 1", proto, err, n)
		}
	}
	twice := `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"a"}}],"metadata":{"resourceVersion":"9"}}`
	_, err := List(bytes.NewReader([]byte(twice)), sh, &Each{Item: func(runtime.Object) error { return nil }})
	if !errors.Is(err, ErrListBody) {
		t.Fatalf("metadata given twice: %v; want a malformed body", err)
	}
	status := `{"kind":"Status","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"a"}}],"status":"Failure","code":410,"reason":"Expired"}`
	n := 0
	_, err = List(bytes.NewReader([]byte(status)), sh, &Each{Item: func(runtime.Object) error { n++; return nil }})
	if !apierrors.IsResourceExpired(err) || n != 0 {
		t.Fatalf("a Status: %v, %d items handed over; want its 410, none", err, n)
	}
}
