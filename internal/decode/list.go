package decode

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"
)

// Transform is applied to each list item as soon as it is decoded: it
// returns the object to keep (of the item's type), or an error that ends the
// decoding.
type Transform func(runtime.Object) (runtime.Object, error)

// Each is what is done with each item of a list as it is decoded. Its zero
// value (or a nil *Each) keeps every item in the list's Items.
//
// With Item set, the items are handed over one by one and never kept: the
// list returned has no items. Head, if set, receives that list (its
// TypeMeta and ListMeta, no items) once, before the first item is handed
// over, and Item each item after Transform. An apiserver writes a list's
// metadata before its items (JSON "metadata" before "items"; protobuf
// ListMeta, field 1, before items, field 2), so each item is handed over
// as soon as it is decoded. The body is untrusted: items that come before
// the metadata are held (decoded) until it arrives, or until the end of the
// body, so that Head always sees the ListMeta before any item (a caller
// checks the list's resourceVersion there before it applies an item). A
// metadata given again after Head was called is an error, as is a JSON
// list whose kind is Status. An error of Head or Item ends the decoding
// and is returned as it is.
//
// Known, if set with Item, is asked about each item handed over after Head,
// before the item is decoded: its namespace, name and resourceVersion are
// read from the item's metadata alone (a protobuf item's ObjectMeta field,
// a JSON item's "metadata"). When it returns true the item is not decoded
// and not handed to Item: Known has taken it as handed over (a caller whose
// store already holds that object at that resourceVersion, which names one
// write in etcd, keeps its own copy). An item whose metadata cannot be read
// so (a field given twice, malformed bytes) is decoded as usual; a skipped
// item is not validated beyond its metadata. An error of Known ends the
// decoding and is returned as it is.
type Each struct {
	Transform Transform // applied to each item first; nil: none
	Head      func(list runtime.Object) error
	Item      func(obj runtime.Object) error
	Known     func(namespace, name, resourceVersion string) (bool, error)
}

// A list response body is decoded item by item, as it arrives,
// into a typed list (*corev1.ConfigMapList, ...). client-go's typed List
// reads the whole body into memory and then decodes it, so at its peak a
// client holds the response bytes (with the spare capacity of the buffer
// they were read into) and every decoded object at once. Decoding item by
// item holds one item's bytes at a time: the decoded objects are the same,
// the response bytes are never held whole. Both encodings an apiserver
// answers a typed client with are read: protobuf (client-go's default for
// built-in types: the "k8s\x00" envelope, a runtime.Unknown whose raw bytes
// are the list message) and JSON. Every length and key in the body is the
// server's and untrusted: a buffer grows only with bytes actually received,
// a field may not cross its message's end, and a truncated body is an error,
// never a shorter list.

// ErrListBody matches (errors.Is) every error of decoding a list response
// body item by item: truncated, malformed, or not a list.
var ErrListBody = errors.New("malformed list response body")

// BodyError is the error of decoding a list response body: where it
// failed (byte offset into the body) and why. It never holds body bytes.
// Package lister returns it as its ListBodyError (the same fields).
type BodyError struct {
	Encoding string // "protobuf" or "json"
	Offset   int64  // bytes of the body read before the failure
	Reason   string
	Err      error // the underlying error, if any (io.ErrUnexpectedEOF, ...)
}

func (e *BodyError) Error() string {
	s := fmt.Sprintf("lister: %s list response body at byte %d: %s", e.Encoding, e.Offset, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *BodyError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrListBody) true.
func (e *BodyError) Is(target error) bool { return target == ErrListBody }

// protoMagic opens every protobuf-encoded Kubernetes object
// (k8s.io/apimachinery/pkg/runtime/serializer/protobuf).
var protoMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// Shape is how a typed list type is laid out: its ListMeta and Items
// fields, their JSON keys and protobuf field numbers (read from the struct
// tags, as go-to-protobuf and encoding/json write and read them).
type Shape struct {
	listType            reflect.Type // *XList
	meta, items         int          // field indexes
	metaJSON, itemsJSON string
	// proto: the items have a generated protobuf Unmarshal and both fields
	// protobuf numbers (every built-in type; a custom resource's Go type
	// usually has neither, and is then decoded from JSON only).
	proto             bool
	metaNum, itemsNum uint64
	// protoKind, if set, is the only kind a protobuf answer may have (a
	// Status aside).
	protoKind string
}

// MetadataList is how *metav1.PartialObjectMetadataList is decoded:
// a protobuf answer must be one (the metadata client's Accept header asks for nothing else
// in protobuf; client-go's metadata client fails on any other protobuf
// kind, so does this), a JSON answer may be the resource's own list
// (items decoded as their metadata, as client-go does then; client-go
// decodes that one case with encoding/json, which also takes keys in
// another case, "Metadata", where this, like client-go's JSON serializer
// everywhere else, is case-sensitive).
var MetadataList = func() Shape {
	sh, ok := ShapeOf(reflect.TypeFor[*metav1.PartialObjectMetadataList]())
	if !ok || !sh.proto {
		panic("decode: metav1.PartialObjectMetadataList cannot be decoded item by item")
	}
	sh.protoKind = "PartialObjectMetadataList"
	return sh
}()

// Proto reports whether lists of this shape can be decoded from protobuf
// too (their items have generated protobuf code).
func (sh Shape) Proto() bool { return sh.proto }

// protoUnmarshaler is what go-to-protobuf generates for every built-in type.
type protoUnmarshaler interface{ Unmarshal([]byte) error }

// ShapeOf returns the shape of listType (a pointer to a list struct) and
// whether it can be decoded item by item: a metav1.ListMeta field and an
// Items slice of structs whose pointers are runtime.Objects, both with
// JSON keys. sh.proto tells whether it can be decoded from protobuf too.
func ShapeOf(listType reflect.Type) (sh Shape, ok bool) {
	if listType == nil || listType.Kind() != reflect.Pointer || listType.Elem().Kind() != reflect.Struct {
		return Shape{}, false
	}
	st := listType.Elem()
	meta, ok1 := st.FieldByName("ListMeta")
	items, ok2 := st.FieldByName("Items")
	if !ok1 || !ok2 || len(meta.Index) != 1 || len(items.Index) != 1 ||
		meta.Type != reflect.TypeFor[metav1.ListMeta]() || items.Type.Kind() != reflect.Slice || items.Type.Elem().Kind() != reflect.Struct {
		return Shape{}, false
	}
	ip := reflect.PointerTo(items.Type.Elem())
	if !ip.Implements(reflect.TypeFor[runtime.Object]()) {
		return Shape{}, false
	}
	sh = Shape{listType: listType, meta: meta.Index[0], items: items.Index[0]}
	if sh.metaJSON = jsonTagKey(meta); sh.metaJSON == "" {
		return Shape{}, false
	}
	if sh.itemsJSON = jsonTagKey(items); sh.itemsJSON == "" {
		return Shape{}, false
	}
	sh.metaNum, sh.itemsNum = protoNum(meta), protoNum(items)
	sh.proto = ip.Implements(reflect.TypeFor[protoUnmarshaler]()) && sh.metaNum > 0 && sh.itemsNum > 0 && sh.metaNum != sh.itemsNum
	return sh, true
}

// jsonTagKey reads a field's JSON key (`json:"items"`); "" if it has none.
func jsonTagKey(f reflect.StructField) string {
	key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if key == "-" {
		return ""
	}
	return key
}

// protoNum reads a field's protobuf field number
// (`protobuf:"bytes,2,rep,name=items"`); 0 if it has none.
func protoNum(f reflect.StructField) uint64 {
	parts := strings.Split(f.Tag.Get("protobuf"), ",")
	if len(parts) < 2 || parts[0] != "bytes" {
		return 0
	}
	num, err := strconv.ParseUint(parts[1], 10, 32)
	if err != nil {
		return 0
	}
	return num
}

// List decodes body (a 2xx list response) into a new list of sh's type,
// with each.Transform (if set) applied to each item as soon as it is
// decoded, before the next one is read: what it drops is garbage before the
// list is complete. A failing transform ends the decoding with its error.
// With each.Item set, items are handed over instead of kept (Each). A
// Status in place of the list is returned as its API error, as client-go's
// typed client does.
func List(body io.Reader, sh Shape, each *Each) (runtime.Object, error) {
	br, proto, err := openBody(body)
	if err != nil {
		return nil, err
	}
	list := reflect.New(sh.listType.Elem())
	d := listDecoding{sh: sh, list: list.Elem()}
	if each != nil {
		d.tf = each.Transform
		if each.Item != nil {
			d.each = each
		}
	}
	if proto {
		if !sh.proto {
			return nil, &BodyError{Encoding: "protobuf", Reason: fmt.Sprintf("a protobuf answer, but %v has no generated protobuf code", sh.listType.Elem())}
		}
		err = d.proto(&countingReader{r: br})
	} else {
		err = d.json(br)
	}
	if err == nil && d.each != nil {
		err = d.flush()
	}
	if err != nil {
		return nil, err
	}
	return list.Interface().(runtime.Object), nil
}

// openBody buffers body and tells a protobuf body (the magic) from JSON.
func openBody(body io.Reader) (br *bufio.Reader, proto bool, err error) {
	br = bufio.NewReaderSize(body, 64<<10)
	head, err := br.Peek(len(protoMagic))
	if len(head) == 0 {
		return nil, false, &BodyError{Encoding: "unknown", Reason: "empty body", Err: orUnexpectedEOF(err)}
	}
	return br, bytes.Equal(head, protoMagic), nil
}

// listDecoding is one list being decoded: a typed list (sh, list) or an
// unstructured one (ul).
type listDecoding struct {
	sh   Shape
	list reflect.Value // the list struct (addressable)
	ul   *unstructured.UnstructuredList
	buf  bytes.Buffer // one field's bytes, reused
	tf   Transform    // applied to each item once decoded; nil: none
	n    int          // items decoded so far (Each.Known's included)

	// each, when set, receives the items instead of the list (Each.Item).
	// held are items decoded before the list was ready to be handed over
	// (ready); headed: Head was called.
	each   *Each
	held   []runtime.Object
	headed bool

	// What was read of the list: its metadata, its kind (JSON), whether
	// it had a kind and an apiVersion (JSON).
	sawMeta          bool
	kind             string
	sawKind, sawAPIV bool
}

// Unstructured decodes body (a 2xx JSON list response of a dynamic
// client's request) into an *unstructured.UnstructuredList equal to the one
// client-go's unstructured JSON decoding returns (every top-level key but
// items in Object; items given the list's kind and apiVersion when they have
// neither), item by item, with each.Transform (if set) applied to each item
// as soon as it is decoded (given the list's kind and apiVersion first when
// the list's own came before its items, as an apiserver writes them). With
// each.Item set, items are handed over instead of kept (Each); items are
// then also held until the list's kind and apiVersion are read, so each is
// handed over with them. A Status in place of the list is returned as its
// API error.
func Unstructured(body io.Reader, each *Each) (*unstructured.UnstructuredList, error) {
	br, proto, err := openBody(body)
	if err != nil {
		return nil, err
	}
	if proto {
		return nil, &BodyError{Encoding: "protobuf", Reason: "a protobuf answer to a dynamic client's JSON request"}
	}
	ul := &unstructured.UnstructuredList{Object: map[string]any{}, Items: []unstructured.Unstructured{}}
	d := listDecoding{ul: ul}
	if each != nil {
		d.tf = each.Transform
		if each.Item != nil {
			d.each = each
		}
	}
	err = d.json(br)
	if err == nil && d.each != nil {
		err = d.flush()
	}
	if err != nil {
		return nil, err
	}
	return ul, nil
}

// ready reports whether items may be handed over as they are decoded: the
// list's metadata was read (and, for an unstructured list, its kind and
// apiVersion), and the list is not a Status.
func (d *listDecoding) ready() bool {
	if !d.sawMeta || d.kind == "Status" {
		return false
	}
	return d.ul == nil || (d.sawKind && d.sawAPIV)
}

// errMetaAgain: with a hand-over, the list's metadata given a second time
// after Head is an error, since the items handed over were checked against
// the first.
var errMetaAgain = errors.New("the list's metadata given again after its items")

// handOver hands obj (a decoded, transformed item) over, or holds it while
// the list is not ready.
func (d *listDecoding) handOver(obj runtime.Object) error {
	if !d.headed {
		if !d.ready() {
			d.held = append(d.held, obj)
			return nil
		}
		if err := d.flush(); err != nil {
			return err
		}
	}
	if d.ul != nil {
		d.kinded(obj.(*unstructured.Unstructured))
	}
	return d.each.Item(obj)
}

// flush calls Head, once, then hands over the items held so far. It is
// called when the list becomes ready, and at the end of the body.
func (d *listDecoding) flush() error {
	if d.each == nil || d.headed {
		return nil
	}
	d.headed = true
	if d.each.Head != nil {
		var list runtime.Object = d.ul
		if d.ul == nil {
			list = d.list.Addr().Interface().(runtime.Object)
		}
		if err := d.each.Head(list); err != nil {
			return err
		}
	}
	held := d.held
	d.held = nil
	for i, obj := range held {
		held[i] = nil
		if d.ul != nil {
			d.kinded(obj.(*unstructured.Unstructured))
		}
		if err := d.each.Item(obj); err != nil {
			return err
		}
	}
	return nil
}

// kinded gives it the list's kind and apiVersion when it has neither, as
// client-go's unstructured decoding does for a built-in resource's items.
func (d *listDecoding) kinded(it *unstructured.Unstructured) {
	if it.GetKind() == "" && it.GetAPIVersion() == "" && d.ul.GetKind() != "" {
		it.SetKind(strings.TrimSuffix(d.ul.GetKind(), "List"))
		it.SetAPIVersion(d.ul.GetAPIVersion())
	}
}

// newItem returns the address of a zero item: a new one when items are
// handed over, else one appended to the list's Items.
func (d *listDecoding) newItem() reflect.Value {
	items := d.list.Field(d.sh.items)
	if d.each != nil {
		return reflect.New(items.Type().Elem())
	}
	n := items.Len()
	if n == items.Cap() {
		items.Grow(1)
	}
	items.SetLen(n + 1)
	return items.Index(n).Addr()
}

// countingReader counts the bytes read, for error offsets and for fields
// that must end within their message.
type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

const (
	wireVarint = 0
	wireI64    = 1
	wireLen    = 2
	wireI32    = 5
)

// proto reads the envelope: the magic, then runtime.Unknown's fields
// (1 typeMeta, 2 raw: the list message, 3 contentEncoding, 4 contentType).
func (d *listDecoding) proto(r *countingReader) error {
	fail := func(reason string, err error) error {
		return &BodyError{Encoding: "protobuf", Offset: r.n, Reason: reason, Err: err}
	}
	if _, err := io.CopyN(io.Discard, r, int64(len(protoMagic))); err != nil {
		return fail("reading the magic", err)
	}
	var typeMeta runtime.TypeMeta
	sawRaw := false
	for {
		num, wire, err := readTag(r)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail("reading a field of the envelope", err)
		}
		switch {
		case num == 1 && wire == wireLen:
			b, err := d.field(r, -1)
			if err != nil {
				return fail("reading the envelope's typeMeta", err)
			}
			if err := typeMeta.Unmarshal(b); err != nil {
				return fail("decoding the envelope's typeMeta", err)
			}
		case num == 2 && wire == wireLen && !sawRaw:
			sawRaw = true
			if k := d.sh.protoKind; k != "" && typeMeta.Kind != k && typeMeta.Kind != "Status" {
				return fail(fmt.Sprintf("a protobuf answer of kind %q, not %q", typeMeta.Kind, k), nil)
			}
			if typeMeta.Kind == "Status" {
				b, err := d.field(r, -1)
				if err != nil {
					return fail("reading a Status", err)
				}
				var st metav1.Status
				if err := st.Unmarshal(b); err != nil {
					return fail("decoding a Status", err)
				}
				return &apierrors.StatusError{ErrStatus: st}
			}
			n, err := binary.ReadUvarint(r)
			if err != nil {
				return fail("reading the list's length", orUnexpectedEOF(err))
			}
			if err := d.protoList(r, n, fail); err != nil {
				return err
			}
		case num == 3 && wire == wireLen:
			b, err := d.field(r, -1)
			if err != nil {
				return fail("reading the envelope's contentEncoding", err)
			}
			if len(b) > 0 {
				return fail(fmt.Sprintf("unsupported contentEncoding (%d bytes)", len(b)), nil)
			}
		default:
			if err := d.skip(r, wire, -1); err != nil {
				return fail(fmt.Sprintf("skipping envelope field %d", num), err)
			}
		}
	}
	if !sawRaw {
		return fail("no list in the envelope", io.ErrUnexpectedEOF)
	}
	return nil
}

// protoList reads the list message of size bytes: ListMeta and one item at
// a time; other fields are skipped.
func (d *listDecoding) protoList(r *countingReader, size uint64, fail func(string, error) error) error {
	if size > 1<<62 {
		return fail("list length out of range", nil)
	}
	end := r.n + int64(size)
	for r.n < end {
		num, wire, err := readTag(r)
		if err != nil {
			return fail("reading a field of the list", orUnexpectedEOF(err))
		}
		if r.n > end {
			return fail("a field tag crosses the list's end", nil)
		}
		left := end - r.n
		switch {
		case num == d.sh.itemsNum && wire == wireLen:
			i := d.n
			b, err := d.field(r, left)
			if err != nil {
				return fail(fmt.Sprintf("reading item %d", i), err)
			}
			if d.each != nil && d.each.Known != nil && d.headed { // see known
				if ns, name, rv, ok := protoItemMeta(b); ok {
					known, err := d.known(ns, name, rv)
					if err != nil {
						return err
					}
					if known {
						continue
					}
				}
			}
			item := d.newItem()
			if err := item.Interface().(protoUnmarshaler).Unmarshal(b); err != nil {
				return fail(fmt.Sprintf("decoding item %d", i), err)
			}
			d.n++
			if d.tf != nil {
				if err := d.transformItem(item); err != nil {
					return err
				}
			}
			if d.each != nil {
				if err := d.handOver(item.Interface().(runtime.Object)); err != nil {
					return err
				}
			}
		case num == d.sh.metaNum && wire == wireLen:
			b, err := d.field(r, left)
			if err != nil {
				return fail("reading the list's metadata", err)
			}
			if d.sawMeta = true; d.headed {
				return fail("decoding the list's metadata", errMetaAgain)
			}
			// Repeated message fields merge, as in proto.Unmarshal.
			if err := d.list.Field(d.sh.meta).Addr().Interface().(protoUnmarshaler).Unmarshal(b); err != nil {
				return fail("decoding the list's metadata", err)
			}
			if d.each != nil && d.ready() {
				if err := d.flush(); err != nil {
					return err
				}
			}
		default:
			if err := d.skip(r, wire, left); err != nil {
				return fail(fmt.Sprintf("skipping list field %d", num), err)
			}
		}
	}
	if r.n != end {
		return fail("a field crosses the list's end", nil)
	}
	return nil
}

// known asks Each.Known about an item; a known item counts as decoded. An
// item is offered to it only when items are handed over and Head was
// called (an item that comes before the list's metadata is decoded and
// held, as without Known).
func (d *listDecoding) known(namespace, name, rv string) (bool, error) {
	known, err := d.each.Known(namespace, name, rv)
	if err != nil || !known {
		return false, err
	}
	d.n++
	return true, nil
}

// The protobuf field numbers of an object's metadata (ObjectMeta, field 1
// of every built-in object and of PartialObjectMetadata) and of its name,
// namespace and resourceVersion (k8s.io/apimachinery/pkg/apis/meta/v1's
// generated.proto).
const (
	protoObjectMeta      = 1
	protoMetaName        = 1
	protoMetaNamespace   = 3
	protoMetaResourceVer = 6
)

// protoItemMeta reads an item's namespace, name and resourceVersion from
// its protobuf bytes without decoding the rest; ok is false when they
// cannot be read unambiguously (malformed bytes, the metadata or one of
// those fields given twice, which a decoder would merge): the item is then
// decoded.
func protoItemMeta(b []byte) (namespace, name, rv string, ok bool) {
	var meta []byte
	sawMeta := false
	err := protoFields(b, func(num uint64, v []byte) bool {
		if num != protoObjectMeta {
			return true
		}
		if sawMeta {
			return false
		}
		sawMeta, meta = true, v
		return true
	})
	if err != nil || !sawMeta {
		return "", "", "", false
	}
	var seen [protoMetaResourceVer + 1]bool
	err = protoFields(meta, func(num uint64, v []byte) bool {
		switch num {
		case protoMetaName, protoMetaNamespace, protoMetaResourceVer:
			if seen[num] {
				return false
			}
			seen[num] = true
			switch num {
			case protoMetaName:
				name = string(v)
			case protoMetaNamespace:
				namespace = string(v)
			default:
				rv = string(v)
			}
		}
		return true
	})
	if err != nil || name == "" || rv == "" {
		return "", "", "", false
	}
	return namespace, name, rv, true
}

// errFieldRefused ends protoFields when its function refuses a field.
var errFieldRefused = errors.New("field refused")

// protoFields walks the fields of one protobuf message held in b, calling
// fn with each length-delimited field's number and bytes (other wire types
// are skipped); fn returning false, or a field crossing b's end, ends the
// walk with an error.
func protoFields(b []byte, fn func(num uint64, v []byte) bool) error {
	for len(b) > 0 {
		t, k := binary.Uvarint(b)
		if k <= 0 || t>>3 == 0 {
			return errors.New("malformed field tag")
		}
		b = b[k:]
		num, wire := t>>3, int(t&7)
		var n uint64
		switch wire {
		case wireVarint:
			if _, k = binary.Uvarint(b); k <= 0 {
				return errors.New("malformed varint")
			}
			n = uint64(k)
		case wireI64:
			n = 8
		case wireI32:
			n = 4
		case wireLen:
			l, k := binary.Uvarint(b)
			if k <= 0 || l > uint64(len(b)-k) {
				return errors.New("field length beyond its message's end")
			}
			b = b[k:]
			if !fn(num, b[:l]) {
				return errFieldRefused
			}
			n = l
		default:
			return fmt.Errorf("unsupported wire type %d", wire)
		}
		if n > uint64(len(b)) {
			return errors.New("field beyond its message's end")
		}
		b = b[n:]
	}
	return nil
}

// jsonItemMeta reads an item's namespace, name and resourceVersion from its
// JSON "metadata" alone (case-sensitive, as the item's decoding reads it);
// ok is false when they cannot be read: the item is then decoded.
func jsonItemMeta(raw []byte) (namespace, name, rv string, ok bool) {
	var it struct {
		Metadata *struct {
			Name            string `json:"name"`
			Namespace       string `json:"namespace"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &it); err != nil || it.Metadata == nil {
		return "", "", "", false
	}
	m := it.Metadata
	if m.Name == "" || m.ResourceVersion == "" {
		return "", "", "", false
	}
	return m.Namespace, m.Name, m.ResourceVersion, true
}

// readTag reads a field tag; io.EOF only when nothing was read.
func readTag(r *countingReader) (num uint64, wire int, err error) {
	before := r.n
	t, err := binary.ReadUvarint(r)
	if err != nil {
		if err == io.EOF && r.n == before {
			return 0, 0, io.EOF
		}
		return 0, 0, orUnexpectedEOF(err)
	}
	num, wire = t>>3, int(t&7)
	if num == 0 {
		return 0, 0, errors.New("field number 0")
	}
	return num, wire, nil
}

// field reads a length-delimited field's length and bytes into d.buf (valid
// until the next call). max < 0: no bound but the body's; else the field
// (length prefix included) must fit in max bytes.
func (d *listDecoding) field(r *countingReader, max int64) ([]byte, error) {
	before := r.n
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, orUnexpectedEOF(err)
	}
	if n > 1<<62 || (max >= 0 && int64(n) > max-(r.n-before)) {
		return nil, fmt.Errorf("field length %d beyond its message's end", n)
	}
	d.buf.Reset()
	// The buffer grows with the bytes that arrive, not with the length the
	// body claims.
	if _, err := io.CopyN(&d.buf, r, int64(n)); err != nil {
		return nil, orUnexpectedEOF(err)
	}
	return d.buf.Bytes(), nil
}

// skip skips a field's value of the given wire type.
func (d *listDecoding) skip(r *countingReader, wire int, max int64) error {
	var n int64
	switch wire {
	case wireVarint:
		_, err := binary.ReadUvarint(r)
		return orUnexpectedEOF(err)
	case wireI64:
		n = 8
	case wireI32:
		n = 4
	case wireLen:
		_, err := d.field(r, max)
		return err
	default:
		return fmt.Errorf("unsupported wire type %d", wire)
	}
	if max >= 0 && n > max {
		return errors.New("field beyond its message's end")
	}
	_, err := io.CopyN(io.Discard, r, n)
	return orUnexpectedEOF(err)
}

func orUnexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// json reads a JSON list: the top-level object's keys one at a time; each
// item of "items" is read whole (jsonLexer) and decoded on its own, with
// the decoding client-go's JSON serializer uses for typed objects
// (sigs.k8s.io/json.UnmarshalCaseSensitivePreserveInts), which also
// validates it.
func (d *listDecoding) json(r *bufio.Reader) error {
	l := &jsonLexer{r: r}
	fail := func(reason string, err error) error {
		return &BodyError{Encoding: "json", Offset: l.n, Reason: reason, Err: orUnexpectedEOF(err)}
	}
	if err := l.consume('{'); err != nil {
		return fail("reading the list object", err)
	}
	var rest map[string]json.RawMessage // every key but items, kept for a Status
	sawItems := false
	itemsKey, metaKey := d.sh.itemsJSON, d.sh.metaJSON
	if d.ul != nil {
		itemsKey, metaKey = "items", "metadata"
	}
	for more, err := l.first('}'); more || err != nil; more, err = l.more('}') {
		if err != nil {
			return fail("reading the list object", err)
		}
		raw, err := l.value()
		if err != nil {
			return fail("reading a key", err)
		}
		var key string
		if raw[0] != '"' || json.Unmarshal(raw, &key) != nil {
			return fail("a key that is not a string", nil)
		}
		if err := l.consume(':'); err != nil {
			return fail(fmt.Sprintf("reading %q", key), err)
		}
		if key != itemsKey {
			if raw, err = l.value(); err != nil {
				return fail(fmt.Sprintf("reading %q", key), err)
			}
			if rest == nil {
				rest = map[string]json.RawMessage{}
			}
			rest[key] = append(json.RawMessage(nil), raw...)
			switch key {
			case "kind":
				d.sawKind = true
				_ = json.Unmarshal(raw, &d.kind)
			case "apiVersion":
				d.sawAPIV = true
			case metaKey:
				if d.sawMeta = true; d.headed {
					return fail(fmt.Sprintf("decoding %q", key), errMetaAgain)
				}
			}
			if err := d.jsonKey(key, raw); err != nil {
				return fail(fmt.Sprintf("decoding %q", key), err)
			}
			if d.each != nil && !d.headed && d.ready() {
				if err := d.flush(); err != nil {
					return err
				}
			}
			continue
		}
		if sawItems {
			return fail("items given twice", nil)
		}
		sawItems = true
		if c, err := l.next(); err != nil {
			return fail("reading items", err)
		} else if c != '[' {
			if raw, err = l.value(); err != nil || string(raw) != "null" {
				return fail("items is not an array", err)
			}
			continue // "items": null
		}
		_ = l.consume('[')
		if d.ul == nil {
			if items := d.list.Field(d.sh.items); items.IsNil() {
				items.Set(reflect.MakeSlice(items.Type(), 0, 0)) // "items": [] is not null
			}
		}
		for more, err := l.first(']'); more || err != nil; more, err = l.more(']') {
			if err != nil {
				return fail(fmt.Sprintf("reading item %d", d.n), err)
			}
			i := d.n
			raw, err := l.value()
			if err != nil {
				return fail(fmt.Sprintf("reading item %d", i), err)
			}
			if err := d.jsonItem(raw); err != nil {
				var tf *callerFailed
				if errors.As(err, &tf) {
					return tf.err
				}
				return fail(fmt.Sprintf("decoding item %d", i), err)
			}
		}
	}
	if d.kind == "Status" {
		b, _ := json.Marshal(rest)
		var st metav1.Status
		if err := kjson.UnmarshalCaseSensitivePreserveInts(b, &st); err != nil {
			return fail("decoding a Status", err)
		}
		return &apierrors.StatusError{ErrStatus: st}
	}
	if _, err := l.next(); err != io.EOF {
		return fail("data after the list object", err)
	}
	if d.ul != nil {
		// What client-go's unstructured decoding does: items without kind
		// and apiVersion (a built-in resource's) get them from the list.
		itemKind := strings.TrimSuffix(d.ul.GetKind(), "List")
		for i := range d.ul.Items {
			if it := &d.ul.Items[i]; it.GetKind() == "" && it.GetAPIVersion() == "" {
				it.SetKind(itemKind)
				it.SetAPIVersion(d.ul.GetAPIVersion())
			}
		}
	}
	return nil
}

// jsonItem decodes one item of "items".
func (d *listDecoding) jsonItem(raw []byte) error {
	if d.each != nil && d.each.Known != nil && d.headed { // see known
		if ns, name, rv, ok := jsonItemMeta(raw); ok {
			known, err := d.known(ns, name, rv)
			if err != nil {
				return &callerFailed{err}
			}
			if known {
				return nil
			}
		}
	}
	if d.ul != nil {
		m := map[string]any{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &m); err != nil {
			return err
		}
		d.n++
		var it *unstructured.Unstructured
		if d.each == nil {
			d.ul.Items = append(d.ul.Items, unstructured.Unstructured{Object: m})
			it = &d.ul.Items[len(d.ul.Items)-1]
		} else {
			it = &unstructured.Unstructured{Object: m}
		}
		if d.tf != nil {
			// As the end of json does for every item: the transform sees
			// the item as it is kept.
			d.kinded(it)
			if err := d.transformItem(reflect.ValueOf(it)); err != nil {
				return &callerFailed{err}
			}
		}
		if d.each != nil {
			if err := d.handOver(it); err != nil {
				return &callerFailed{err}
			}
		}
		return nil
	}
	item := d.newItem()
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, item.Interface()); err != nil {
		return err
	}
	d.n++
	if d.tf != nil {
		if err := d.transformItem(item); err != nil {
			return &callerFailed{err}
		}
	}
	if d.each != nil {
		if err := d.handOver(item.Interface().(runtime.Object)); err != nil {
			return &callerFailed{err}
		}
	}
	return nil
}

// callerFailed marks an error of d.tf or of d.each's functions, which ends
// the decoding as it is (not as a malformed body).
type callerFailed struct{ err error }

func (e *callerFailed) Error() string { return e.err.Error() }

// transformItem applies d.tf (set) to the item item points to (an element
// of the list's Items), in place: a transform that returns another object
// of the same type has it copied into the element.
func (d *listDecoding) transformItem(item reflect.Value) error {
	obj := item.Interface().(runtime.Object)
	out, err := d.tf(obj)
	if err != nil {
		return err
	}
	if out != obj {
		item.Elem().Set(reflect.ValueOf(out).Elem())
	}
	return nil
}

// jsonKey decodes a top-level key other than "items": a typed list keeps
// its metadata, an unstructured list every key.
func (d *listDecoding) jsonKey(key string, raw []byte) error {
	if d.ul != nil {
		var v any
		if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &v); err != nil {
			return err
		}
		d.ul.Object[key] = v
		return nil
	}
	switch key {
	case d.sh.metaJSON:
		return kjson.UnmarshalCaseSensitivePreserveInts(raw, d.list.Field(d.sh.meta).Addr().Interface())
	case "kind", "apiVersion": // the list's TypeMeta: strings
		var s string
		return kjson.UnmarshalCaseSensitivePreserveInts(raw, &s)
	}
	if !json.Valid(raw) {
		return errors.New("invalid JSON")
	}
	return nil
}

// jsonLexer reads the structure of a JSON list body: punctuation, and each
// value whole as bytes without decoding it (strings, nesting and escapes
// are tracked only to find where the value ends; kjson validates it when
// it decodes it). It scans the buffered bytes in chunks, several times
// faster than encoding/json's Decoder, which runs its full scanner.
type jsonLexer struct {
	r   *bufio.Reader
	n   int64  // bytes consumed
	buf []byte // the last value read; reused
}

// next skips whitespace and returns the next byte without consuming it.
func (l *jsonLexer) next() (byte, error) {
	for {
		b, err := l.r.ReadByte()
		if err != nil {
			return 0, err
		}
		if b != ' ' && b != '\t' && b != '\r' && b != '\n' {
			_ = l.r.UnreadByte()
			return b, nil
		}
		l.n++
	}
}

// consume consumes the next non-whitespace byte, which must be want.
func (l *jsonLexer) consume(want byte) error {
	b, err := l.next()
	if err != nil {
		return orUnexpectedEOF(err)
	}
	if b != want {
		return fmt.Errorf("found %q, want %q", b, want)
	}
	_, _ = l.r.ReadByte()
	l.n++
	return nil
}

// first reports whether a container just opened has a first member (false
// when it is closed at once by end, which is consumed).
func (l *jsonLexer) first(end byte) (bool, error) {
	b, err := l.next()
	if err != nil {
		return false, orUnexpectedEOF(err)
	}
	if b == end {
		return false, l.consume(end)
	}
	return true, nil
}

// more consumes the separator after a member and reports whether another
// follows (false when end, consumed, closes the container).
func (l *jsonLexer) more(end byte) (bool, error) {
	b, err := l.next()
	if err != nil {
		return false, orUnexpectedEOF(err)
	}
	switch b {
	case ',':
		return true, l.consume(',')
	case end:
		return false, l.consume(end)
	}
	return false, fmt.Errorf("found %q after a value, want ',' or %q", b, end)
}

// value reads the next JSON value whole into l.buf and returns it (valid
// until the next call).
func (l *jsonLexer) value() ([]byte, error) {
	c, err := l.next()
	if err != nil {
		return nil, orUnexpectedEOF(err)
	}
	l.buf = l.buf[:0]
	if c != '{' && c != '[' && c != '"' {
		// A number, true, false or null: up to the next delimiter.
		for {
			b, err := l.r.ReadByte()
			if err != nil {
				return nil, orUnexpectedEOF(err)
			}
			switch b {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				_ = l.r.UnreadByte()
				if len(l.buf) == 0 {
					return nil, fmt.Errorf("found %q, want a value", b)
				}
				return l.buf, nil
			}
			l.buf = append(l.buf, b)
			l.n++
		}
	}
	depth, inString, escaped := 0, false, false
	for {
		if l.r.Buffered() == 0 {
			if _, err := l.r.Peek(1); err != nil {
				return nil, orUnexpectedEOF(err)
			}
		}
		chunk, _ := l.r.Peek(l.r.Buffered())
		end := -1
	scan:
		for i, b := range chunk {
			if inString {
				switch {
				case escaped:
					escaped = false
				case b == '\\':
					escaped = true
				case b == '"':
					inString = false
					if depth == 0 {
						end = i + 1
						break scan
					}
				}
				continue
			}
			switch b {
			case '"':
				inString = true
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth <= 0 {
					end = i + 1
					break scan
				}
			}
		}
		k := end
		if k < 0 {
			k = len(chunk)
		}
		l.buf = append(l.buf, chunk[:k]...)
		_, _ = l.r.Discard(k)
		l.n += int64(k)
		if end >= 0 {
			return l.buf, nil
		}
	}
}
