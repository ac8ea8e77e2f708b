package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/lister"
)

type listOptions struct {
	resource      string
	match         string
	rv            string
	limit         int64
	allNamespaces bool
	selector      string
	output        string
}

func newListCommand(a *app) *command {
	o := &listOptions{}
	cmd := &command{
		Use:   "list",
		Short: "One list with an explicit resourceVersion semantic through the steadywatch lister",
		Long: `list runs one list with an explicit KEP-2523 semantic through the SDK's lister
(all pages, one snapshot) and prints the item count, the resourceVersion served
and every fallback the lister took (for example an Exact list that a server
ignoring resourceVersionMatch served at a newer resourceVersion, retried with a
limit).

--match defaults to NotOlderThan when --rv is given, MostRecent otherwise.`,
		Example: `  kubectl steadywatch list --resource configmaps -n default
  kubectl steadywatch list --resource cm --match Exact --rv 1234 --limit 100 -o json
  kubectl steadywatch list --resource deployments.apps -A --match Any`,
		Args: noArgs,
		RunE: func(cmd *command, _ []string) error { return a.runList(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.resource, "resource", "configmaps", "resource to list: plural, short name or resource.group (e.g. configmaps, cm, deployments.apps)")
	f.StringVar(&o.match, "match", "", "semantic: MostRecent, Any, NotOlderThan or Exact (default NotOlderThan with --rv, else MostRecent)")
	f.StringVar(&o.rv, "rv", "", "resourceVersion for NotOlderThan and Exact")
	f.Int64Var(&o.limit, "limit", 0, "page size (0 = one unpaginated request)")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list across all namespaces")
	f.StringVarP(&o.selector, "selector", "l", "", "label selector")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	return cmd
}

// queryFromFlags builds the explicit query; every error is a usage error.
func queryFromFlags(match, rv string, limit int64) (fallback.Query, error) {
	if match == "" {
		match = "MostRecent"
		if rv != "" {
			match = "NotOlderThan"
		}
	}
	var q fallback.Query
	if err := checkResourceVersion(rv); err != nil {
		return q, err
	}
	switch strings.ToLower(match) {
	case "mostrecent":
		if rv != "" {
			return q, usagef("--match MostRecent takes no --rv (it lists at the most recent resourceVersion)")
		}
		q = lister.MostRecent()
	case "any":
		if rv != "" && rv != "0" {
			return q, usagef("--match Any takes no --rv (it is resourceVersion \"0\")")
		}
		q = lister.Any()
	case "notolderthan":
		q = lister.NotOlderThan(rv)
	case "exact":
		q = lister.Exact(rv)
	default:
		return q, usagef("--match %q: want MostRecent, Any, NotOlderThan or Exact", match)
	}
	if limit < 0 {
		return q, usagef("--limit must be >= 0")
	}
	q = q.WithLimit(limit)
	if err := q.Validate(); err != nil {
		return q, &usageError{err}
	}
	return q, nil
}

// checkResourceVersion refuses an --rv that is not a resourceVersion before
// anything is sent (sent as it is, "abc" costs a request and comes back as a
// 400). Since KEP-5504 (Comparable Resource Version, stable in v1.35) a
// resourceVersion is a positive decimal integer without leading zeros; "0" is
// the list tables' "any".
func checkResourceVersion(rv string) error {
	if rv == "" || rv == "0" {
		return nil
	}
	ok := rv[0] != '0'
	for _, c := range rv {
		ok = ok && c >= '0' && c <= '9'
	}
	if !ok {
		return usagef("--rv %q: not a resourceVersion (a decimal integer such as the metadata.resourceVersion of a list, or 0)", rv)
	}
	return nil
}

// checkSelector parses a label selector before anything is sent.
func checkSelector(sel string) error {
	if _, err := labels.Parse(sel); err != nil {
		return usagef("--selector %q: %w", sel, err)
	}
	return nil
}

// checkResourceArg refuses an empty --resource before anything is sent (the
// resource itself is resolved through discovery).
func checkResourceArg(arg string) error {
	if strings.TrimSpace(arg) == "" {
		return usagef("--resource is required")
	}
	return nil
}

// listReport is the JSON of `list -o json` (schemaVersion 1, see README.md).
type listReport struct {
	SchemaVersion         int              `json:"schemaVersion"`
	Resource              string           `json:"resource"`
	Namespace             string           `json:"namespace,omitempty"`
	Requested             string           `json:"requested"`
	Served                string           `json:"served,omitempty"`
	ServedResourceVersion string           `json:"servedResourceVersion,omitempty"`
	Items                 int              `json:"items"`
	Pages                 int              `json:"pages"`
	Requests              []requestReport  `json:"requests"`
	Fallbacks             []fallbackReport `json:"fallbacks"`
	Capabilities          string           `json:"capabilities"`
	DurationSeconds       float64          `json:"durationSeconds"`
	Error                 string           `json:"error,omitempty"`
}

type requestReport struct {
	Purpose               string `json:"purpose"`
	Query                 string `json:"query"`
	Class                 string `json:"class"`
	ServedResourceVersion string `json:"servedResourceVersion,omitempty"`
	Items                 int    `json:"items"`
	Error                 string `json:"error,omitempty"`
}

type fallbackReport struct {
	Reason  string `json:"reason"`
	Action  string `json:"action"`
	Attempt int    `json:"attempt"`
	Before  string `json:"before"`
	After   string `json:"after,omitempty"`
	Detail  string `json:"detail,omitempty"`
	Error   string `json:"error,omitempty"`
}

// wireQuery spells the resourceVersion-related wire options as a query
// string; a continue token is shown as <token>.
func wireQuery(o metav1.ListOptions) string {
	v := url.Values{}
	if o.ResourceVersion != "" {
		v.Set("resourceVersion", o.ResourceVersion)
	}
	if o.ResourceVersionMatch != "" {
		v.Set("resourceVersionMatch", string(o.ResourceVersionMatch))
	}
	if o.Limit > 0 {
		v.Set("limit", strconv.FormatInt(o.Limit, 10))
	}
	if o.Continue != "" {
		v.Set("continue", "<token>")
	}
	if o.LabelSelector != "" {
		v.Set("labelSelector", o.LabelSelector)
	}
	if o.FieldSelector != "" {
		v.Set("fieldSelector", o.FieldSelector)
	}
	if o.ShardSelector != "" {
		v.Set("shardSelector", o.ShardSelector)
	}
	if o.Watch {
		v.Set("watch", "true")
	}
	if o.AllowWatchBookmarks {
		v.Set("allowWatchBookmarks", "true")
	}
	if o.SendInitialEvents != nil {
		v.Set("sendInitialEvents", strconv.FormatBool(*o.SendInitialEvents))
	}
	if o.TimeoutSeconds != nil {
		v.Set("timeoutSeconds", strconv.FormatInt(*o.TimeoutSeconds, 10))
	}
	s, _ := url.QueryUnescape(v.Encode())
	return s
}

func (a *app) runList(cmd *command, o *listOptions) error {
	if err := outputFormat(o.output); err != nil {
		return err
	}
	q, err := queryFromFlags(o.match, o.rv, o.limit)
	if err != nil {
		return err
	}
	if err := errors.Join(checkResourceArg(o.resource), checkSelector(o.selector)); err != nil {
		return err
	}
	ctx := cmd.Context()
	c, err := a.clients(ctx)
	if err != nil {
		return err
	}
	m, ns, err := a.resolveIn(c, o.resource, o.allNamespaces)
	if err != nil {
		return err
	}
	l := lister.New(lister.FromDynamic(c.resourceClient(m, ns)), lister.Options{
		Server:        c.server,
		Name:          m.Resource.String(),
		LabelSelector: o.selector,
	})
	_, rec, lerr := l.List(ctx, q)
	rep := listReport{
		SchemaVersion: 1,
		Resource:      resourceName(m),
		Namespace:     ns,
		Requested:     q.String(),
		Capabilities:  c.server.Capabilities(ctx).String(),
		Requests:      []requestReport{},
		Fallbacks:     []fallbackReport{},
	}
	if rec != nil {
		if lerr == nil {
			rep.Served = rec.Served.String()
			rep.ServedResourceVersion = rec.ServedResourceVersion
		}
		rep.Items, rep.Pages = rec.Items, rec.Pages
		rep.DurationSeconds = rec.Duration.Seconds()
		for _, r := range rec.Requests {
			rr := requestReport{Purpose: string(r.Purpose), Query: wireQuery(r.Options), Class: r.Class.String(), ServedResourceVersion: r.ServedResourceVersion, Items: r.Items}
			if r.Err != nil {
				rr.Error = oneLine(r.Err.Error())
			}
			rep.Requests = append(rep.Requests, rr)
		}
		for _, ev := range rec.Fallbacks {
			fr := fallbackReport{Reason: string(ev.Reason), Action: ev.Action.String(), Attempt: ev.Attempt, Before: ev.Before.String(), Detail: ev.Detail}
			if ev.Action != fallback.Fail && ev.Action != fallback.FailExactUnavailable {
				fr.After = ev.After.String()
			}
			if ev.Err != nil {
				fr.Error = oneLine(ev.Err.Error())
			}
			rep.Fallbacks = append(rep.Fallbacks, fr)
		}
	}
	if lerr != nil {
		rep.Error = oneLine(lerr.Error())
	}
	if o.output == "json" {
		enc := json.NewEncoder(a.out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printListReport(a.out, rep)
	}
	if lerr != nil {
		err := fmt.Errorf("list %s: %w", rep.Resource, lerr)
		if apierrors.IsBadRequest(lerr) || apierrors.IsInvalid(lerr) {
			// The server refused the request as given (400, 422): a usage error.
			return &usageError{err}
		}
		return err
	}
	return nil
}

func resourceName(m *meta.RESTMapping) string {
	r := m.Resource
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

func printListReport(w io.Writer, r listReport) {
	ns := r.Namespace
	if ns == "" {
		ns = "(all)"
	}
	fmt.Fprintf(w, "resource:      %s  namespace: %s\n", r.Resource, ns)
	fmt.Fprintf(w, "server:        %s\n", r.Capabilities)
	fmt.Fprintf(w, "requested:     %s\n", r.Requested)
	if r.Error == "" {
		fmt.Fprintf(w, "served:        %s at resourceVersion %s\n", r.Served, r.ServedResourceVersion)
		fmt.Fprintf(w, "items:         %d in %d page(s)\n", r.Items, r.Pages)
	} else {
		// The error itself is the command's error line on stderr.
		fmt.Fprintf(w, "served:        nothing, the list failed (error on stderr)\n")
	}
	fmt.Fprintf(w, "requests:      %d\n", len(r.Requests))
	for i, q := range r.Requests {
		fmt.Fprintf(w, "  %d. %-14s ?%s -> %s", i+1, q.Purpose, q.Query, q.Class)
		if q.ServedResourceVersion != "" {
			fmt.Fprintf(w, " at %s (%d items)", q.ServedResourceVersion, q.Items)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "fallbacks:     %d\n", len(r.Fallbacks))
	for i, f := range r.Fallbacks {
		fmt.Fprintf(w, "  %d. %s: %s -> %s", i+1, f.Reason, f.Before, f.Action)
		if f.After != "" {
			fmt.Fprintf(w, " %s", f.After)
		}
		if f.Detail != "" {
			fmt.Fprintf(w, " (%s)", f.Detail)
		}
		fmt.Fprintln(w)
	}
}
