package faults

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/framer"
)

// StreamFaults change forwarded watch streams event by event, as proxies and
// aggregated apiservers in the field have done. The zero value changes
// nothing (the stream is copied byte for byte). Each field names the public
// report it reproduces.
//
// They apply to watch responses (status 200) in JSON or protobuf; a stream in
// another encoding (CBOR) is forwarded unchanged. A stream keeps the faults
// that were set when its request arrived; while any is set, watches are
// requested from the backend without Accept-Encoding (uncompressed), since
// the apiserver gzips watch streams for clients that accept it.
type StreamFaults struct {
	// DropBookmarks removes every BOOKMARK event, the initial-events-end one
	// included: a proxy that filters the events it cannot authorize
	// (gravitational/teleport#64188), so a streaming list never ends.
	DropBookmarks bool
	// StripInitialEventsEnd removes the k8s.io/initial-events-end
	// annotation from bookmarks and keeps the bookmark: an aggregated API
	// that marks the end of the initial events without it
	// (antrea-io/antrea#8123).
	StripInitialEventsEnd bool
	// CutBeforeInitialEventsEnd ends a streaming list's stream cleanly right
	// before its initial-events-end bookmark, every time: the client gets
	// every initial event and then the end of the stream
	// (kubernetes/kubernetes#140890).
	CutBeforeInitialEventsEnd bool
	// CloseAfterInitialEventsEnd ends the stream cleanly right after the
	// initial-events-end bookmark.
	CloseAfterInitialEventsEnd bool
	// ExpireInitialEventsEndRV answers a later plain watch (no
	// sendInitialEvents) from the resourceVersion of an initial-events-end
	// bookmark this proxy forwarded with 410 Expired, as a watch ERROR event
	// like the watch cache: the bookmark's resourceVersion is already too old
	// when the client resumes from it (kubernetes/kubernetes#134837).
	ExpireInitialEventsEndRV bool
	// BookmarkRV, when set, replaces the resourceVersion of every BOOKMARK
	// that does not end a streaming list's initial events: a bookmark whose
	// resourceVersion is not one. A client that resumes from it gets what a
	// real server answers for that resourceVersion.
	BookmarkRV string
	// EndAfterBookmarkRV, with BookmarkRV, ends the stream cleanly right
	// after each rewritten bookmark: the last word of the watch is a
	// resourceVersion that is not one, so a client that adopts it resumes
	// from it (the server-side shape of a watch that closes after a bad
	// bookmark without progress).
	EndAfterBookmarkRV bool
	// RedeliverOlder sends, right after a MODIFIED event, the previous
	// MODIFIED event this stream carried for the same object again (an older
	// resourceVersion after a newer one): a watch cache re-delivering
	// history (kubernetes/kubernetes#73845), or a proxy mixing streams
	// (linkerd/linkerd#1680).
	RedeliverOlder bool
	// PauseAfterEvents, with PauseFor, holds the stream once, after that
	// many events were forwarded, for PauseFor, then forwards the rest: a
	// real apiserver that pauses mid-stream while it serves a large
	// streaming list under load. 0 = no pause.
	PauseAfterEvents int
	PauseFor         time.Duration
	// DelayEvents holds every event (bookmarks too) back by this long from
	// when the proxy read it, keeping their order: a watch that lags behind
	// the writes the apiserver already answered, as a watch cache or a
	// proxy under load does (kubernetes/kubernetes#59848). Reads of the
	// same server are not delayed. 0 = none.
	DelayEvents time.Duration
	// WatchTimeout caps each watch's timeoutSeconds at this long (whole
	// seconds, at least 1), adding it where the client sent none. A real
	// apiserver's watch cache sends a watch's bookmark 2 s before its
	// timeout, and otherwise about once a minute (k8s.io/apiserver's
	// cacheWatcher.nextBookmarkTime), then ends the watch: a short cap
	// brings the server's own bookmarks within seconds. 0 = the client's.
	WatchTimeout time.Duration
}

func (f StreamFaults) active() bool { return f != StreamFaults{} }

// SetStreamFaults replaces the stream faults for watch requests that arrive
// from now on; StreamFaults{} stops them. Resource versions already expired
// by ExpireInitialEventsEndRV stay expired until ClearExpired.
func (p *Proxy) SetStreamFaults(f StreamFaults) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.streamFaults = f
}

// ClearExpired forgets the resource versions expired by
// ExpireInitialEventsEndRV.
func (p *Proxy) ClearExpired() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expired = nil
}

func (p *Proxy) currentStreamFaults() StreamFaults {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.streamFaults
}

func (p *Proxy) expire(rv string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.expired == nil {
		p.expired = map[string]bool{}
	}
	p.expired[rv] = true
}

// expiredWatch reports whether q is a plain watch from an expired resource
// version.
func (p *Proxy) expiredWatch(info requestInfo, q url.Values) (string, bool) {
	if info.Verb != "watch" || q.Get("sendInitialEvents") == "true" {
		return "", false
	}
	rv := q.Get("resourceVersion")
	p.mu.Lock()
	defer p.mu.Unlock()
	return rv, rv != "" && p.expired[rv]
}

// expiredRule is the 410 a watch cache sends for a resourceVersion it no
// longer holds: "too old resource version: N (M)" with M the oldest it has.
func expiredRule(rv string) Rule {
	next := rv
	if n, err := strconv.ParseUint(rv, 10, 64); err == nil {
		next = strconv.FormatUint(n+1, 10)
	}
	return Rule{Verb: "watch", Status: http.StatusGone, AsWatchEvent: true,
		Message: fmt.Sprintf("too old resource version: %s (%s)", rv, next)}
}

// watchMedia returns the encoding of a watch response from its Content-Type:
// mediaJSON, mediaProtobuf, or "" for anything else.
func watchMedia(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	switch mt {
	case mediaJSON:
		return mediaJSON
	case mediaProtobuf:
		return mediaProtobuf
	}
	return ""
}

// eventInfo is what stream faults need to know about one watch event.
type eventInfo struct {
	Type             string
	Namespace, Name  string
	ResourceVersion  string
	InitialEventsEnd bool // a BOOKMARK annotated k8s.io/initial-events-end: "true"
}

// errBadFrame is wrapped by the errors of inspectEvent and stripInitialEventsEnd.
var errBadFrame = errors.New("faults: undecodable watch event")

// frameReader returns a reader of the frames of a watch stream in media.
func frameReader(media string, body io.ReadCloser) io.ReadCloser {
	if media == mediaProtobuf {
		return framer.NewLengthDelimitedFrameReader(body)
	}
	return framer.NewJSONFramedReader(body)
}

// readFrame reads one whole frame, however large, reusing buf.
func readFrame(r io.Reader, buf []byte) ([]byte, error) {
	var frame []byte
	for {
		n, err := r.Read(buf)
		frame = append(frame, buf[:n]...)
		if errors.Is(err, io.ErrShortBuffer) {
			continue
		}
		return frame, err
	}
}

// frame returns event framed for media as the apiserver writes it: JSON
// followed by a newline, or protobuf with a 4-byte big-endian length.
func frame(media string, event []byte) []byte {
	if media == mediaProtobuf {
		out := make([]byte, 4, 4+len(event))
		binary.BigEndian.PutUint32(out, uint32(len(event)))
		return append(out, event...)
	}
	return append(append(make([]byte, 0, len(event)+1), event...), '\n')
}

func inspectEvent(media string, event []byte) (eventInfo, error) {
	if media == mediaProtobuf {
		return inspectProtobuf(event)
	}
	return inspectJSON(event)
}

// stripInitialEventsEnd returns event without the initial-events-end
// annotation.
func stripInitialEventsEnd(media string, event []byte) ([]byte, error) {
	if media == mediaProtobuf {
		return stripProtobuf(event)
	}
	return stripJSON(event)
}

func inspectJSON(event []byte) (eventInfo, error) {
	var ev struct {
		Type   string `json:"type"`
		Object struct {
			Metadata struct {
				Namespace       string            `json:"namespace"`
				Name            string            `json:"name"`
				ResourceVersion string            `json:"resourceVersion"`
				Annotations     map[string]string `json:"annotations"`
			} `json:"metadata"`
		} `json:"object"`
	}
	if err := json.Unmarshal(event, &ev); err != nil {
		return eventInfo{}, fmt.Errorf("%w: JSON: %v", errBadFrame, err)
	}
	md := ev.Object.Metadata
	return eventInfo{Type: ev.Type, Namespace: md.Namespace, Name: md.Name, ResourceVersion: md.ResourceVersion,
		InitialEventsEnd: ev.Type == "BOOKMARK" && md.Annotations[metav1.InitialEventsAnnotationKey] == "true"}, nil
}

func stripJSON(event []byte) ([]byte, error) {
	var ev, obj, md map[string]json.RawMessage
	var ann map[string]json.RawMessage
	if err := json.Unmarshal(event, &ev); err != nil {
		return nil, fmt.Errorf("%w: JSON: %v", errBadFrame, err)
	}
	if err := json.Unmarshal(ev["object"], &obj); err != nil {
		return nil, fmt.Errorf("%w: JSON object: %v", errBadFrame, err)
	}
	if err := json.Unmarshal(obj["metadata"], &md); err != nil {
		return nil, fmt.Errorf("%w: JSON metadata: %v", errBadFrame, err)
	}
	if raw, ok := md["annotations"]; ok {
		if err := json.Unmarshal(raw, &ann); err != nil {
			return nil, fmt.Errorf("%w: JSON annotations: %v", errBadFrame, err)
		}
	}
	delete(ann, metav1.InitialEventsAnnotationKey)
	var err error
	if len(ann) == 0 {
		delete(md, "annotations")
	} else if md["annotations"], err = json.Marshal(ann); err != nil {
		return nil, err
	}
	if obj["metadata"], err = json.Marshal(md); err != nil {
		return nil, err
	}
	if ev["object"], err = json.Marshal(obj); err != nil {
		return nil, err
	}
	return json.Marshal(ev)
}

// protobufMagic prefixes every object in the apiserver's protobuf encoding
// (k8s.io/apimachinery/pkg/runtime/serializer/protobuf).
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// Field numbers in k8s.io/apimachinery's generated.proto: every top-level
// object has its ObjectMeta as field 1; in ObjectMeta resourceVersion is 6
// and annotations (map<string,string>, entries key=1 value=2) are 12.
const (
	objectMetadataField      = 1
	metaNameField            = 1
	metaNamespaceField       = 3
	metaResourceVersionField = 6
	metaAnnotationsField     = 12
	mapEntryKeyField         = 1
	mapEntryValueField       = 2
)

// decodeProtobufEvent returns the event and the object it carries, unwrapped
// from its runtime.Unknown envelope.
// sealProtobuf puts obj back into u and u into the k8s protobuf envelope
// (the magic prefix, then runtime.Unknown).
func sealProtobuf(u *runtime.Unknown, obj []byte) ([]byte, error) {
	u.Raw = obj
	env, err := u.Marshal()
	if err != nil {
		return nil, err
	}
	return append(append([]byte(nil), protobufMagic...), env...), nil
}

func decodeProtobufEvent(event []byte) (*metav1.WatchEvent, *runtime.Unknown, error) {
	var ev metav1.WatchEvent
	if err := ev.Unmarshal(event); err != nil {
		return nil, nil, fmt.Errorf("%w: protobuf WatchEvent: %v", errBadFrame, err)
	}
	raw := ev.Object.Raw
	if !bytes.HasPrefix(raw, protobufMagic) {
		return nil, nil, fmt.Errorf("%w: protobuf %s without the k8s envelope", errBadFrame, "object")
	}
	var u runtime.Unknown
	if err := u.Unmarshal(raw[len(protobufMagic):]); err != nil {
		return nil, nil, fmt.Errorf("%w: protobuf envelope: %v", errBadFrame, err)
	}
	return &ev, &u, nil
}

func inspectProtobuf(event []byte) (eventInfo, error) {
	ev, u, err := decodeProtobufEvent(event)
	if err != nil {
		return eventInfo{}, err
	}
	info := eventInfo{Type: ev.Type}
	err = eachField(u.Raw, func(num protowire.Number, typ protowire.Type, val, _ []byte) error {
		if num != objectMetadataField || typ != protowire.BytesType {
			return nil
		}
		return eachField(val, func(num protowire.Number, typ protowire.Type, val, _ []byte) error {
			switch {
			case num == metaNameField && typ == protowire.BytesType:
				info.Name = string(val)
			case num == metaNamespaceField && typ == protowire.BytesType:
				info.Namespace = string(val)
			case num == metaResourceVersionField && typ == protowire.BytesType:
				info.ResourceVersion = string(val)
			case num == metaAnnotationsField && typ == protowire.BytesType:
				k, v, err := mapEntry(val)
				if err != nil {
					return err
				}
				if k == metav1.InitialEventsAnnotationKey && v == "true" && ev.Type == "BOOKMARK" {
					info.InitialEventsEnd = true
				}
			}
			return nil
		})
	})
	return info, err
}

func stripProtobuf(event []byte) ([]byte, error) {
	ev, u, err := decodeProtobufEvent(event)
	if err != nil {
		return nil, err
	}
	var obj []byte
	err = eachField(u.Raw, func(num protowire.Number, typ protowire.Type, val, whole []byte) error {
		if num != objectMetadataField || typ != protowire.BytesType {
			obj = append(obj, whole...)
			return nil
		}
		var md []byte
		err := eachField(val, func(num protowire.Number, typ protowire.Type, val, whole []byte) error {
			if num == metaAnnotationsField && typ == protowire.BytesType {
				k, _, err := mapEntry(val)
				if err != nil {
					return err
				}
				if k == metav1.InitialEventsAnnotationKey {
					return nil
				}
			}
			md = append(md, whole...)
			return nil
		})
		obj = protowire.AppendTag(obj, objectMetadataField, protowire.BytesType)
		obj = protowire.AppendBytes(obj, md)
		return err
	})
	if err != nil {
		return nil, err
	}
	if ev.Object.Raw, err = sealProtobuf(u, obj); err != nil {
		return nil, err
	}
	return ev.Marshal()
}

// eachField calls fn for every field of the protobuf message b with its
// number, wire type, value (for BytesType the bytes, else nil) and whole
// encoding (tag included).
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, val, whole []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: protobuf tag: %v", errBadFrame, protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return fmt.Errorf("%w: protobuf field %d: %v", errBadFrame, num, protowire.ParseError(m))
		}
		var val []byte
		if typ == protowire.BytesType {
			val, _ = protowire.ConsumeBytes(b[n:])
		}
		if err := fn(num, typ, val, b[:n+m]); err != nil {
			return err
		}
		b = b[n+m:]
	}
	return nil
}

// mapEntry decodes one map<string,string> entry.
func mapEntry(b []byte) (key, value string, err error) {
	err = eachField(b, func(num protowire.Number, typ protowire.Type, val, _ []byte) error {
		switch {
		case num == mapEntryKeyField && typ == protowire.BytesType:
			key = string(val)
		case num == mapEntryValueField && typ == protowire.BytesType:
			value = string(val)
		}
		return nil
	})
	return key, value, err
}

// forwardEvents copies a watch stream in media event by event, applying sf.
// It returns when the stream ends (or sf ends it: a clean end for the
// client); read errors go to abort like forward's.
func (p *Proxy) forwardEvents(ctx context.Context, w io.Writer, rc *http.ResponseController, body io.ReadCloser, rec *Request, st *stream, sf StreamFaults, media string, abort func(error)) {
	next := delayedFrames(ctx, frameReader(media, body), sf.DelayEvents)
	prev := map[string][]byte{} // RedeliverOlder: the last MODIFIED frame per object
	forwarded := 0
	for {
		ev, rerr := next()
		if len(ev) > 0 {
			out, end := p.applyStreamFaults(rec, sf, media, ev, prev)
			if out != nil {
				if err := p.waitStall(ctx, rec); err != nil {
					abort(err)
				}
				if _, werr := w.Write(out); werr != nil {
					p.update(rec, func(rec *Request) { rec.Err = "writing to client: " + werr.Error() })
					return
				}
				_ = rc.Flush()
				forwarded++
				p.update(rec, func(rec *Request) { rec.Events = forwarded })
				if sf.PauseAfterEvents > 0 && forwarded == sf.PauseAfterEvents && sf.PauseFor > 0 {
					p.noteFault(rec, fmt.Sprintf("paused %s after %d events", sf.PauseFor, forwarded))
					t := time.NewTimer(sf.PauseFor)
					select {
					case <-ctx.Done():
						t.Stop()
						abort(ctx.Err())
					case <-t.C:
					}
				}
			}
			if end {
				return
			}
		}
		if p.bodyEnded(rerr, st, rec, abort) {
			return
		}
	}
}

// delayedFrame is a frame (or the read's error) and when it was read.
type delayedFrame struct {
	ev  []byte
	err error
	at  time.Time
}

// delayedFrames returns a function that reads the next frame from fr; with
// delay > 0 it returns each frame delay after it was read (a goroutine
// keeps reading meanwhile), in order. The reader ends with ctx.
func delayedFrames(ctx context.Context, fr io.Reader, delay time.Duration) func() ([]byte, error) {
	buf := make([]byte, 32<<10)
	if delay <= 0 {
		return func() ([]byte, error) { return readFrame(fr, buf) }
	}
	frames := make(chan delayedFrame, 1024)
	go func() {
		for {
			ev, err := readFrame(fr, buf)
			select {
			case frames <- delayedFrame{ev: ev, err: err, at: time.Now()}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return func() ([]byte, error) {
		var f delayedFrame
		select {
		case f = <-frames:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		t := time.NewTimer(time.Until(f.at.Add(delay)))
		defer t.Stop()
		select {
		case <-t.C:
			return f.ev, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// applyStreamFaults returns what to send the client for event (nil: nothing)
// and whether to end the stream after it. prev is the stream's last
// MODIFIED frame per object (RedeliverOlder).
func (p *Proxy) applyStreamFaults(rec *Request, sf StreamFaults, media string, event []byte, prev map[string][]byte) (out []byte, end bool) {
	info, err := inspectEvent(media, event)
	if err != nil {
		p.logf("req %d: %v; forwarded unchanged", rec.Seq, err)
		return frame(media, event), false
	}
	if info.Type != "BOOKMARK" {
		out = frame(media, event)
		if sf.RedeliverOlder && info.Type == "MODIFIED" {
			k := info.Namespace + "/" + info.Name
			if old, ok := prev[k]; ok {
				out = append(out, old...)
				p.noteFault(rec, "older MODIFIED re-delivered")
			}
			prev[k] = frame(media, event)
		}
		return out, false
	}
	if !info.InitialEventsEnd && sf.BookmarkRV != "" {
		rewritten, err := rewriteResourceVersion(media, event, sf.BookmarkRV)
		if err != nil {
			p.logf("req %d: %v; forwarded unchanged", rec.Seq, err)
		} else {
			event = rewritten
			p.noteFault(rec, "bookmark RV "+info.ResourceVersion+" -> "+sf.BookmarkRV)
			if sf.EndAfterBookmarkRV && !sf.DropBookmarks {
				p.noteFault(rec, "ended after the rewritten bookmark")
				return frame(media, event), true
			}
		}
	}
	if info.InitialEventsEnd {
		p.update(rec, func(rec *Request) {
			if rec.InitialEventsEnd.IsZero() {
				rec.InitialEventsEnd = time.Now()
			}
		})
	}
	if info.InitialEventsEnd && sf.CutBeforeInitialEventsEnd {
		p.noteFault(rec, "cut before initial-events-end")
		return nil, true
	}
	if sf.DropBookmarks {
		p.noteFault(rec, "bookmarks dropped")
		return nil, false
	}
	if !info.InitialEventsEnd {
		return frame(media, event), false
	}
	if sf.StripInitialEventsEnd {
		stripped, err := stripInitialEventsEnd(media, event)
		if err != nil {
			p.logf("req %d: %v; forwarded unchanged", rec.Seq, err)
		} else {
			event = stripped
			p.noteFault(rec, "initial-events-end stripped")
		}
	}
	if sf.ExpireInitialEventsEndRV && info.ResourceVersion != "" {
		p.expire(info.ResourceVersion)
		p.noteFault(rec, "expired RV "+info.ResourceVersion)
	}
	if sf.CloseAfterInitialEventsEnd {
		p.noteFault(rec, "closed after initial-events-end")
		end = true
	}
	return frame(media, event), end
}

// noteFault adds fault to rec once.
func (p *Proxy) noteFault(rec *Request, fault string) {
	p.update(rec, func(rec *Request) {
		for _, f := range strings.Split(rec.Fault, "; ") {
			if f == fault {
				return
			}
		}
		addFault(rec, fault)
	})
}
