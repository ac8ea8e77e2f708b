package faults

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
)

const (
	mediaJSON     = "application/json"
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
)

// codec encodes Status objects and watch events the way the apiserver does,
// in JSON or protobuf. It is immutable after newCodec.
type codec struct {
	json, protobuf runtime.SerializerInfo
}

func newCodec() (*codec, error) {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	cf := serializer.NewCodecFactory(scheme)
	var c codec
	var okJ, okP bool
	c.json, okJ = runtime.SerializerInfoForMediaType(cf.SupportedMediaTypes(), mediaJSON)
	c.protobuf, okP = runtime.SerializerInfoForMediaType(cf.SupportedMediaTypes(), mediaProtobuf)
	if !okJ || !okP || c.json.StreamSerializer == nil || c.protobuf.StreamSerializer == nil {
		return nil, fmt.Errorf("faults: apimachinery lacks a JSON or protobuf serializer")
	}
	return &c, nil
}

// negotiate picks the response media type for an Accept header like the
// apiserver: the acceptable type with the highest q (first on ties) among JSON
// and protobuf; anything else, or nothing acceptable, falls back to JSON.
func negotiate(accept string) string {
	best, bestQ := mediaJSON, -1.0
	for _, part := range strings.Split(accept, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		mt, params, err := mime.ParseMediaType(part)
		if err != nil {
			continue
		}
		q := 1.0
		if s, ok := params["q"]; ok {
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				q = f
			}
		}
		var m string
		switch mt {
		case mediaProtobuf:
			m = mediaProtobuf
		case mediaJSON, "*/*", "application/*":
			m = mediaJSON
		default:
			continue
		}
		if q > 0 && q > bestQ {
			best, bestQ = m, q
		}
	}
	return best
}

func (c *codec) info(media string) runtime.SerializerInfo {
	if media == mediaProtobuf {
		return c.protobuf
	}
	return c.json
}

// encodeStatus returns the body of an error response.
func (c *codec) encodeStatus(media string, st *metav1.Status) ([]byte, error) {
	var buf bytes.Buffer
	if err := c.info(media).Serializer.Encode(st, &buf); err != nil {
		return nil, fmt.Errorf("faults: encode Status as %s: %w", media, err)
	}
	return buf.Bytes(), nil
}

// encodeWatchEvent returns one framed watch event carrying obj, as the
// apiserver's watch handler writes it: the object in the regular encoding,
// wrapped in a metav1.WatchEvent encoded by the stream serializer and framed
// (JSON: one line; protobuf: 4-byte big-endian length prefix).
func (c *codec) encodeWatchEvent(media, eventType string, st *metav1.Status) ([]byte, error) {
	info := c.info(media)
	embedded, err := c.encodeStatus(media, st)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&buf), info.StreamSerializer.Serializer)
	if err := enc.Encode(&metav1.WatchEvent{Type: eventType, Object: runtime.RawExtension{Raw: embedded}}); err != nil {
		return nil, fmt.Errorf("faults: encode watch event as %s: %w", media, err)
	}
	return buf.Bytes(), nil
}

// watchContentType is the Content-Type of a watch response in media.
func watchContentType(media string) string {
	if media == mediaProtobuf {
		return mediaProtobuf + ";stream=watch"
	}
	return mediaJSON
}

// defaultReason is the reason the apiserver pairs with a status code.
func defaultReason(code int) metav1.StatusReason {
	switch code {
	case http.StatusBadRequest:
		return metav1.StatusReasonBadRequest
	case http.StatusUnauthorized:
		return metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusNotFound:
		return metav1.StatusReasonNotFound
	case http.StatusMethodNotAllowed:
		return metav1.StatusReasonMethodNotAllowed
	case http.StatusNotAcceptable:
		return metav1.StatusReasonNotAcceptable
	case http.StatusConflict:
		return metav1.StatusReasonConflict
	case http.StatusGone:
		return metav1.StatusReasonExpired
	case http.StatusRequestEntityTooLarge:
		return metav1.StatusReasonRequestEntityTooLarge
	case http.StatusUnsupportedMediaType:
		return metav1.StatusReasonUnsupportedMediaType
	case http.StatusUnprocessableEntity:
		return metav1.StatusReasonInvalid
	case http.StatusTooManyRequests:
		return metav1.StatusReasonTooManyRequests
	case http.StatusInternalServerError:
		return metav1.StatusReasonInternalError
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	case http.StatusGatewayTimeout:
		return metav1.StatusReasonTimeout
	}
	return metav1.StatusReasonUnknown
}

// tooLargeCauseMessage is what the apiserver puts in the
// ResourceVersionTooLarge cause (k8s.io/apiserver/pkg/storage/errors.go).
const tooLargeCauseMessage = "Too large resource version"

// status builds the Status a rule answers with.
func (r Rule) status(id int) *metav1.Status {
	reason := r.Reason
	if reason == "" {
		reason = defaultReason(r.Status)
	}
	var causes []metav1.StatusCause
	tooLarge := false
	for _, c := range r.Causes {
		if c.Type == metav1.CauseTypeResourceVersionTooLarge {
			tooLarge = true
			if c.Message == "" {
				c.Message = tooLargeCauseMessage
			}
		}
		causes = append(causes, c)
	}
	msg := r.Message
	if msg == "" {
		switch {
		case tooLarge:
			msg = fmt.Sprintf("Timeout: %s (injected by faults rule %d)", tooLargeCauseMessage, id)
		case r.Status == http.StatusGone:
			msg = fmt.Sprintf("too old resource version (injected by faults rule %d)", id)
		default:
			msg = fmt.Sprintf("%s (injected by faults rule %d)", http.StatusText(r.Status), id)
		}
	}
	st := &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  msg,
		Reason:   reason,
		Code:     int32(r.Status),
	}
	if len(causes) > 0 || r.RetryAfterSeconds > 0 {
		st.Details = &metav1.StatusDetails{Causes: causes, RetryAfterSeconds: int32(r.RetryAfterSeconds)}
	}
	return st
}
