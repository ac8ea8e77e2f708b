package chaos

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"time"
)

// Kind is a kind of fault.
type Kind string

// The fault kinds. Each is applied to every informer's proxy at once, so
// ours and stock see the same schedule.
const (
	// RestartAPIServer stops and starts apiserver Fault.Server (its watch
	// cache is rebuilt from etcd; clients fail over to the other one).
	RestartAPIServer Kind = "restart-apiserver"
	// CompactEtcd compacts etcd at its current revision the way the
	// apiserver's compactor does: every older resourceVersion becomes 410.
	CompactEtcd Kind = "compact-etcd"
	// DropWatches resets every in-flight watch stream (an error event).
	DropWatches Kind = "drop-watches"
	// EndWatches ends every watch cleanly (as a watch timeout does).
	EndWatches Kind = "end-watches"
	// StallWatches freezes watch streams for Fault.Duration.
	StallWatches Kind = "stall-watches"
	// Gone410Watch answers the next watch with a 410 ERROR event (as from the
	// watch cache) after ending the current ones.
	Gone410Watch Kind = "410-watch-event"
	// Gone410List answers the next lists with 410 Expired (and ends watches
	// with a 410 event so a relist follows).
	Gone410List Kind = "410-list"
	// Throttle429 answers the next requests with 429 and Retry-After: 1.
	Throttle429 Kind = "429-retry-after"
	// Internal500 answers the next requests with a plain 500.
	Internal500 Kind = "500"
	// TooLarge504 answers the next requests with 504
	// ResourceVersionTooLarge and Retry-After: 1.
	TooLarge504 Kind = "504-too-large-retry-after"
	// FailoverLagging pins the clients to apiserver Fault.Server for
	// Fault.Duration (its watch cache may lag the other's), then returns them
	// to failover mode; FailoverBack is that return, scheduled explicitly.
	FailoverLagging Kind = "failover-to-lagging"
	FailoverBack    Kind = "failover-back"
)

// AllKinds are the kinds a schedule draws from, in a fixed order (the
// order matters for reproducibility from a replay number).
var AllKinds = []Kind{RestartAPIServer, CompactEtcd, DropWatches, EndWatches, StallWatches,
	Gone410Watch, Gone410List, Throttle429, Internal500, TooLarge504, FailoverLagging}

// weights says how often each kind is drawn relative to the others.
// Restarts are expensive on a 2-core machine (an apiserver start is a few
// seconds of CPU), so they are rarer.
var weights = map[Kind]int{
	RestartAPIServer: 1, CompactEtcd: 2, DropWatches: 3, EndWatches: 2, StallWatches: 2,
	Gone410Watch: 2, Gone410List: 2, Throttle429: 2, Internal500: 2, TooLarge504: 2, FailoverLagging: 2,
}

// Fault is one scheduled fault.
type Fault struct {
	At       time.Duration // since the start of the run
	Kind     Kind
	Server   int           // apiserver index, for restart and failover
	Duration time.Duration // stall / pin length
	Count    int           // how many requests an injected rule answers
}

func (f Fault) String() string {
	s := fmt.Sprintf("+%6.2fs %s", f.At.Seconds(), f.Kind)
	switch f.Kind {
	case RestartAPIServer, FailoverLagging, FailoverBack:
		s += fmt.Sprintf(" server=%d", f.Server)
	}
	if f.Duration > 0 {
		s += fmt.Sprintf(" for=%s", f.Duration)
	}
	if f.Count > 0 {
		s += fmt.Sprintf(" count=%d", f.Count)
	}
	return s
}

// ScheduleOptions shape a schedule. Zero fields take the defaults noted.
type ScheduleOptions struct {
	// Duration is the window faults are fired in; no fault starts after it
	// (a FailoverBack may be pulled in to end by then). Required.
	Duration time.Duration
	// MinGap and MaxGap bound the time between two faults. Defaults 1.5s, 4.5s.
	MinGap, MaxGap time.Duration
	// Servers is the number of apiservers (2 for HA; 1 disables failover). Default 1.
	Servers int
	// Kinds restricts the kinds drawn. Default AllKinds (minus failover with one server).
	Kinds []Kind
	// MaxStall bounds StallWatches durations (drawn in [1s, MaxStall]). Default 12s.
	MaxStall time.Duration
}

// Schedule returns the fault schedule numbered replay: the same number and
// options always give the same schedule, sorted by At.
func Schedule(replay int64, o ScheduleOptions) []Fault {
	if o.MinGap <= 0 {
		o.MinGap = 1500 * time.Millisecond
	}
	if o.MaxGap < o.MinGap {
		o.MaxGap = 3 * o.MinGap
	}
	if o.Servers <= 0 {
		o.Servers = 1
	}
	if o.MaxStall <= time.Second {
		o.MaxStall = 12 * time.Second
	}
	kinds := o.Kinds
	if len(kinds) == 0 {
		kinds = AllKinds
	}
	var pool []Kind
	for _, k := range kinds {
		if k == FailoverLagging && o.Servers < 2 {
			continue
		}
		w := weights[k]
		if w == 0 {
			w = 1
		}
		for i := 0; i < w; i++ {
			pool = append(pool, k)
		}
	}
	if len(pool) == 0 || o.Duration <= 0 {
		return nil
	}
	rng := rand.New(rand.NewSource(replay))
	gap := func() time.Duration {
		return o.MinGap + time.Duration(rng.Int63n(int64(o.MaxGap-o.MinGap)+1))
	}
	var out []Fault
	pinnedUntil := time.Duration(-1)
	for at := gap(); at < o.Duration; at += gap() {
		f := Fault{At: at, Kind: pool[rng.Intn(len(pool))]}
		switch f.Kind {
		case RestartAPIServer:
			f.Server = rng.Intn(o.Servers)
		case StallWatches:
			f.Duration = time.Second + time.Duration(rng.Int63n(int64(o.MaxStall-time.Second)+1)).Truncate(100*time.Millisecond)
		case Gone410List, Throttle429, Internal500, TooLarge504:
			f.Count = 1 + rng.Intn(3)
		case FailoverLagging:
			if at < pinnedUntil { // already pinned: make it a drop instead
				f.Kind = DropWatches
				break
			}
			f.Server = o.Servers - 1
			f.Duration = 2*time.Second + time.Duration(rng.Int63n(int64(6*time.Second))).Truncate(100*time.Millisecond)
			back := at + f.Duration
			if back > o.Duration {
				back = o.Duration
				f.Duration = back - at
			}
			pinnedUntil = back
			out = append(out, Fault{At: back, Kind: FailoverBack, Server: 0})
		}
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// Format renders a schedule one fault per line, for the log.
func Format(s []Fault) string {
	var b strings.Builder
	for _, f := range s {
		b.WriteString(f.String())
		b.WriteByte('\n')
	}
	return b.String()
}
