package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// probeReport is the JSON of `probe -o json`, schemaVersion 1 (README.md
// documents every field). Fields marked volatile in README.md change from run
// to run; the others are stable for a given server and configuration.
type probeReport struct {
	SchemaVersion    int          `json:"schemaVersion"`
	Server           serverReport `json:"server"`
	Namespace        string       `json:"namespace"`
	CreatedNamespace bool         `json:"createdNamespace"`
	ResourceVersions rvReport     `json:"resourceVersions"`
	Limit            int64        `json:"limit"`
	Cells            []cellReport `json:"cells"`
	Detected         detected     `json:"detected"`
	Summary          summary      `json:"summary"`
	DurationSeconds  float64      `json:"durationSeconds"`
}

type serverReport struct {
	GitVersion   string `json:"gitVersion"`
	Host         string `json:"host"`
	Capabilities string `json:"capabilities"`
}

type rvReport struct {
	N             string `json:"N"`
	Latest        string `json:"latest"`
	ContinueToken string `json:"continueToken"`
}

type requestShape struct {
	ResourceVersion      string `json:"resourceVersion"`
	ResourceVersionMatch string `json:"resourceVersionMatch,omitempty"`
	Limit                int64  `json:"limit,omitempty"`
	Continue             bool   `json:"continue,omitempty"`
	SendInitialEvents    bool   `json:"sendInitialEvents,omitempty"`
	AllowWatchBookmarks  bool   `json:"allowWatchBookmarks,omitempty"`
	ShardSelector        string `json:"shardSelector,omitempty"`
}

type cellReport struct {
	ID                     string       `json:"id"`
	Kind                   string       `json:"kind"`
	Request                requestShape `json:"request"`
	Wire                   string       `json:"wire"`
	Expected               string       `json:"expected"`
	ExpectedIfMatchIgnored string       `json:"expectedIfMatchIgnored,omitempty"`
	Observed               string       `json:"observed"`
	Verdict                string       `json:"verdict"`
	HTTPStatus             int          `json:"httpStatus"`
	ErrorEventStatus       int          `json:"errorEventStatus,omitempty"`
	ServedResourceVersion  string       `json:"servedResourceVersion,omitempty"`
	Relation               string       `json:"relation,omitempty"`
	RelativeTo             string       `json:"relativeTo,omitempty"`
	RetryAfterSeconds      int          `json:"retryAfterSeconds,omitempty"`
	Items                  int          `json:"items,omitempty"`
	Events                 int          `json:"events,omitempty"`
	Message                string       `json:"message,omitempty"`
	Source                 string       `json:"source"`
	Note                   string       `json:"note,omitempty"`
	Seconds                float64      `json:"seconds"`
	// Proxy-chain cells only.
	Result                string   `json:"result,omitempty"`
	Evidence              string   `json:"evidence,omitempty"`
	Report                string   `json:"report,omitempty"`
	Steadywatch           string   `json:"steadywatch,omitempty"`
	ExpectedInitialEvents *int     `json:"expectedInitialEvents,omitempty"`
	DecisionSeconds       *float64 `json:"decisionSeconds,omitempty"`
	// The shardSelector cell: the API group/version its answer is about.
	GroupVersion string `json:"groupVersion,omitempty"`
}

// detected is what the cells show about the server's capabilities.
type detected struct {
	// ResourceVersionMatch: "honoured" (an Exact list without limit was served
	// at N), "ignored" (it was served newer) or "unknown".
	ResourceVersionMatch string `json:"resourceVersionMatch"`
	// StreamingList: "yes" (initial-events-end bookmark), "no" (ignored or refused).
	StreamingList string `json:"streamingList"`
	// Bookmarks: "yes" if the bookmark cell saw one, else "not-seen".
	Bookmarks string `json:"bookmarks"`
	// EndBookmark: what the proxy-chain cells' streaming list showed:
	// "ok", "bookmarks-filtered", "annotation-missing", "cut-before-end",
	// "not-applicable" or "inconclusive".
	EndBookmark string `json:"endBookmark"`
	// ShardSelector: the shardSelector cell's result for core/v1 (its
	// groupVersion): "yes" (shardInfo echoed), "no" (ignored), "error" or
	// "unknown".
	ShardSelector string `json:"shardSelector"`
}

type summary struct {
	Cells        int `json:"cells"`
	AsSpecified  int `json:"asSpecified"`
	MatchIgnored int `json:"matchIgnored"`
	Differs      int `json:"differs"`
	// Proxy-chain cells that cannot be checked on this server or this time.
	NotApplicable int `json:"notApplicable"`
	Inconclusive  int `json:"inconclusive"`
}

func (r *probeReport) summarize() {
	r.Detected = detected{ResourceVersionMatch: "unknown", StreamingList: "no", Bookmarks: "not-seen", EndBookmark: "inconclusive", ShardSelector: "unknown"}
	for _, c := range r.Cells {
		switch c.ID {
		case "list/match=Exact/paging=none/rv=N":
			switch c.Observed {
			case SemExact:
				r.Detected.ResourceVersionMatch = "honoured"
			case SemNotOlderThan:
				r.Detected.ResourceVersionMatch = "ignored"
			}
		case "streaming-list":
			if c.Observed == SemInitialEventsEnd {
				r.Detected.StreamingList = "yes"
			}
		case "bookmark":
			if c.Observed == SemBookmark {
				r.Detected.Bookmarks = "yes"
			}
		case CellBookmarksFiltered:
			r.Detected.EndBookmark = endBookmarkLabel[c.Observed]
		case CellShardSelector:
			r.Detected.ShardSelector = c.Result
		}
		r.Summary.Cells++
		switch c.Verdict {
		case VerdictAsSpecified:
			r.Summary.AsSpecified++
		case VerdictMatchIgnored:
			r.Summary.MatchIgnored++
		case VerdictNotApplicable:
			r.Summary.NotApplicable++
		case VerdictInconclusive:
			r.Summary.Inconclusive++
		default:
			r.Summary.Differs++
		}
	}
}

var endBookmarkLabel = map[string]string{
	SemEndBookmark:       "ok",
	SemBookmarksFiltered: "bookmarks-filtered",
	SemAnnotationMissing: "annotation-missing",
	SemCutBeforeEnd:      "cut-before-end",
	SemNotApplicable:     "not-applicable",
	SemInconclusive:      "inconclusive",
}

func printProbeReport(w io.Writer, r probeReport) {
	fmt.Fprintf(w, "server %s (%s)\n%s\n", r.Server.GitVersion, r.Server.Host, r.Server.Capabilities)
	fmt.Fprintf(w, "namespace %s; N=%s (older), latest=%s, limit=%d\n\n", r.Namespace, r.ResourceVersions.N, r.ResourceVersions.Latest, r.Limit)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CELL\tEXPECTED\tOBSERVED\tSTATUS\tSERVED RV\tVERDICT")
	for _, c := range r.Cells {
		status := fmt.Sprint(c.HTTPStatus)
		if c.ErrorEventStatus != 0 {
			status += fmt.Sprintf("/event %d", c.ErrorEventStatus)
		}
		served := c.Relation
		if served == "" {
			served = "-"
		} else {
			served = fmt.Sprintf("%s (%s)", c.Relation, c.RelativeTo)
		}
		exp := c.Expected
		if c.ExpectedIfMatchIgnored != "" && c.ExpectedIfMatchIgnored != c.Expected {
			exp += " [" + c.ExpectedIfMatchIgnored + "]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, exp, c.Observed, status, served, c.Verdict)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\n[X] = expected if the server ignores resourceVersionMatch (API Concepts list table footnote)\n")
	printProxyChain(w, r.Cells)
	fmt.Fprintf(w, "detected: resourceVersionMatch=%s streamingList=%s bookmarks=%s endBookmark=%s shardSelector(%s)=%s\n",
		r.Detected.ResourceVersionMatch, r.Detected.StreamingList, r.Detected.Bookmarks, r.Detected.EndBookmark, shardGroupVersion, r.Detected.ShardSelector)
	fmt.Fprintf(w, "%d cells: %d as specified, %d as if resourceVersionMatch were ignored, %d differ", r.Summary.Cells, r.Summary.AsSpecified, r.Summary.MatchIgnored, r.Summary.Differs)
	if r.Summary.NotApplicable > 0 {
		fmt.Fprintf(w, ", %d not applicable", r.Summary.NotApplicable)
	}
	if r.Summary.Inconclusive > 0 {
		fmt.Fprintf(w, ", %d inconclusive", r.Summary.Inconclusive)
	}
	fmt.Fprintf(w, " (%.1fs)\n", r.DurationSeconds)
}

// printProxyChain prints the proxy-chain cells with their evidence, the
// public report and what steadywatch does.
func printProxyChain(w io.Writer, cells []cellReport) {
	first := true
	for _, c := range cells {
		if c.Kind != KindProxyChain {
			continue
		}
		if first {
			fmt.Fprintf(w, "\nproxy chain (one streaming list through every proxy between you and the apiserver):\n")
			first = false
		}
		fmt.Fprintf(w, "  %s: %s\n    evidence: %s\n", c.ID, strings.ToUpper(c.Result), c.Evidence)
		if c.Result == ResultFault {
			fmt.Fprintf(w, "    reported: %s\n    steadywatch: %s\n", c.Report, c.Steadywatch)
		}
	}
	if !first {
		fmt.Fprintln(w)
	}
}
