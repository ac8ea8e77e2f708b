package faults

import (
	"net/http"
	"net/url"
	"strings"
)

// requestInfo is the part of the apiserver's RequestInfo that rules match on.
type requestInfo struct {
	Verb        string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
}

// parseRequestInfo derives verb and resource from a request the way
// k8s.io/apiserver/pkg/endpoints/request.RequestInfoFactory does for the
// prefixes "api" (groupless) and "apis": GET on a collection is "list", or
// "watch" when the watch parameter is present and not "0"/"false"; the
// deprecated /watch/ path prefix is "watch"; DELETE on a collection is
// "deletecollection". Non-resource paths (/version, /healthz) get the
// lower-cased method as verb and no resource.
func parseRequestInfo(method string, u *url.URL) requestInfo {
	info := requestInfo{Verb: strings.ToLower(method)}
	parts := splitPath(u.Path)
	if len(parts) < 3 {
		return info
	}
	switch parts[0] {
	case "api":
		parts = parts[1:]
	case "apis":
		parts = parts[1:]
		if len(parts) < 3 {
			return info
		}
		parts = parts[1:] // group
	default:
		return info
	}
	parts = parts[1:] // version

	if parts[0] == "watch" || parts[0] == "proxy" {
		if len(parts) < 2 {
			return info
		}
		info.Verb = parts[0]
		parts = parts[1:]
	} else {
		switch method {
		case http.MethodPost:
			info.Verb = "create"
		case http.MethodGet, http.MethodHead:
			info.Verb = "get"
		case http.MethodPut:
			info.Verb = "update"
		case http.MethodPatch:
			info.Verb = "patch"
		case http.MethodDelete:
			info.Verb = "delete"
		default:
			info.Verb = ""
		}
	}

	if parts[0] == "namespaces" && len(parts) > 1 {
		info.Namespace = parts[1]
		if len(parts) > 2 && parts[2] != "status" && parts[2] != "finalize" {
			parts = parts[2:]
		}
	}

	switch {
	case len(parts) >= 3 && info.Verb != "proxy":
		info.Subresource = parts[2]
		fallthrough
	case len(parts) >= 2:
		info.Name = parts[1]
		fallthrough
	case len(parts) >= 1:
		info.Resource = parts[0]
	}

	if info.Name == "" && info.Verb == "get" {
		q := u.Query()
		info.Verb = "list"
		if v, ok := q["watch"]; ok && len(v) > 0 {
			if v[0] != "0" && !strings.EqualFold(v[0], "false") {
				info.Verb = "watch"
			}
		}
		if name := exactNameFromFieldSelector(q.Get("fieldSelector")); name != "" {
			info.Name = name
		}
	}
	if info.Name == "" && info.Verb == "delete" {
		info.Verb = "deletecollection"
	}
	return info
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// exactNameFromFieldSelector returns x for a selector containing the term
// metadata.name=x or metadata.name==x, as the apiserver does for get-by-list.
func exactNameFromFieldSelector(sel string) string {
	for _, term := range strings.Split(sel, ",") {
		term = strings.TrimSpace(term)
		for _, op := range []string{"==", "="} {
			if v, ok := strings.CutPrefix(term, "metadata.name"+op); ok && v != "" && !strings.ContainsAny(v, "/%") && v != "." && v != ".." {
				return v
			}
		}
	}
	return ""
}
