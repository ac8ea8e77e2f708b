package faults

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"
)

// ListFaults change the body of forwarded list answers (status 200), as a
// broken server or proxy can. The zero value changes nothing.
type ListFaults struct {
	// RepeatContinueToken answers every list request that carries a
	// continue token with a page whose metadata.continue is that same token
	// (the page itself is the backend's): pagination that never ends, as
	// apache/iceberg-go#1484 and boto/botocore#3778 describe for other APIs.
	// A client that does not notice pages until its deadline.
	RepeatContinueToken bool
}

func (f ListFaults) active() bool { return f != ListFaults{} }

// SetListFaults replaces the list faults for list requests that arrive from
// now on; ListFaults{} stops them.
func (p *Proxy) SetListFaults(f ListFaults) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.listFaults = f
}

func (p *Proxy) currentListFaults() ListFaults {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.listFaults
}

// listFaultsFor returns the list faults that apply to a request, or the
// zero value.
func (p *Proxy) listFaultsFor(info requestInfo, r *http.Request) ListFaults {
	if info.Verb != "list" {
		return ListFaults{}
	}
	lf := p.currentListFaults()
	if lf.RepeatContinueToken && r.URL.Query().Get("continue") == "" {
		lf.RepeatContinueToken = false
	}
	return lf
}

// rewriteList answers a list with lf applied to the backend's 200 body. It
// returns false (having written nothing) when the body is not one it can
// change: the caller forwards it as it is.
func (p *Proxy) rewriteList(w http.ResponseWriter, r *http.Request, resp *http.Response, rec *Request, lf ListFaults) bool {
	ce := resp.Header.Get("Content-Encoding")
	media := watchMedia(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || media == "" || (ce != "" && ce != "identity") || !lf.RepeatContinueToken {
		return false
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		p.update(rec, func(rec *Request) { rec.Err = "reading from backend: " + err.Error() })
		panic(http.ErrAbortHandler)
	}
	token := r.URL.Query().Get("continue")
	out, err := setListContinue(media, body, token)
	if err != nil {
		p.logf("req %d: %v; forwarded unchanged", rec.Seq, err)
		out = body
	} else {
		p.noteFault(rec, "continue token repeated")
	}
	copyHeader(w.Header(), resp.Header)
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(resp.StatusCode)
	p.update(rec, func(rec *Request) { rec.Status = resp.StatusCode })
	_, _ = w.Write(out)
	return true
}

// Field numbers of ListMeta in k8s.io/apimachinery's generated.proto.
const listMetaContinueField = 3

// setListContinue returns the list body with metadata.continue set to token.
func setListContinue(media string, body []byte, token string) ([]byte, error) {
	if media == mediaProtobuf {
		return setProtobufMetaField(body, listMetaContinueField, token)
	}
	return setJSONMetaField(body, "continue", token)
}

// rewriteResourceVersion returns a watch event with its object's
// metadata.resourceVersion set to rv.
func rewriteResourceVersion(media string, event []byte, rv string) ([]byte, error) {
	if media == mediaProtobuf {
		ev, u, err := decodeProtobufEvent(event)
		if err != nil {
			return nil, err
		}
		obj, err := setProtobufMetaField(append(append([]byte(nil), protobufMagic...), mustMarshal(u)...), metaResourceVersionField, rv)
		if err != nil {
			return nil, err
		}
		ev.Object.Raw = obj
		return ev.Marshal()
	}
	var ev map[string]json.RawMessage
	if err := json.Unmarshal(event, &ev); err != nil {
		return nil, fmt.Errorf("%w: JSON: %v", errBadFrame, err)
	}
	obj, err := setJSONMetaField(ev["object"], "resourceVersion", rv)
	if err != nil {
		return nil, err
	}
	ev["object"] = obj
	return json.Marshal(ev)
}

func mustMarshal(u *runtime.Unknown) []byte {
	b, err := u.Marshal()
	if err != nil {
		panic(err)
	}
	return b
}

// setJSONMetaField sets metadata.<field> of a JSON object to value.
func setJSONMetaField(body []byte, field, value string) ([]byte, error) {
	var obj, md map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, fmt.Errorf("%w: JSON object: %v", errBadFrame, err)
	}
	if raw, ok := obj["metadata"]; ok {
		if err := json.Unmarshal(raw, &md); err != nil {
			return nil, fmt.Errorf("%w: JSON metadata: %v", errBadFrame, err)
		}
	}
	if md == nil {
		md = map[string]json.RawMessage{}
	}
	v, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	md[field] = v
	if obj["metadata"], err = json.Marshal(md); err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}

// setProtobufMetaField sets field num (a string) of the metadata (field 1)
// of a protobuf-encoded object (k8s envelope included) to value.
func setProtobufMetaField(body []byte, num protowire.Number, value string) ([]byte, error) {
	if len(body) < len(protobufMagic) || string(body[:len(protobufMagic)]) != string(protobufMagic) {
		return nil, fmt.Errorf("%w: protobuf object without the k8s envelope", errBadFrame)
	}
	var u runtime.Unknown
	if err := u.Unmarshal(body[len(protobufMagic):]); err != nil {
		return nil, fmt.Errorf("%w: protobuf envelope: %v", errBadFrame, err)
	}
	var obj []byte
	err := eachField(u.Raw, func(n protowire.Number, typ protowire.Type, val, whole []byte) error {
		if n != objectMetadataField || typ != protowire.BytesType {
			obj = append(obj, whole...)
			return nil
		}
		var md []byte
		err := eachField(val, func(n protowire.Number, typ protowire.Type, _, whole []byte) error {
			if n != num {
				md = append(md, whole...)
			}
			return nil
		})
		md = protowire.AppendTag(md, num, protowire.BytesType)
		md = protowire.AppendString(md, value)
		obj = protowire.AppendTag(obj, objectMetadataField, protowire.BytesType)
		obj = protowire.AppendBytes(obj, md)
		return err
	})
	if err != nil {
		return nil, err
	}
	return sealProtobuf(&u, obj)
}
