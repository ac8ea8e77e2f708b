package faults

import (
	"net/url"
	"testing"
)

func TestParseRequestInfo(t *testing.T) {
	cases := []struct {
		method, target string
		want           requestInfo
	}{
		{"GET", "/api/v1/namespaces/default/configmaps", requestInfo{Verb: "list", Resource: "configmaps", Namespace: "default"}},
		{"GET", "/api/v1/namespaces/default/configmaps?watch=true", requestInfo{Verb: "watch", Resource: "configmaps", Namespace: "default"}},
		{"GET", "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=5", requestInfo{Verb: "watch", Resource: "configmaps", Namespace: "default"}},
		{"GET", "/api/v1/configmaps?watch=yes", requestInfo{Verb: "watch", Resource: "configmaps"}},
		{"GET", "/api/v1/configmaps?watch=false", requestInfo{Verb: "list", Resource: "configmaps"}},
		{"GET", "/api/v1/configmaps?watch=FALSE", requestInfo{Verb: "list", Resource: "configmaps"}},
		{"GET", "/api/v1/configmaps?watch=0", requestInfo{Verb: "list", Resource: "configmaps"}},
		{"GET", "/api/v1/namespaces/default/configmaps/cm1", requestInfo{Verb: "get", Resource: "configmaps", Namespace: "default", Name: "cm1"}},
		// watch=true on a named object is still "get" for the apiserver's RequestInfo
		{"GET", "/api/v1/namespaces/default/configmaps/cm1?watch=true", requestInfo{Verb: "get", Resource: "configmaps", Namespace: "default", Name: "cm1"}},
		{"GET", "/api/v1/namespaces/default/configmaps?watch=1&fieldSelector=metadata.name%3Dcm1", requestInfo{Verb: "watch", Resource: "configmaps", Namespace: "default", Name: "cm1"}},
		{"GET", "/api/v1/watch/namespaces/default/configmaps", requestInfo{Verb: "watch", Resource: "configmaps", Namespace: "default"}},
		{"GET", "/api/v1/watch/namespaces/default/configmaps/cm1", requestInfo{Verb: "watch", Resource: "configmaps", Namespace: "default", Name: "cm1"}},
		{"GET", "/apis/apps/v1/namespaces/ns/deployments", requestInfo{Verb: "list", Resource: "deployments", Namespace: "ns"}},
		{"PUT", "/apis/apps/v1/namespaces/ns/deployments/d/status", requestInfo{Verb: "update", Resource: "deployments", Subresource: "status", Namespace: "ns", Name: "d"}},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/scale", requestInfo{Verb: "patch", Resource: "deployments", Subresource: "scale", Namespace: "ns", Name: "d"}},
		{"POST", "/api/v1/namespaces/default/configmaps", requestInfo{Verb: "create", Resource: "configmaps", Namespace: "default"}},
		{"DELETE", "/api/v1/namespaces/default/configmaps/cm1", requestInfo{Verb: "delete", Resource: "configmaps", Namespace: "default", Name: "cm1"}},
		{"DELETE", "/api/v1/namespaces/default/configmaps", requestInfo{Verb: "deletecollection", Resource: "configmaps", Namespace: "default"}},
		{"GET", "/api/v1/namespaces", requestInfo{Verb: "list", Resource: "namespaces"}},
		{"GET", "/api/v1/namespaces/kube-system", requestInfo{Verb: "get", Resource: "namespaces", Namespace: "kube-system", Name: "kube-system"}},
		{"PUT", "/api/v1/namespaces/x/finalize", requestInfo{Verb: "update", Resource: "namespaces", Subresource: "finalize", Namespace: "x", Name: "x"}},
		{"GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", requestInfo{Verb: "list", Resource: "customresourcedefinitions"}},
		{"GET", "/version", requestInfo{Verb: "get"}},
		{"GET", "/apis/apps/v1", requestInfo{Verb: "get"}},
		{"GET", "/api/v1", requestInfo{Verb: "get"}},
		{"HEAD", "/healthz", requestInfo{Verb: "head"}},
	}
	for _, c := range cases {
		u, err := url.Parse(c.target)
		if err != nil {
			t.Fatal(err)
		}
		if got := parseRequestInfo(c.method, u); got != c.want {
			t.Errorf("%s %s: got %+v, want %+v", c.method, c.target, got, c.want)
		}
	}
}

func TestNegotiate(t *testing.T) {
	cases := map[string]string{
		"":                 mediaJSON,
		"application/json": mediaJSON,
		"application/vnd.kubernetes.protobuf, application/json":             mediaProtobuf,
		"application/vnd.kubernetes.protobuf,application/json":              mediaProtobuf,
		"application/json, application/vnd.kubernetes.protobuf":             mediaJSON,
		"application/json;q=0.5, application/vnd.kubernetes.protobuf;q=0.9": mediaProtobuf,
		"application/json;as=Table;v=v1;g=meta.k8s.io,application/json":     mediaJSON,
		"application/cbor": mediaJSON,
		"*/*":              mediaJSON,
		"application/vnd.kubernetes.protobuf;q=0, application/json": mediaJSON,
	}
	for accept, want := range cases {
		if got := negotiate(accept); got != want {
			t.Errorf("negotiate(%q) = %q, want %q", accept, got, want)
		}
	}
}

func TestForwardQueryKeepsBytes(t *testing.T) {
	p := &Proxy{}
	raw := "resourceVersion=5&resourceVersionMatch=NotOlderThan&labelSelector=a%3Db&sendInitialEvents=true&watch=1"
	if got := p.forwardQuery(raw, 0); got != raw {
		t.Fatalf("no stripping: got %q", got)
	}
	p.StripParams("resourceVersionMatch", "sendInitialEvents")
	if got, want := p.forwardQuery(raw, 0), "resourceVersion=5&labelSelector=a%3Db&watch=1"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	p.StripParams()
	if got := p.forwardQuery(raw, 0); got != raw {
		t.Fatalf("after StripParams(): got %q", got)
	}
}
