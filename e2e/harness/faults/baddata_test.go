package faults

import (
	"bytes"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// The list and event rewrites of the bad-data faults, in both encodings the
// apiserver speaks.
func TestBadDataRewrites(t *testing.T) {
	ser := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	list := &corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{Kind: "ConfigMapList", APIVersion: "v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: "next"},
		Items:    []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "5"}}}}
	var pb bytes.Buffer
	if err := ser.Encode(list, &pb); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	for media, body := range map[string][]byte{mediaProtobuf: pb.Bytes(), mediaJSON: js} {
		out, err := setListContinue(media, body, "same")
		if err != nil {
			t.Fatalf("%s: %v", media, err)
		}
		got := &corev1.ConfigMapList{}
		if media == mediaProtobuf {
			_, _, err = ser.Decode(out, nil, got)
		} else {
			err = json.Unmarshal(out, got)
		}
		if err != nil || got.Continue != "same" || got.ResourceVersion != "7" || len(got.Items) != 1 || got.Items[0].Name != "a" {
			t.Errorf("%s: continue %q rv %q items %v err %v", media, got.Continue, got.ResourceVersion, got.Items, err)
		}
	}

	bm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{ResourceVersion: "42"}}
	var obj bytes.Buffer
	if err := ser.Encode(bm, &obj); err != nil {
		t.Fatal(err)
	}
	pev, err := (&metav1.WatchEvent{Type: "BOOKMARK", Object: runtime.RawExtension{Raw: obj.Bytes()}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	jobj, _ := json.Marshal(bm)
	jev, _ := json.Marshal(metav1.WatchEvent{Type: "BOOKMARK", Object: runtime.RawExtension{Raw: jobj}})
	for media, ev := range map[string][]byte{mediaProtobuf: pev, mediaJSON: jev} {
		out, err := rewriteResourceVersion(media, ev, "abc")
		if err != nil {
			t.Fatalf("%s: %v", media, err)
		}
		if info, err := inspectEvent(media, out); err != nil || info.Type != "BOOKMARK" || info.ResourceVersion != "abc" {
			t.Errorf("%s: rewritten bookmark %+v %v", media, info, err)
		}
	}

	// An object's name and namespace are read for RedeliverOlder.
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "9"}}
	obj.Reset()
	if err := ser.Encode(cm, &obj); err != nil {
		t.Fatal(err)
	}
	pev, _ = (&metav1.WatchEvent{Type: "MODIFIED", Object: runtime.RawExtension{Raw: obj.Bytes()}}).Marshal()
	if info, err := inspectEvent(mediaProtobuf, pev); err != nil || info != (eventInfo{Type: "MODIFIED", Namespace: "ns", Name: "a", ResourceVersion: "9"}) {
		t.Errorf("inspect: %+v %v", info, err)
	}
}
