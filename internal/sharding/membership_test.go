package sharding

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

type group struct {
	t       *testing.T
	cs      *fake.Clientset
	clock   *clocktesting.FakeClock
	members map[string]*Membership
}

func newGroup(t *testing.T) *group {
	return &group{t: t, cs: fake.NewClientset(), clock: clocktesting.NewFakeClock(time.Unix(1e9, 0)), members: map[string]*Membership{}}
}

func (g *group) join(id string) *Membership {
	g.t.Helper()
	m, err := NewMembership(MembershipOptions{Leases: g.cs.CoordinationV1(), Namespace: "ops", Group: "widgets", Identity: id, Clock: g.clock})
	if err != nil {
		g.t.Fatal(err)
	}
	g.members[id] = m
	return m
}

// check fails when a slice is acted on by two members, and returns how many
// slices are acted on by some member.
func (g *group) check(when string) int {
	g.t.Helper()
	owner := map[int]string{}
	for id, m := range g.members {
		for _, s := range m.View().Acting {
			if o, dup := owner[s]; dup {
				g.t.Fatalf("%s: slice %d acted on by %s and %s", when, s, o, id)
			}
			owner[s] = id
		}
	}
	return len(owner)
}

// rounds runs n rounds of every listed member in a random order, checking
// after each single round.
func (g *group) rounds(rng *rand.Rand, n int, ids ...string) {
	g.t.Helper()
	for i := range n {
		order := slices.Clone(ids)
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		for _, id := range order {
			g.members[id].round(context.Background())
			g.check(fmt.Sprintf("round %d of %s", i, id))
		}
		g.clock.Step(DefaultRetryPeriod)
	}
}

func TestMembershipSplitsTheSpaceAmongLiveMembersOnceEach(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	g := newGroup(t)
	g.join("a")
	g.rounds(rng, 2, "a")
	if got := g.members["a"].View().Acting; len(got) != DefaultMembershipSlices {
		t.Fatalf("a single member acts on %v, want every slice", got)
	}
	g.join("b")
	g.join("c")
	g.rounds(rng, 5, "a", "b", "c")
	if n := g.check("steady"); n != DefaultMembershipSlices {
		t.Fatalf("steady state: %d of %d slices acted on", n, DefaultMembershipSlices)
	}
	for id, m := range g.members {
		v := m.View()
		if len(v.Acting) != DefaultMembershipSlices/3 || !slices.Equal(v.Acting, v.Desired) || len(v.Members) != 3 {
			t.Fatalf("%s: %+v, want a third of the slices, acting = desired, 3 members", id, v)
		}
	}
}

func TestMembershipAfterACrashWaitsForTheLeaseThenTakesOver(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	g := newGroup(t)
	for _, id := range []string{"a", "b", "c"} {
		g.join(id)
	}
	g.rounds(rng, 5, "a", "b", "c")
	lost := g.members["c"].View().Acting
	delete(g.members, "c") // kill -9: its Lease stays, unrenewed
	crash := g.clock.Now()
	// Until its Lease expires (as a and b observed it), c may still be
	// acting: nobody else may.
	for g.clock.Since(crash) < DefaultLeaseDuration-DefaultRetryPeriod {
		g.rounds(rng, 1, "a", "b")
		for _, id := range []string{"a", "b"} {
			if got := intersect(g.members[id].View().Acting, lost); len(got) > 0 {
				t.Fatalf("%s acts on %v of the crashed member's slices %v after it, before its Lease expired", id, got, g.clock.Since(crash))
			}
		}
	}
	for g.clock.Since(crash) < DefaultLeaseDuration+3*DefaultRetryPeriod {
		g.rounds(rng, 1, "a", "b")
	}
	if n := g.check("after takeover"); n != DefaultMembershipSlices {
		t.Fatalf("%v after the crash: %d of %d slices acted on", g.clock.Since(crash), n, DefaultMembershipSlices)
	}
}

func TestMembershipLeavingHandsOverAtOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	g := newGroup(t)
	for _, id := range []string{"a", "b"} {
		g.join(id)
	}
	g.rounds(rng, 4, "a", "b")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.members["b"].Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel: %v", err)
	}
	if got := g.members["b"].View().Acting; len(got) != 0 {
		t.Fatalf("b still acts on %v after leaving", got)
	}
	delete(g.members, "b")
	g.rounds(rng, 3, "a")
	if got := g.members["a"].View().Acting; len(got) != DefaultMembershipSlices {
		t.Fatalf("a acts on %d slices 3 rounds after b left, want all %d", len(got), DefaultMembershipSlices)
	}
}

func TestMembershipStopsActingWhenItCannotRenew(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	g := newGroup(t)
	g.join("a")
	g.rounds(rng, 2, "a")
	g.cs.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	start := g.clock.Now().Add(-DefaultRetryPeriod) // the last round that renewed
	for g.clock.Since(start) < DefaultRenewDeadline {
		g.rounds(rng, 1, "a")
		if len(g.members["a"].View().Acting) == 0 {
			t.Fatalf("a stopped acting %v after its renewals started failing, before the renew deadline", g.clock.Since(start))
		}
	}
	g.rounds(rng, 2, "a")
	if got := g.members["a"].View().Acting; len(got) != 0 {
		t.Fatalf("a acts on %v %v after its renewals started failing", got, g.clock.Since(start))
	}
}

func TestMembershipWaitsUntilNewSlicesAreReady(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	g := newGroup(t)
	m := g.join("a")
	var asked []string
	m.o.WaitReady = func(_ context.Context, acting Selector) error {
		asked = append(asked, acting.String())
		if len(asked) == 1 {
			return errors.New("cache not synced yet")
		}
		return nil
	}
	g.rounds(rng, 1, "a")
	if got := m.View().Acting; len(got) != 0 {
		t.Fatalf("acting on %v though WaitReady failed", got)
	}
	g.rounds(rng, 1, "a")
	if got := m.View().Acting; len(got) != DefaultMembershipSlices || len(asked) != 2 {
		t.Fatalf("acting on %v after WaitReady succeeded (asked %q)", got, asked)
	}
}

func TestMembershipRandomJoinsAndLeavesNeverShareASlice(t *testing.T) {
	for stream := range uint64(4) {
		randomJoinsAndLeaves(t, rand.New(rand.NewPCG(12, stream)))
	}
}

func randomJoinsAndLeaves(t *testing.T, rng *rand.Rand) {
	g := newGroup(t)
	ids := []string{"a", "b", "c", "d"}
	alive := map[string]bool{}
	for step := range 40 {
		id := ids[rng.IntN(len(ids))]
		switch {
		case !alive[id] && g.members[id] == nil:
			g.join(id)
			alive[id] = true
		case alive[id] && rng.IntN(2) == 0:
			delete(g.members, id) // crash
			alive[id] = false
		}
		var run []string
		for _, x := range ids {
			if alive[x] {
				run = append(run, x)
			}
		}
		if len(run) > 0 {
			g.rounds(rng, 1, run...)
		} else {
			g.clock.Step(DefaultRetryPeriod)
		}
		_ = step
	}
	// Once nothing changes for LeaseDuration and a few rounds, every slice
	// has exactly one owner.
	var run []string
	for _, x := range ids {
		if alive[x] {
			run = append(run, x)
		}
	}
	if len(run) == 0 {
		return
	}
	for range int(DefaultLeaseDuration/DefaultRetryPeriod) + 4 {
		g.rounds(rng, 1, run...)
	}
	if n := g.check("settled"); n != DefaultMembershipSlices {
		t.Fatalf("settled with members %v: %d of %d slices acted on", run, n, DefaultMembershipSlices)
	}
}

func TestSlicesRoundTrip(t *testing.T) {
	for _, s := range [][]int{nil, {0}, {0, 1, 2, 5, 7, 8}, {3, 4, 5, 6}} {
		if got := ParseSlices(FormatSlices(s)); !slices.Equal(got, s) {
			t.Errorf("ParseSlices(FormatSlices(%v)) = %v", s, got)
		}
	}
	if got := ParseSlices("x, 2-1, -3, 4-99999999, 7"); !slices.Equal(got, []int{7}) {
		t.Errorf("ParseSlices of garbage = %v, want [7]", got)
	}
}

func TestNewMembershipRejectsBadOptions(t *testing.T) {
	cs := fake.NewClientset()
	for _, o := range []MembershipOptions{
		{},
		{Leases: cs.CoordinationV1(), Namespace: "ops", Group: "g"},
		{Leases: cs.CoordinationV1(), Namespace: "ops", Group: "g", Identity: "a", RenewDeadline: 20 * time.Second},
		{Leases: cs.CoordinationV1(), Namespace: "ops", Group: "g", Identity: "a", Field: "object.metadata.name"},
	} {
		if _, err := NewMembership(o); !errors.Is(err, ErrInvalidMembership) {
			t.Errorf("NewMembership(%+v) = %v, want ErrInvalidMembership", o, err)
		}
	}
}

func TestMembershipKeepsTheClaimUntilReleaseConfirms(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 13))
	g := newGroup(t)
	a := g.join("a")
	busy := true
	a.o.Release = func(_ context.Context, released []int) []int {
		if busy {
			return released
		}
		return nil
	}
	g.rounds(rng, 2, "a")
	g.join("b")
	for range 4 {
		g.rounds(rng, 1, "a", "b")
		if got := g.members["b"].View().Acting; len(got) > 0 {
			t.Fatalf("b acts on %v while a's Release has not confirmed", got)
		}
	}
	busy = false
	g.rounds(rng, 4, "a", "b")
	if n := g.check("released"); n != DefaultMembershipSlices || len(g.members["b"].View().Acting) == 0 {
		t.Fatalf("after Release confirmed: %d slices acted on, b acts on %v", n, g.members["b"].View().Acting)
	}
}
