// Package fieldfailures reproduces list/watch failures that users reported
// against real servers, proxies and aggregated APIs, one row each, and runs
// stock client-go beside steadywatch through every one of them.
//
// Each row of Catalogue names the failure, the public reports (GitHub issues
// and pull requests, cited by owner/repo#N with their title and what they
// say) and what the harness makes the server or its proxy do. The Ginkgo
// suite in this directory (label field-failures) runs each row against a real
// kube-apiserver started by the harness, behind the fault proxy
// (e2e/harness/faults), and writes a Results JSON; Render turns that JSON
// into docs/field-failures.md (`make field-failures`).
//
// It is not a benchmark (times are measured once, on a shared machine) and
// not a conformance test of the servers: what a row does to the stream is
// the harness's emulation of the report, stated in the row.
package fieldfailures

import "strconv"

// Report is one public report of a failure.
type Report struct {
	// Ref is owner/repo#N.
	Ref string `json:"ref"`
	// URL is the report's GitHub address.
	URL string `json:"url"`
	// Title is the report's title, verbatim.
	Title string `json:"title"`
	// Says is a short summary of what the report says happened.
	Says string `json:"says"`
}

// Row is one reproduced failure.
type Row struct {
	// ID names the spec and the row ("bookmarks-filtered").
	ID string `json:"id"`
	// Failure is the failure in a few words.
	Failure string `json:"failure"`
	// Reports are the public reports, most direct first.
	Reports []Report `json:"reports"`
	// Emulation is what the server or the proxy does in this row.
	Emulation string `json:"emulation"`
}

func gh(owner, repo, kind string, n int, title, says string) Report {
	ref := owner + "/" + repo + "#" + strconv.Itoa(n)
	return Report{Ref: ref, URL: "https://github.com/" + owner + "/" + repo + "/" + kind + "/" + strconv.Itoa(n), Title: title, Says: says}
}

// Row IDs, in catalogue order.
const (
	BookmarksFiltered       = "bookmarks-filtered"
	InitialEventsEndMissing = "initial-events-end-missing"
	CutBeforeEndBookmark    = "cut-before-end-bookmark"
	ClosedAfterEndBookmark  = "closed-after-end-bookmark"
	EmptyWatch              = "empty-watch-instead-of-410"
	ConsistentRead429       = "consistent-read-429"
	StreamingList422        = "streaming-list-422"
	TooLargeWithoutCause    = "too-large-rv-without-cause"
	SendInitialEventsIgnore = "send-initial-events-ignored"
	HALaggingWatchCache     = "ha-lagging-watch-cache"
	OldAggregatedAPIServer  = "old-aggregated-apiserver"
)

// Catalogue is every reproduced failure, in the order of the generated page.
var Catalogue = []Row{
	{
		ID:      BookmarksFiltered,
		Failure: "A proxy filters BOOKMARK events out of watch streams",
		Reports: []Report{
			gh("gravitational", "teleport", "issues", 64188,
				"Kube agent drops BOOKMARK events from WatchList streams, breaking client-go v0.35+ informers",
				"The Teleport kube agent streams every ADDED event of a sendInitialEvents watch, but the terminating BOOKMARK annotated k8s.io/initial-events-end never reaches the client; k9s (client-go v0.35.0) and kubectl hang waiting for it."),
			gh("gravitational", "teleport", "pull", 66939,
				"kube: forward watch BOOKMARK events unfiltered",
				"The fix: the agent's resource filter rejected bookmarks (empty name and namespace) under any non-wildcard rule; bookmarks now bypass it."),
		},
		Emulation: "The proxy forwards every watch stream but removes every BOOKMARK event, the initial-events-end one included.",
	},
	{
		ID:      InitialEventsEndMissing,
		Failure: "Bookmarks sent without the k8s.io/initial-events-end annotation",
		Reports: []Report{
			gh("antrea-io", "antrea", "issues", 8123,
				"[BUG] controlplane watch-list streams do not mark the end of initial events, causing client-go watch-list informers to hang",
				"Antrea's aggregated controlplane API ends the initial objects with a BOOKMARK that lacks the k8s.io/initial-events-end annotation; Rancher 2.14.2 informers waited indefinitely and its UI became unusable (fixed by antrea-io/antrea#8124)."),
			gh("cozystack", "cozystack", "pull", 2786,
				"fix(api): emit initial-events-end bookmark for core.cozystack.io watches",
				"TenantSecret, TenantModule and TenantNamespace ignored sendInitialEvents and forwarded the backing watcher's bookmarks without the annotation; clients logged \"hasn't received required bookmark event marking the end of initial events stream\" on every reflector restart."),
		},
		Emulation: "The proxy removes the k8s.io/initial-events-end annotation from bookmarks and forwards them otherwise unchanged (resourceVersion kept).",
	},
	{
		ID:      CutBeforeEndBookmark,
		Failure: "A streaming list's stream ends before its end bookmark, every time",
		Reports: []Report{
			gh("kubernetes", "kubernetes", "issues", 140890,
				"WatchList informer retries indefinitely when an Aggregated API server never sends the initial-events-end Bookmark",
				"An aggregated API server sent the initial events of a WatchList request, never the end bookmark, and the stream was aborted after minutes; client-go's watchList() retried forever instead of falling back to a list, so one QuotaMonitor informer in kube-controller-manager never synced, ResourceQuota usage went stale and new pods were rejected."),
			gh("kubernetes", "kubernetes", "pull", 140902,
				"client-go/reflector: give up on watch-list after incomplete streams",
				"Proposed fix (open): bound how long watchList() re-establishes streams that end without the bookmark, then fall back to a list."),
		},
		Emulation: "The proxy forwards every initial event of a streaming list, then ends the stream cleanly in place of the initial-events-end bookmark, on every attempt.",
	},
	{
		ID:      ClosedAfterEndBookmark,
		Failure: "The watch is closed right after the end bookmark, whose resourceVersion is already too old",
		Reports: []Report{
			{Ref: "kubernetes/kubernetes#134837", URL: "https://github.com/kubernetes/kubernetes/issues/134837",
				Says: "A server closes the watch right after the end bookmark, so the bookmark's resourceVersion is already too old and the next watch is 410."},
		},
		Emulation: "The proxy ends each streaming list cleanly right after its initial-events-end bookmark and answers any later plain watch from that bookmark's resourceVersion with 410 Expired as a watch ERROR event (like the watch cache).",
	},
	{
		ID:      EmptyWatch,
		Failure: "Watches answered 200 and closed at once with no event instead of 410",
		Reports: []Report{
			gh("kubernetes", "kubernetes", "issues", 104171,
				"List watch request for Events with stale resourceVersion responds immediately without error",
				"Resuming an events.k8s.io/v1 Event watch from a stale resourceVersion got an immediate HTTP 200 with an empty body instead of 410 Gone; the client library retried in a busy loop that put strain on the apiserver."),
		},
		Emulation: "Once the clients synced, the proxy drops their watches and from then on answers every plain watch from a resourceVersion at or before that point with 200 and an immediate end of stream, no event (a compacted history whose 410 never comes); the row's writes follow.",
	},
	{
		ID:      ConsistentRead429,
		Failure: "Consistent (RV=\"\") reads answered 429 while the watch cache lags",
		Reports: []Report{
			gh("kubernetes", "kubernetes", "issues", 138494,
				"apiserver: consistent read fallback to etcd can overload apiserver and etcd when watch cache is behind",
				"When the watch cache is more than 3 s behind etcd, consistent LISTs fall back to etcd; during an etcd defragmentation this multiplied apiserver and etcd memory."),
			gh("kubernetes", "kubernetes", "pull", 138701,
				"apiserver: add feature gate to skip consistent list storage fallback",
				"Alpha gate ConsistentListFromCacheSkipTimeoutFallback: kube-apiserver returns HTTP 429 for consistent LIST requests that cannot be served from the watch cache within the timeout window."),
		},
		Emulation: "For the first 8 s of the row the proxy answers every consistent read, a list or a streaming list with resourceVersion unset, with 429 TooManyRequests and Retry-After: 1.",
	},
	{
		ID:      StreamingList422,
		Failure: "Streaming lists refused with 422 \"sendInitialEvents is forbidden\"",
		Reports: []Report{
			gh("kubernetes", "kubernetes", "issues", 135583,
				"v1.35 - sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
				"client-go v0.35.0-rc.0 against an EKS v1.33 cluster (WatchList gate off on the server) got this 422 for its streaming lists; the reporter expected backwards compatibility with older servers."),
		},
		Emulation: "The proxy answers every watch with sendInitialEvents=true with 422 Invalid and the apiserver's message; /version still says the server is current.",
	},
	{
		ID:      TooLargeWithoutCause,
		Failure: "\"Too large resource version\" without the ResourceVersionTooLarge cause (1.17.0-1.18.5 servers)",
		Reports: []Report{
			gh("kubernetes", "kubernetes", "pull", 94316,
				"Fix bug in reflector not detecting \"Too large resource version\" error",
				"API servers 1.17.0-1.18.5 do not set the ResourceVersionTooLarge cause type; the earlier fix (kubernetes/kubernetes#92537, for kubernetes/kubernetes#91073) checked only the type, so client-go 1.19 reflectors could not recover from the error against them."),
		},
		Emulation: "After the clients synced, the proxy answers every list and streaming list at a resourceVersion other than \"\" and \"0\" with 504 Timeout \"Too large resource version\" whose cause has the message but no type, and forces a relist with one 410 watch ERROR event per client.",
	},
	{
		ID:      SendInitialEventsIgnore,
		Failure: "A server ignores sendInitialEvents: initial ADDED events, no end bookmark",
		Reports: []Report{
			gh("derailed", "k9s", "pull", 4186,
				"fix: report a stalled informer sync instead of spinning forever",
				"A server that accepts sendInitialEvents, streams the initial ADDED events and never sends the initial-events-end bookmark leaves client-go v0.35+ informers unsynced with no error; reported against v1.18 (derailed/k9s#4044) and later on GKE Autopilot v1.35.6."),
			gh("cozystack", "cozystack", "pull", 2786,
				"fix(api): emit initial-events-end bookmark for core.cozystack.io watches",
				"Three aggregated resources ignored ListOptions.SendInitialEvents."),
		},
		Emulation: "The proxy strips sendInitialEvents and resourceVersionMatch from every request, so the server serves a streaming list as a plain watch from the most recent state (ADDED events, then changes), and strips the k8s.io/initial-events-end annotation: v1.37.2 was observed to end even a plain watch's initial state (resourceVersion unset, bookmarks allowed) with the annotated bookmark, which a server that ignores sendInitialEvents never sends.",
	},
	{
		ID:      HALaggingWatchCache,
		Failure: "An HA member whose watch cache is far behind",
		Reports: []Report{
			gh("kubernetes", "kubernetes", "issues", 97294,
				"First kube-apiserver in the HA setup has out-of-date watch cache for an extend period of time",
				"In an HA control plane one kube-apiserver's watch cache stayed out of date for an extended period, so lists and watches served from it (resourceVersion=0) returned old state."),
		},
		Emulation: "Two real apiservers on one etcd behind each client's balancer: the clients sync through apiserver-0, apiserver-1 is frozen (SIGSTOP) while the row's writes go to apiserver-0, the clients are moved to apiserver-1 (watches dropped) and it is resumed with its watch cache behind.",
	},
}

// The real aggregated apiserver's row (appended to Catalogue in init, so that
// the list above reads as the proxy's rows).
var aggregatedRow = Row{
	ID:      OldAggregatedAPIServer,
	Failure: "A real aggregated apiserver on an old k8s.io/apiserver (v0.18) behind a current kube-apiserver",
	Reports: []Report{
		gh("kubernetes", "kubernetes", "issues", 140890,
			"WatchList informer retries indefinitely when an Aggregated API server never sends the initial-events-end Bookmark",
			"One QuotaMonitor informer of kube-controller-manager, on an aggregated API's resource, never synced."),
		gh("antrea-io", "antrea", "issues", 8123,
			"[BUG] controlplane watch-list streams do not mark the end of initial events, causing client-go watch-list informers to hang",
			"Rancher's informers on Antrea's aggregated API waited indefinitely."),
	},
	Emulation: "No fault: k8s.io/sample-apiserver v0.18.19, built from the Go module proxy, runs on the cluster's etcd and is registered through an APIService (v1alpha1.wardle.example.com) and an ExternalName Service (localhost) on the current kube-apiserver; the clients watch its flunders through the aggregator. Its watches ignore sendInitialEvents (ADDED events, never the end bookmark). Afterwards a drop-in informer on ConfigMaps of the same host, sharing the compat Server, must still stream its list.",
}

func init() { Catalogue = append(Catalogue, aggregatedRow) }

// RowByID returns the catalogue row id.
func RowByID(id string) (Row, bool) {
	for _, r := range Catalogue {
		if r.ID == id {
			return r, true
		}
	}
	return Row{}, false
}
