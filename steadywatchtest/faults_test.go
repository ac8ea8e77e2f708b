package steadywatchtest_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// TestFaults: each misbehaviour changes what a well-behaved server answers
// (the check runs against both, so it cannot pass on a server that ignores
// the fault). check returns what the client observed.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	// streamed is a well-behaved streaming list of the history, then the update.
	const streamed = "ADDED a@4,ADDED c@3,BOOKMARK @5 end,MODIFIED c@6"
	listObs := func(o metav1.ListOptions) func(t *testing.T, s *cmServer) string {
		return func(t *testing.T, s *cmServer) string {
			obj, err := s.List(ctx, o)
			if err != nil {
				return "error " + err.Error()
			}
			rv, _, _ := testfake.ListRV(t, obj)
			return "rv " + rv + ": " + items(t, obj)
		}
	}
	// streamObs opens a watch and updates c at once: the events up to that
	// update (or the end of the stream) are the observation.
	streamObs := func(o metav1.ListOptions) func(t *testing.T, s *cmServer) string {
		return func(t *testing.T, s *cmServer) string {
			w, err := s.Watch(ctx, o)
			if err != nil {
				return "error " + err.Error()
			}
			defer w.Stop()
			update := "MODIFIED c@" + touch(t, s, "c")
			var got []string
			for len(got) < 10 {
				e := next(t, w)
				got = append(got, e)
				if e == "CLOSED" || e == update {
					break
				}
			}
			return strings.Join(got, ",")
		}
	}
	for _, tc := range []struct {
		name   string
		faults steadywatchtest.Faults
		setup  func(t *testing.T, s *cmServer)
		check  func(t *testing.T, s *cmServer) string
		good   string // the well-behaved server's answer
		bad    string // the misbehaving one's (prefix for errors)
	}{
		{
			name: "IgnoreResourceVersionMatch: Exact without limit served newest", faults: steadywatchtest.Faults{IgnoreResourceVersionMatch: true},
			check: listObs(metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: ex}),
			good:  "rv 3: a@1 b@2 c@3", bad: "rv 5: a@4 c@3",
		},
		{
			name: "IgnoreResourceVersionMatch: NotOlderThan with limit read as Exact", faults: steadywatchtest.Faults{IgnoreResourceVersionMatch: true},
			setup: func(t *testing.T, s *cmServer) { _ = s.Compact("4") },
			check: listObs(metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: nop, Limit: 5}),
			good:  "rv 5: a@4 c@3", bad: "error too old resource version: 3 (4)",
		},
		{
			name: "IgnoreResourceVersionMatch: match without resourceVersion accepted", faults: steadywatchtest.Faults{IgnoreResourceVersionMatch: true},
			check: listObs(metav1.ListOptions{ResourceVersionMatch: ex}),
			good:  "error ListOptions.meta.k8s.io", bad: "rv 5: a@4 c@3",
		},
		{
			name: "NameListsFromNewest: a single-name list ignores resourceVersion and limit", faults: steadywatchtest.Faults{NameListsFromNewest: true},
			check: listObs(metav1.ListOptions{FieldSelector: "metadata.name=a", ResourceVersion: "3", ResourceVersionMatch: ex, Limit: 1}),
			good:  "rv 3: a@1", bad: "rv 5: a@4",
		},
		{
			name: "V118: streaming list is a plain watch without the end bookmark", faults: steadywatchtest.V118(),
			check: streamObs(streaming("")),
			good:  streamed, bad: "ADDED a@4,ADDED c@3,MODIFIED c@6",
		},
		{
			name: "IgnoreSendInitialEvents alone (1.19-1.26): 422 for the match", faults: steadywatchtest.Faults{IgnoreSendInitialEvents: true},
			check: streamObs(streaming("")),
			good:  streamed, bad: "error ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
		},
		{
			name: "RefuseStreamingList", faults: steadywatchtest.Faults{RefuseStreamingList: true},
			check: streamObs(streaming("")),
			good:  streamed, bad: "error ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
		},
		{
			name: "RefuseStreamingList leaves plain watches alone", faults: steadywatchtest.Faults{RefuseStreamingList: true},
			check: streamObs(metav1.ListOptions{}),
			good:  "ADDED a@4,ADDED c@3,MODIFIED c@6", bad: "ADDED a@4,ADDED c@3,MODIFIED c@6",
		},
		{
			name: "DropBookmarks", faults: steadywatchtest.Faults{DropBookmarks: true},
			check: streamObs(streaming("")),
			good:  streamed, bad: "ADDED a@4,ADDED c@3,MODIFIED c@6",
		},
		{
			name: "DropBookmarks: none on demand either", faults: steadywatchtest.Faults{DropBookmarks: true},
			check: func(t *testing.T, s *cmServer) string {
				w := watchOf(t, s, metav1.ListOptions{ResourceVersion: "5", AllowWatchBookmarks: true})
				s.Bookmark()
				touch(t, s, "c")
				return next(t, w)
			},
			good: "BOOKMARK @5", bad: "MODIFIED c@6",
		},
		{
			name: "NoInitialEventsAnnotation", faults: steadywatchtest.Faults{NoInitialEventsAnnotation: true},
			check: streamObs(streaming("")),
			good:  streamed, bad: "ADDED a@4,ADDED c@3,BOOKMARK @5,MODIFIED c@6",
		},
		{
			name: "CloseBeforeEndBookmark", faults: steadywatchtest.Faults{CloseBeforeEndBookmark: true},
			check: streamObs(streaming("")),
			good:  streamed, bad: "ADDED a@4,ADDED c@3,CLOSED",
		},
		{
			name: "CloseAfterEndBookmark", faults: steadywatchtest.Faults{CloseAfterEndBookmark: true},
			check: streamObs(streaming("")),
			good:  streamed, bad: "ADDED a@4,ADDED c@3,BOOKMARK @5 end,CLOSED",
		},
		{
			name: "GoneOnEveryWatch", faults: steadywatchtest.Faults{GoneOnEveryWatch: true},
			check: streamObs(metav1.ListOptions{}),
			good:  "ADDED a@4,ADDED c@3,MODIFIED c@6", bad: "ERROR 410 Expired,CLOSED",
		},
		{
			name: "EmptyWatches", faults: steadywatchtest.Faults{EmptyWatches: true},
			check: streamObs(metav1.ListOptions{ResourceVersion: "5"}),
			good:  "MODIFIED c@6", bad: "CLOSED",
		},
		{
			name: "Lagging: Any is served behind", faults: steadywatchtest.Faults{Lagging: 2},
			check: listObs(metav1.ListOptions{ResourceVersion: "0"}),
			good:  "rv 5: a@4 c@3", bad: "rv 3: a@1 b@2 c@3",
		},
		{
			name: "Lagging: NotOlderThan newer than the cache is too large", faults: steadywatchtest.Faults{Lagging: 2},
			check: listObs(metav1.ListOptions{ResourceVersion: "4", ResourceVersionMatch: nop}),
			good:  "rv 5: a@4 c@3", bad: "error Timeout: Too large resource version: 4, current: 3",
		},
		{
			name: "Lagging: MostRecent stays consistent", faults: steadywatchtest.Faults{Lagging: 2},
			check: listObs(metav1.ListOptions{}),
			good:  "rv 5: a@4 c@3", bad: "rv 5: a@4 c@3",
		},
		{
			name: "Lagging: a watch from 0 starts behind and catches up", faults: steadywatchtest.Faults{Lagging: 2},
			check: streamObs(metav1.ListOptions{ResourceVersion: "0"}),
			good:  "ADDED a@4,ADDED c@3,MODIFIED c@6", bad: "ADDED a@1,ADDED b@2,ADDED c@3,MODIFIED a@4,DELETED b@5,MODIFIED c@6",
		},
		{
			name: "RepeatContinueToken", faults: steadywatchtest.Faults{RepeatContinueToken: true},
			check: func(t *testing.T, s *cmServer) string {
				first, err := s.List(ctx, metav1.ListOptions{Limit: 1})
				if err != nil {
					return err.Error()
				}
				_, tok, _ := testfake.ListRV(t, first)
				obj, err := s.List(ctx, metav1.ListOptions{Limit: 1, Continue: tok})
				if err != nil {
					return err.Error()
				}
				_, tok2, _ := testfake.ListRV(t, obj)
				return items(t, obj) + " same token: " + map[bool]string{true: "yes", false: "no"}[tok2 == tok]
			},
			good: "c@3 same token: no", bad: "c@3 same token: yes",
		},
		{
			name: "RetryAfter", faults: steadywatchtest.Faults{RetryAfter: 7, RetryAfterRequests: 2},
			check: func(t *testing.T, s *cmServer) string {
				var out []string
				for range 3 {
					_, err := s.List(ctx, metav1.ListOptions{})
					d, _ := apierrors.SuggestsClientDelay(err)
					r := strconv.Itoa(int(code(err)))
					if d > 0 {
						r += " retry-after " + strconv.Itoa(d)
					}
					out = append(out, r)
				}
				return strings.Join(out, ",")
			},
			good: "200,200,200", bad: "429 retry-after 7,429 retry-after 7,200",
		},
		{
			name: "GarbageBookmarkRV", faults: steadywatchtest.Faults{GarbageBookmarkRV: true},
			check: streamObs(streaming("")),
			good:  streamed, bad: "ADDED a@4,ADDED c@3,BOOKMARK @not-a-resource-version end,MODIFIED c@6",
		},
		{
			name: "StaleEvent", faults: steadywatchtest.Faults{StaleEvent: true},
			check: func(t *testing.T, s *cmServer) string {
				w := watchOf(t, s, metav1.ListOptions{ResourceVersion: "5"})
				touch(t, s, "c")
				last := "MODIFIED a@" + touch(t, s, "a")
				var got []string
				for len(got) < 5 && (len(got) == 0 || got[len(got)-1] != last) {
					got = append(got, next(t, w))
				}
				return strings.Join(got, ",")
			},
			good: "MODIFIED c@6,MODIFIED a@7", bad: "MODIFIED c@6,MODIFIED c@3,MODIFIED a@7",
		},
		{
			name: "GoneOnLists: a list at a resourceVersion is 410", faults: steadywatchtest.Faults{GoneOnLists: true},
			check: listObs(metav1.ListOptions{ResourceVersion: "4", ResourceVersionMatch: nop}),
			good:  "rv 5: a@4 c@3", bad: "error too old resource version: 4",
		},
		{
			name: "GoneOnLists: Any and MostRecent still served", faults: steadywatchtest.Faults{GoneOnLists: true},
			check: func(t *testing.T, s *cmServer) string {
				return listObs(metav1.ListOptions{ResourceVersion: "0"})(t, s) + "; " + listObs(metav1.ListOptions{})(t, s)
			},
			good: "rv 5: a@4 c@3; rv 5: a@4 c@3", bad: "rv 5: a@4 c@3; rv 5: a@4 c@3",
		},
		{
			name: "ReplayWatchEvents: a watch re-delivers history before its resourceVersion", faults: steadywatchtest.Faults{ReplayWatchEvents: 2},
			check: streamObs(metav1.ListOptions{ResourceVersion: "5"}),
			good:  "MODIFIED c@6", bad: "MODIFIED a@4,DELETED b@5,MODIFIED c@6",
		},
		{
			name: "ReplayWatchEvents: not on a watch from 0", faults: steadywatchtest.Faults{ReplayWatchEvents: 2},
			check: streamObs(metav1.ListOptions{ResourceVersion: "0"}),
			good:  "ADDED a@4,ADDED c@3,MODIFIED c@6", bad: "ADDED a@4,ADDED c@3,MODIFIED c@6",
		},
		{
			name: "DuplicateEvents", faults: steadywatchtest.Faults{DuplicateEvents: true},
			check: func(t *testing.T, s *cmServer) string {
				w := watchOf(t, s, metav1.ListOptions{ResourceVersion: "5"})
				touch(t, s, "c")
				touch(t, s, "a")
				s.Close()
				return strings.Join(take(t, w, 6), ",")
			},
			good: "MODIFIED c@6,MODIFIED a@7,CLOSED", bad: "MODIFIED c@6,MODIFIED c@6,MODIFIED a@7,MODIFIED a@7,CLOSED",
		},
		{
			name: "CutWatchesAfter: a clean close after n events", faults: steadywatchtest.Faults{CutWatchesAfter: 1},
			check: func(t *testing.T, s *cmServer) string {
				w := watchOf(t, s, metav1.ListOptions{ResourceVersion: "5"})
				touch(t, s, "c")
				touch(t, s, "a")
				s.Close()
				return strings.Join(take(t, w, 3), ",")
			},
			good: "MODIFIED c@6,MODIFIED a@7,CLOSED", bad: "MODIFIED c@6,CLOSED",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, run := range []struct {
				faults steadywatchtest.Faults
				want   string
			}{{steadywatchtest.Faults{}, tc.good}, {tc.faults, tc.bad}} {
				s := history(t, steadywatchtest.Options{Faults: run.faults})
				if tc.setup != nil {
					tc.setup(t, s)
				}
				got := tc.check(t, s)
				if !strings.HasPrefix(got, run.want) || (!strings.HasPrefix(run.want, "error") && got != run.want) {
					t.Errorf("faults %+v:\n got  %q\n want %q", run.faults, got, run.want)
				}
			}
		})
	}
}
