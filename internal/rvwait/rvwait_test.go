package rvwait

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestWaitReturnsAtOnceWhenTheStoreAlreadyReflectsTheVersion(t *testing.T) {
	tr := New()
	tr.Observe("10")
	for _, rv := range []string{"", "9", "10"} {
		if err := tr.Wait(context.Background(), rv); err != nil {
			t.Fatalf("Wait(%q) with the store at 10: %v", rv, err)
		}
	}
}

func TestWaitIsWokenByTheAdvanceThatReachesTheVersion(t *testing.T) {
	tr := New()
	tr.Observe("5")
	done := make(chan error, 1)
	go func() { done <- tr.Wait(context.Background(), "100") }()
	tr.Observe("99") // an advance short of it: the wait goes on
	select {
	case err := <-done:
		t.Fatalf("Wait(100) returned at 99: %v", err)
	default:
	}
	tr.Observe("100")
	if err := <-done; err != nil {
		t.Fatalf("Wait(100) after the store reached 100: %v", err)
	}
}

func TestABookmarkNewerThanEveryObjectSatisfiesTheWait(t *testing.T) {
	tr := New()
	tr.Observe("7") // the last object
	done := make(chan error, 1)
	go func() { done <- tr.Wait(context.Background(), "12") }()
	tr.Observe("20") // a bookmark: no object at 12, but the store reflects it
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestComparisonIsKEP5504NotLexical(t *testing.T) {
	tr := New()
	tr.Observe("9")
	tr.Observe("10")
	if rv, _ := tr.Current(); rv != "10" {
		t.Fatalf("Current after 9 then 10 = %q, want 10 (longer is newer)", rv)
	}
	tr.Observe("8")
	if rv, _ := tr.Current(); rv != "10" {
		t.Fatalf("an older version moved the store back to %q", rv)
	}
}

func TestWaitEndsWithItsContext(t *testing.T) {
	tr := New()
	tr.Observe("1")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tr.Wait(ctx, "2") }()
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after cancel = %v, want context.Canceled", err)
	}
}

func TestAServerThatSendsAnOpaqueVersionFailsEveryWaitAtOnce(t *testing.T) {
	tr := New()
	tr.Observe("abc-opaque")
	tr.Observe("12") // later comparable versions do not undo what was learnt
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := tr.Wait(ctx, "1")
	var ie *IncomparableError
	if !errors.Is(err, ErrIncomparable) || !errors.As(err, &ie) || ie.ResourceVersion != "abc-opaque" || ie.Asked {
		t.Fatalf("Wait on an opaque server = %v, want an IncomparableError naming abc-opaque", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the wait used up its context instead of failing at once")
	}
}

func TestWaitForAVersionThatIsNotWellFormedFailsAtOnce(t *testing.T) {
	tr := New()
	tr.Observe("3")
	for _, rv := range []string{"0", "007", "x1"} {
		err := tr.Wait(context.Background(), rv)
		var ie *IncomparableError
		if !errors.As(err, &ie) || !ie.Asked {
			t.Fatalf("Wait(%q) = %v, want an IncomparableError for the asked version", rv, err)
		}
	}
}

func TestPokeWakesWaitersWithoutAnAdvance(t *testing.T) {
	tr := New()
	ch := tr.Changed()
	tr.Poke()
	select {
	case <-ch:
	default:
		t.Fatal("Poke did not close the Changed channel")
	}
}

// "0" is the API's "any version", never a version a real server serves; a
// fake server's empty list may carry it. It says nothing about the store and
// must not mark the server's versions incomparable.
func TestZeroIsNotAVersionTheStoreReflects(t *testing.T) {
	tr := New()
	if tr.Observe("0") {
		t.Fatal(`Observe("0") changed the tracker`)
	}
	if rv, err := tr.Current(); rv != "" || err != nil {
		t.Fatalf(`after Observe("0"): Current() = %q, %v; want "", nil`, rv, err)
	}
	tr.Observe("7")
	if err := tr.Wait(context.Background(), "7"); err != nil {
		t.Fatal(err)
	}
}
