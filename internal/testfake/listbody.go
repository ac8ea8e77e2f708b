package testfake

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ListBody is the body of an answer to a list of ConfigMaps, written field
// by field as an apiserver writes it (protobuf: the "k8s\x00" envelope,
// then ListMeta and items in the list message; JSON: kind, apiVersion,
// metadata, items), and cut points: cuts[i] is the offset at which item i
// begins (the byte after item i-1 ends), for a test that sends the body in
// parts. With itemsFirst, the items come before the list's metadata (no
// apiserver writes that; a body is untrusted input).
func ListBody(tb testing.TB, list *corev1.ConfigMapList, proto, itemsFirst bool) (body []byte, cuts []int) {
	tb.Helper()
	if proto {
		return protoListBody(tb, list, itemsFirst)
	}
	var b bytes.Buffer
	b.WriteString(`{"kind":"ConfigMapList","apiVersion":"v1",`)
	meta := func() {
		m, err := json.Marshal(list.ListMeta)
		if err != nil {
			tb.Fatal(err)
		}
		b.WriteString(`"metadata":`)
		b.Write(m)
	}
	if !itemsFirst {
		meta()
		b.WriteByte(',')
	}
	b.WriteString(`"items":[`)
	for i := range list.Items {
		cuts = append(cuts, b.Len())
		if i > 0 {
			b.WriteByte(',')
		}
		it, err := json.Marshal(&list.Items[i])
		if err != nil {
			tb.Fatal(err)
		}
		b.Write(it)
	}
	b.WriteByte(']')
	if itemsFirst {
		b.WriteByte(',')
		meta()
	}
	b.WriteByte('}')
	return b.Bytes(), cuts
}

func protoListBody(tb testing.TB, list *corev1.ConfigMapList, itemsFirst bool) ([]byte, []int) {
	field := func(dst []byte, num uint64, b []byte) []byte {
		dst = binary.AppendUvarint(dst, num<<3|2)
		dst = binary.AppendUvarint(dst, uint64(len(b)))
		return append(dst, b...)
	}
	meta, err := list.ListMeta.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	var msg []byte
	var at []int // item offsets within msg
	if !itemsFirst {
		msg = field(msg, 1, meta)
	}
	for i := range list.Items {
		it, err := list.Items[i].Marshal()
		if err != nil {
			tb.Fatal(err)
		}
		at = append(at, len(msg))
		msg = field(msg, 2, it)
	}
	if itemsFirst {
		msg = field(msg, 1, meta)
	}
	tm, err := (&runtime.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}).Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	body := field([]byte("k8s\x00"), 1, tm)
	body = binary.AppendUvarint(body, 2<<3|2)
	body = binary.AppendUvarint(body, uint64(len(msg)))
	cuts := make([]int, len(at))
	for i, a := range at {
		cuts[i] = len(body) + a
	}
	return append(body, msg...), cuts
}
