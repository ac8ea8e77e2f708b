package lister

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"

	"github.com/steadywatch/steadywatch/internal/testfake"
)

// partialList is what an apiserver answers a metadata client's list with
// (its kind set on the list; a real v1.37.2 server leaves the items'
// empty, this one item has it too).
func partialList() *metav1.PartialObjectMetadataList {
	tm := metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}
	ts := metav1.Unix(1700000000, 0)
	return &metav1.PartialObjectMetadataList{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "c", RemainingItemCount: ptrTo(int64(3))},
		Items: []metav1.PartialObjectMetadata{{
			TypeMeta: tm,
			ObjectMeta: metav1.ObjectMeta{
				Name: "a", Namespace: "ns", UID: types.UID("u-1"), ResourceVersion: "7", Generation: 2,
				CreationTimestamp: ts, Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"n": "é\u2028"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "r", UID: "u-0", Controller: ptrTo(true)}},
				Finalizers:      []string{"f"},
				ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", Time: &ts, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{}}`)}},
			},
		}, {ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}}},
	}
}

// encodeMeta encodes obj (a meta.k8s.io/v1 type with its kind set) as an
// apiserver does.
func encodeMeta(t *testing.T, obj runtime.Object) string {
	t.Helper()
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// FromMetadataConfig sends the metadata client's request and returns the
// list the metadata client decodes from the same body: a
// PartialObjectMetadataList in protobuf and in JSON, and a server's own
// list in JSON (a server that cannot convert to PartialObjectMetadataList).
func TestFromMetadataConfigMatchesTheMetadataClient(t *testing.T) {
	cfg, answer, last := answering(t)
	md := metadata.NewForConfigOrDie(cfg)
	bodies := map[string]string{
		"protobuf":                      encodeMeta(t, partialList()),
		"JSON":                          `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"42","continue":"c","remainingItemCount":3},"items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","namespace":"ns","uid":"u-1","labels":{"app":"x"},"creationTimestamp":"2023-11-14T22:13:20Z","managedFields":[{"manager":"m","operation":"Apply","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{}}}]}},{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"b"}}]}`,
		"JSON, the resource's own list": `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"a","resourceVersion":"7","annotations":{"k":"v"}},"data":{"k":"v"},"binaryData":{"b":"AAE="}},{"metadata":{"name":"b"},"immutable":true}]}`,
		"JSON, items null":              `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":null}`,
		"JSON, items []":                `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},"items":[]}`,
	}
	opts := metav1.ListOptions{LabelSelector: "a=b", FieldSelector: "metadata.name=a", ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 7, Continue: "c", TimeoutSeconds: ptrTo(int64(30))}
	for _, gvr := range []schema.GroupVersionResource{{Version: "v1", Resource: "configmaps"}, {Group: "example.com", Version: "v1", Resource: "widgets"}} {
		for _, ns := range []string{"ns", ""} {
			c, err := FromMetadataConfig(cfg, gvr, ns)
			if err != nil {
				t.Fatal(err)
			}
			ri := md.Resource(gvr).Namespace(ns)
			for name, b := range bodies {
				ours := sameList(t, answer, last, fmt.Sprintf("%s ns %q %s", gvr, ns, name), b, opts, c, ri.List)
				if got := len(ours.(*metav1.PartialObjectMetadataList).Items); name != "JSON, items null" && name != "JSON, items []" && got != 2 {
					t.Errorf("%s %s: %d items, want 2", gvr, name, got)
				}
			}
		}
	}
}

func TestFromMetadataConfigErrors(t *testing.T) {
	cfg, answer, _ := answering(t)
	if _, err := FromMetadataConfig(cfg, schema.GroupVersionResource{Resource: "x"}, ""); err == nil {
		t.Error("a resource without a version was accepted")
	}
	if _, err := FromMetadataConfig(cfg, schema.GroupVersionResource{Version: "v1", Resource: "x"}, "a/b"); err == nil {
		t.Error("an invalid namespace was accepted")
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	c, err := FromMetadataConfig(cfg, gvr, "ns")
	if err != nil {
		t.Fatal(err)
	}
	ri := metadata.NewForConfigOrDie(cfg).Resource(gvr).Namespace("ns")
	b := encodeMeta(t, partialList())
	expectListErrors(t, answer, c, b[:len(b)-3])
	answer(http.StatusOK, encodeMeta(t, &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonExpired, Code: 410}))
	if _, err := c.List(context.Background(), metav1.ListOptions{}); !apierrors.IsResourceExpired(err) {
		t.Errorf("a protobuf Status in a 200: %v; want its 410 Expired", err)
	}
	// A protobuf answer that is not a PartialObjectMetadataList (a
	// ConfigMapList's items would decode as metadata): the metadata client
	// fails, so does this.
	cms := testfake.EncodeList(t, testfake.RichConfigMaps(3), true)
	answer(http.StatusOK, string(cms))
	if _, err := c.List(context.Background(), metav1.ListOptions{}); !errors.Is(err, ErrListBody) {
		t.Errorf("a protobuf ConfigMapList: %v; want an ErrListBody", err)
	}
	if _, err := ri.List(context.Background(), metav1.ListOptions{}); err == nil {
		t.Error("the metadata client accepted a protobuf ConfigMapList; this test's premise is wrong")
	}
}
