package sharding

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Labels and annotations of the member Leases.
const (
	// LabelGroup names the group of replicas a member Lease belongs to.
	LabelGroup = "shard.steadywatch.io/group"
	// AnnotationClaims lists the slices a member acts on, e.g. "0-5,12".
	AnnotationClaims = "shard.steadywatch.io/claims"
	// AnnotationSlices is the number of slices the group splits the hash
	// space into; members that disagree ignore each other's claims' meaning
	// and never act on a slice another member claims.
	AnnotationSlices = "shard.steadywatch.io/slices"
)

// Defaults of MembershipOptions: client-go's leader election defaults.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
	// DefaultMembershipSlices: 24 divides evenly among 1, 2, 3, 4, 6 and 8 members.
	DefaultMembershipSlices = 24
)

// MembershipOptions configures a Membership.
type MembershipOptions struct {
	// Leases is the client of the coordination.k8s.io/v1 Leases
	// (clientset.CoordinationV1()). Required.
	Leases coordinationclient.LeasesGetter
	// Namespace holds the member Leases. Required.
	Namespace string
	// Group names the replicas that share the objects (an operator's name).
	// Required; a DNS label, it prefixes every member Lease's name.
	Group string
	// Identity is this replica's name in the group (a pod name). Required;
	// unique in the group.
	Identity string
	// Slices is how many slices of the hash space the group hands out
	// (Assign). Default DefaultMembershipSlices. Every member of a group must
	// use the same value.
	Slices int
	// LeaseDuration: a member whose Lease has not changed for this long, as
	// this replica observed it, is gone. Default 15s.
	LeaseDuration time.Duration
	// RenewDeadline: a member that could not renew its own Lease for this
	// long stops acting on every slice; less than LeaseDuration, so it has
	// stopped before any other member takes its slices. Default 10s.
	RenewDeadline time.Duration
	// RetryPeriod is the time between two rounds (list the group's Leases,
	// renew our own), jittered by up to 20%. Default 2s.
	RetryPeriod time.Duration
	// WaitReady, if set, is called before newly assigned slices are acted on,
	// with the Selector of every slice this member will then act on, and at
	// most RenewDeadline/2 to return; the sharded cache lists its new ranges
	// there ("list before acting": WaitCovers). The new slices are in
	// Desired (and so in CacheSelector) before it is called. An error leaves
	// the slices unacted on this round.
	WaitReady func(ctx context.Context, acting Selector) error
	// Release, if set, is called after this member stopped acting on slices
	// (Owns is already false for their objects) and before its claim on
	// them goes, with those slices and at most RenewDeadline/2 to return:
	// the controller waits there for its reconciles of those objects that
	// are still running, and returns the slices that are still busy. They
	// stay claimed, so no other member starts on them, and are offered
	// again next round; the others are let go.
	Release func(ctx context.Context, released []int) (busy []int)
	// OnChange, if set, is called with each new View (from Run's goroutine).
	OnChange func(View)
	// Field is the hashed field of the Selectors this membership produces.
	// Default FieldUID.
	Field string
	// Clock is for tests. Default: the real clock.
	Clock clock.Clock
}

// View is what a member knows at the end of a round.
type View struct {
	// Members are the live members, sorted, this one included while its
	// own Lease is current.
	Members []string
	// Desired are the slices Assign gives this member: what its cache must
	// hold.
	Desired []int
	// Acting are the slices this member may reconcile now: claimed in its
	// Lease, claimed by no other live member, and (WaitReady) listed.
	Acting []int
}

// Membership finds the live replicas of a group through their
// coordination.k8s.io/v1 Leases, assigns the hash space among them (Assign,
// the same on every replica) and hands each slice to exactly one replica at
// a time:
//
//   - each member renews its own Lease every RetryPeriod, listing the slices
//     it acts on in AnnotationClaims;
//   - a member acts on a newly assigned slice only after its claim is
//     written and a list of the group's Leases, read after that write, shows
//     no other live member claiming it (of two members that claim one slice
//     at once, at least one reads the other's claim and yields);
//   - a member that is no longer assigned a slice stops acting on it before
//     it removes the claim; a member that cannot renew for RenewDeadline
//     stops acting on everything, before LeaseDuration lets the others take
//     its slices (as client-go's leader election);
//   - a member that stops (Run returns) stops acting and deletes its Lease,
//     so its slices move at once.
//
// So at most one member acts on an object at a time. The cache of a member
// holds Desired and Acting, so during a handoff both the old and the new
// owner hold the moving objects.
type Membership struct {
	o    MembershipOptions
	name string

	mu   sync.Mutex
	view View
	sel  Selector // Acting as a Selector

	seen      map[string]observed // other members' Leases, by name
	lastRenew time.Time           // start of our last successful renew
	releasing []int               // slices no longer acted on, still claimed while Release reports them busy
}

type observed struct {
	rv string
	at time.Time
}

// ErrInvalidMembership matches NewMembership's errors.
var ErrInvalidMembership = errors.New("invalid shard membership options")

// NewMembership validates o and returns a Membership that does nothing
// until Run.
func NewMembership(o MembershipOptions) (*Membership, error) {
	if o.Slices == 0 {
		o.Slices = DefaultMembershipSlices
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.RenewDeadline <= 0 {
		o.RenewDeadline = DefaultRenewDeadline
	}
	if o.RetryPeriod <= 0 {
		o.RetryPeriod = DefaultRetryPeriod
	}
	if o.Field == "" {
		o.Field = FieldUID
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	var bad []string
	if o.Leases == nil {
		bad = append(bad, "Leases is nil")
	}
	if o.Namespace == "" || o.Group == "" || o.Identity == "" {
		bad = append(bad, "Namespace, Group and Identity are required")
	}
	if o.Slices < 1 {
		bad = append(bad, "Slices must be positive")
	}
	if o.RenewDeadline >= o.LeaseDuration {
		bad = append(bad, "RenewDeadline must be less than LeaseDuration")
	}
	if o.Field != FieldUID && o.Field != FieldNamespace {
		bad = append(bad, "Field must be "+FieldUID+" or "+FieldNamespace)
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalidMembership, strings.Join(bad, "; "))
	}
	return &Membership{o: o, name: o.Group + "-" + o.Identity, seen: map[string]observed{}}, nil
}

// View returns what the member knew at the end of its last round.
func (m *Membership) View() View {
	m.mu.Lock()
	defer m.mu.Unlock()
	return View{Members: slices.Clone(m.view.Members), Desired: slices.Clone(m.view.Desired), Acting: slices.Clone(m.view.Acting)}
}

// Owns reports whether this member may reconcile obj now: its hashed field
// falls in a slice the member acts on. It changes when members join or
// leave (at most once per RetryPeriod); a controller checks it at the start
// of every reconcile and skips an object it does not own.
func (m *Membership) Owns(obj runtime.Object) bool {
	m.mu.Lock()
	sel := m.sel
	m.mu.Unlock()
	ok, err := sel.Matches(obj)
	return ok && err == nil
}

// CacheSelector is the range this member's caches hold: its Desired and
// Acting slices (during a handoff the old and the new owner both hold the
// moving objects). Before the first round, and with no slices, it selects
// nothing.
func (m *Membership) CacheSelector() Selector {
	v := m.View()
	s, _ := SelectorOf(m.o.Field, union(v.Desired, v.Acting), m.o.Slices)
	return s
}

// Run takes part in the group until ctx ends, then stops acting and deletes
// this member's Lease. It returns ctx's error.
func (m *Membership) Run(ctx context.Context) error {
	log := klog.FromContext(ctx).WithValues("shardGroup", m.o.Group, "identity", m.o.Identity)
	for {
		m.round(klog.NewContext(ctx, log))
		d := m.o.RetryPeriod + time.Duration(rand.Int64N(int64(m.o.RetryPeriod)/5+1))
		select {
		case <-ctx.Done():
			m.leave(log)
			return ctx.Err()
		case <-m.o.Clock.After(d):
		}
	}
}

// round is one list-renew-list cycle.
func (m *Membership) round(ctx context.Context) {
	log := klog.FromContext(ctx)
	start := m.o.Clock.Now()
	leases, err := m.list(ctx)
	if err != nil {
		log.V(2).Info("Listing the group's Leases failed", "err", err)
		m.checkDeadline(log, start)
		return
	}
	live, others := m.observe(leases, start)
	desired := Assign(append(live, m.o.Identity), m.o.Slices)[m.o.Identity]
	cur := m.View()
	members := append(slices.Clone(live), m.o.Identity)
	slices.Sort(members)
	members = slices.Compact(members)
	// Stop acting on what is no longer ours before the claim goes, and let
	// the cache start listing what is newly ours (Desired) before we act
	// on it.
	keep := intersect(cur.Acting, desired)
	why := "assignment changed"
	if len(keep) != len(cur.Acting) {
		why = "slices moved to other members"
	}
	m.publish(log, View{Members: members, Desired: desired, Acting: keep}, why)
	m.release(ctx, log, union(m.releasing, slices.DeleteFunc(slices.Clone(cur.Acting), func(s int) bool { return slices.Contains(keep, s) })))
	candidates := slices.DeleteFunc(slices.Clone(desired), func(s int) bool {
		return slices.Contains(keep, s) || others[s] || slices.Contains(m.releasing, s)
	})
	claims := union(union(keep, candidates), m.releasing)
	if err := m.renew(ctx, claims); err != nil {
		log.V(2).Info("Renewing the member Lease failed", "err", err)
		m.checkDeadline(log, start)
		return
	}
	m.mu.Lock()
	m.lastRenew = start
	m.mu.Unlock()
	acting := keep
	if len(candidates) > 0 {
		// Read after our claim was written: a slice another live member
		// claims too is yielded (that member may not have seen ours).
		if leases, err = m.list(ctx); err == nil {
			_, others = m.observe(leases, m.o.Clock.Now())
			var won []int
			for _, s := range candidates {
				if !others[s] {
					won = append(won, s)
				}
			}
			if len(won) > 0 {
				next := union(keep, won)
				if m.ready(ctx, log, next) {
					acting = next
				}
			}
		}
	}
	m.publish(log, View{Members: members, Desired: desired, Acting: acting}, "claims confirmed")
}

// release calls Release for slices this member no longer acts on; the ones
// it does not confirm stay claimed (m.releasing) until a later round.
func (m *Membership) release(ctx context.Context, log klog.Logger, released []int) {
	m.releasing = nil
	if len(released) == 0 || m.o.Release == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, m.o.RenewDeadline/2)
	defer cancel()
	if busy := intersect(m.o.Release(ctx, released), released); len(busy) > 0 {
		log.Info("Reconciles of released slices still running; keeping their claim this round", "slices", FormatSlices(busy), "released", FormatSlices(released))
		m.releasing = busy
	}
}

// ready calls WaitReady for the slices about to be acted on.
func (m *Membership) ready(ctx context.Context, log klog.Logger, acting []int) bool {
	if m.o.WaitReady == nil {
		return true
	}
	sel, _ := SelectorOf(m.o.Field, acting, m.o.Slices)
	// Bounded: a cache that is slow to list is asked again next round, and
	// the round's renewal is not held up past the renew deadline.
	ctx, cancel := context.WithTimeout(ctx, m.o.RenewDeadline/2)
	defer cancel()
	if err := m.o.WaitReady(ctx, sel); err != nil {
		log.V(2).Info("New slices not ready; not acting on them this round", "err", err)
		return false
	}
	return true
}

// checkDeadline stops acting when our Lease has not been renewed for
// RenewDeadline (measured from the start of the last successful renew).
func (m *Membership) checkDeadline(log klog.Logger, now time.Time) {
	m.mu.Lock()
	expired := !m.lastRenew.IsZero() && now.Sub(m.lastRenew) >= m.o.RenewDeadline && len(m.view.Acting) > 0
	v := m.view
	m.mu.Unlock()
	if expired {
		log.Info("Member Lease not renewed within the renew deadline; acting on no slice", "renewDeadline", m.o.RenewDeadline)
		m.publish(log, View{Members: v.Members, Desired: v.Desired}, "renew deadline passed")
	}
}

// publish sets the view and tells OnChange when it changed.
func (m *Membership) publish(log klog.Logger, v View, why string) {
	sel, _ := SelectorOf(m.o.Field, v.Acting, m.o.Slices)
	m.mu.Lock()
	changed := !slices.Equal(v.Acting, m.view.Acting) || !slices.Equal(v.Desired, m.view.Desired) || !slices.Equal(v.Members, m.view.Members)
	m.view, m.sel = v, sel
	m.mu.Unlock()
	if !changed {
		return
	}
	log.Info("Shard membership changed", "why", why, "members", v.Members, "desired", FormatSlices(v.Desired), "acting", FormatSlices(v.Acting))
	if m.o.OnChange != nil {
		m.o.OnChange(v)
	}
}

// list returns the group's Leases.
func (m *Membership) list(ctx context.Context) ([]coordinationv1.Lease, error) {
	l, err := m.o.Leases.Leases(m.o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelGroup + "=" + m.o.Group})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// observe records the other members' Leases and returns the live ones and
// the slices they claim. A Lease is live while it changed within
// LeaseDuration as this member observed it (never by its renewTime alone:
// clocks differ between hosts).
func (m *Membership) observe(leases []coordinationv1.Lease, now time.Time) (live []string, claimed map[int]bool) {
	claimed = map[int]bool{}
	m.mu.Lock()
	defer m.mu.Unlock()
	present := map[string]bool{}
	for _, l := range leases {
		if l.Name == m.name || l.Spec.HolderIdentity == nil {
			continue
		}
		present[l.Name] = true
		// A change of the Lease is a renewal: its resourceVersion or its
		// renewTime (compared for change, never with our clock).
		version := l.ResourceVersion
		if l.Spec.RenewTime != nil {
			version += "/" + l.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
		}
		if o, ok := m.seen[l.Name]; !ok || o.rv != version {
			m.seen[l.Name] = observed{rv: version, at: now}
		}
		if now.Sub(m.seen[l.Name].at) >= m.o.LeaseDuration {
			continue
		}
		live = append(live, *l.Spec.HolderIdentity)
		for _, s := range ParseSlices(l.Annotations[AnnotationClaims]) {
			claimed[s] = true
		}
		if n, err := strconv.Atoi(l.Annotations[AnnotationSlices]); err != nil || n != m.o.Slices {
			// A member that splits the space otherwise: its claims cannot be
			// compared slice by slice, so it blocks every slice.
			for s := range m.o.Slices {
				claimed[s] = true
			}
		}
	}
	for name := range m.seen {
		if !present[name] {
			delete(m.seen, name)
		}
	}
	slices.Sort(live)
	return slices.Compact(live), claimed
}

// renew writes our Lease with claims (creating it the first time).
func (m *Membership) renew(ctx context.Context, claims []int) error {
	c := m.o.Leases.Leases(m.o.Namespace)
	now := metav1.NewMicroTime(m.o.Clock.Now())
	secs := int32(m.o.LeaseDuration / time.Second)
	l, err := c.Get(ctx, m.name, metav1.GetOptions{})
	create := apierrors.IsNotFound(err)
	if create {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: m.name, Namespace: m.o.Namespace}}
		l.Spec.AcquireTime = &now
	} else if err != nil {
		return err
	}
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Labels[LabelGroup] = m.o.Group
	l.Annotations[AnnotationClaims] = FormatSlices(claims)
	l.Annotations[AnnotationSlices] = strconv.Itoa(m.o.Slices)
	l.Spec.HolderIdentity = &m.o.Identity
	l.Spec.LeaseDurationSeconds = &secs
	l.Spec.RenewTime = &now
	if create {
		_, err = c.Create(ctx, l, metav1.CreateOptions{})
	} else {
		_, err = c.Update(ctx, l, metav1.UpdateOptions{})
	}
	return err
}

// leave stops acting and deletes our Lease, so the others take our slices
// at their next round instead of after LeaseDuration.
func (m *Membership) leave(log klog.Logger) {
	v := m.View()
	m.publish(log, View{Members: v.Members}, "leaving")
	ctx, cancel := context.WithTimeout(context.Background(), m.o.RenewDeadline)
	defer cancel()
	if err := m.o.Leases.Leases(m.o.Namespace).Delete(ctx, m.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		log.Info("Deleting the member Lease failed; the others take its slices when it expires", "err", err, "leaseDuration", m.o.LeaseDuration)
	}
}

// FormatSlices spells slice numbers as ranges: "0-5,12".
func FormatSlices(s []int) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(s[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(s[j]))
		}
		i = j + 1
	}
	return b.String()
}

// ParseSlices reads FormatSlices' form; what does not parse is skipped (a
// Lease is another member's data, not trusted to be well formed).
func ParseSlices(s string) []int {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > 1<<16 {
				continue
			}
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func intersect(a, b []int) []int {
	var out []int
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func union(a, b []int) []int {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}
