package modeltest

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// A history is what one run plays: the scope every client watches and the
// steps, in order. Steps never fail: set creates or replaces, del of a
// missing object does nothing, so any sub-sequence of a history is a
// history too (which shrinking relies on).
type history struct {
	name      string
	namespace string // "" watches all namespaces
	selector  string // label selector, "" for everything
	// fromZero starts the servers at resourceVersion "0", as an empty
	// steadywatchtest server is and no real apiserver ever is (etcd's
	// revision counts the writes of every resource); generated histories
	// start at "1".
	fromZero bool
	steps    []step
}

// op is a step's kind.
type op string

const (
	opStart    op = "start"    // the clients start (before the first step if absent)
	opSet      op = "set"      // create or replace ns/name with label tier
	opDel      op = "del"      // delete ns/name if it exists
	opAdvance  op = "advance"  // move the resourceVersion on n (writes to other resources)
	opCompact  op = "compact"  // compact the history up to the current resourceVersion
	opBookmark op = "bookmark" // a BOOKMARK to every open watch
	opCut      op = "cut"      // end every open watch cleanly
	opFaults   op = "faults"   // switch the faults to a spec (see parseFaults); "" heals
	opWait     op = "wait"     // wait until every client has settled (run.settled), at most waitBudget
)

type step struct {
	op        op
	ns, name  string
	tier      string
	n         int
	faultSpec string
}

// Step constructors: a printed reproduction is written with them.
func start() step                       { return step{op: opStart} }
func set(ns, name, tier string) step    { return step{op: opSet, ns: ns, name: name, tier: tier} }
func del(ns, name string) step          { return step{op: opDel, ns: ns, name: name} }
func advance(n int) step                { return step{op: opAdvance, n: n} }
func compact() step                     { return step{op: opCompact} }
func bookmark() step                    { return step{op: opBookmark} }
func cut() step                         { return step{op: opCut} }
func faults(spec string) step           { return step{op: opFaults, faultSpec: spec} }
func wait() step                        { return step{op: opWait} }
func (h history) with(s []step) history { h.steps = s; return h }

// GoString renders the step as the constructor call that builds it.
func (s step) GoString() string {
	switch s.op {
	case opSet:
		return fmt.Sprintf("set(%q, %q, %q)", s.ns, s.name, s.tier)
	case opDel:
		return fmt.Sprintf("del(%q, %q)", s.ns, s.name)
	case opAdvance:
		return fmt.Sprintf("advance(%d)", s.n)
	case opFaults:
		return fmt.Sprintf("faults(%q)", s.faultSpec)
	default:
		return string(s.op) + "()"
	}
}

// GoString renders the history as an element of regression_test.go's table.
func (h history) GoString() string {
	var b strings.Builder
	fmt.Fprintf(&b, "{\n\tname: %q, namespace: %q, selector: %q,", h.name, h.namespace, h.selector)
	if h.fromZero {
		b.WriteString(" fromZero: true,")
	}
	b.WriteString("\n\tsteps: []step{")
	for i, s := range h.steps {
		if i%4 == 0 {
			b.WriteString("\n\t\t")
		} else {
			b.WriteString(" ")
		}
		b.WriteString(s.GoString() + ",")
	}
	b.WriteString("\n\t},\n},")
	return b.String()
}

// parseFaults reads a comma-separated fault spec: gone-watch
// (GoneOnEveryWatch), gone-list (GoneOnLists), empty (EmptyWatches), stale
// (StaleEvent), dup (DuplicateEvents), lag=N (Lagging), replay=N
// (ReplayWatchEvents), cut=N (CutWatchesAfter).
func parseFaults(spec string) (steadywatchtest.Faults, error) {
	var f steadywatchtest.Faults
	for _, part := range strings.Split(spec, ",") {
		if part == "" {
			continue
		}
		name, arg, _ := strings.Cut(part, "=")
		n := 0
		if arg != "" {
			var err error
			if n, err = strconv.Atoi(arg); err != nil || n <= 0 {
				return f, fmt.Errorf("fault %q: want a positive count", part)
			}
		}
		switch name {
		case "gone-watch":
			f.GoneOnEveryWatch = true
		case "gone-list":
			f.GoneOnLists = true
		case "empty":
			f.EmptyWatches = true
		case "stale":
			f.StaleEvent = true
		case "dup":
			f.DuplicateEvents = true
		case "lag":
			f.Lagging = int64(n)
		case "replay":
			f.ReplayWatchEvents = n
		case "cut":
			f.CutWatchesAfter = n
		default:
			return f, fmt.Errorf("unknown fault %q", name)
		}
	}
	return f, nil
}

// faultNames are the faults a history draws from (parseFaults).
var faultNames = []string{"gone-watch", "gone-list", "empty", "stale", "dup", "lag", "replay", "cut"}

// generate draws history number idx of the run whose random stream is stream: the same pair
// always gives the same history.
func generate(stream uint64, idx int) history {
	r := rand.New(rand.NewPCG(stream, uint64(idx)))
	h := history{name: fmt.Sprintf("stream %d history %d", stream, idx)}
	if r.IntN(3) == 0 {
		h.namespace = "a"
	}
	if r.IntN(2) == 0 {
		h.selector = "tier=blue"
	}
	h.fromZero = r.IntN(16) == 0
	namespaces := []string{"a", "b"}
	names := []string{"x", "y", "z"}
	tiers := []string{"blue", "green"}
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	for range r.IntN(4) {
		h.steps = append(h.steps, set(pick(namespaces), pick(names), pick(tiers)))
	}
	h.steps = append(h.steps, start())
	faulty := 0 // fault windows opened, at most maxFaultWindows a history
	for n := 6 + r.IntN(18); n > 0; n-- {
		switch p := r.IntN(100); {
		case p < 34:
			h.steps = append(h.steps, set(pick(namespaces), pick(names), pick(tiers)))
		case p < 46:
			h.steps = append(h.steps, del(pick(namespaces), pick(names)))
		case p < 52: // re-create with the same name
			ns, name := pick(namespaces), pick(names)
			h.steps = append(h.steps, del(ns, name), set(ns, name, pick(tiers)))
		case p < 56:
			h.steps = append(h.steps, advance(1+r.IntN(3)))
		case p < 61:
			h.steps = append(h.steps, compact())
		case p < 66:
			h.steps = append(h.steps, bookmark())
		case p < 71:
			h.steps = append(h.steps, cut())
		case p < 88:
			h.steps = append(h.steps, wait())
		default:
			if faulty >= maxFaultWindows || r.IntN(3) == 0 {
				h.steps = append(h.steps, faults(""))
				continue
			}
			faulty++
			var spec []string
			for _, f := range r.Perm(len(faultNames))[:1+r.IntN(2)] {
				name := faultNames[f]
				switch name {
				case "lag", "replay", "cut":
					name += "=" + strconv.Itoa(1+r.IntN(4))
				}
				spec = append(spec, name)
			}
			h.steps = append(h.steps, faults(strings.Join(spec, ",")))
			if r.IntN(2) == 0 {
				// Faults reach the watches opened after them: cut the open
				// ones so that every client meets them at once.
				h.steps = append(h.steps, cut())
			}
		}
	}
	return h
}
