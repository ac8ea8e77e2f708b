package testfake

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestClientAnswersInOrderAndKeepsCalls(t *testing.T) {
	boom := errors.New("boom")
	c := &Client{ListFn: Answers(
		func(metav1.ListOptions) (runtime.Object, error) { return nil, boom },
		func(o metav1.ListOptions) (runtime.Object, error) {
			return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: o.ResourceVersion}}, nil
		},
	)}
	ctx := context.Background()
	if _, err := c.List(ctx, metav1.ListOptions{ResourceVersion: "1"}); !errors.Is(err, boom) {
		t.Fatalf("first list: %v, want the first answer", err)
	}
	for _, rv := range []string{"2", "3"} { // the last answer repeats
		obj, err := c.List(ctx, metav1.ListOptions{ResourceVersion: rv})
		if err != nil || obj.(*corev1.ConfigMapList).ResourceVersion != rv {
			t.Fatalf("list at %s: %v %v", rv, obj, err)
		}
	}
	if got := c.Lists(); len(got) != 3 || got[2].ResourceVersion != "3" {
		t.Fatalf("calls %+v", got)
	}
	if _, err := (&Client{ListFn: Answers()}).List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("a list with no answers succeeded")
	}
}

func TestClientWatcherWaitsForTheWatch(t *testing.T) {
	c := &Client{}
	if _, ok := c.Watcher(0, time.Millisecond); ok {
		t.Fatal("a watch that was never opened was returned")
	}
	got := make(chan bool, 1)
	go func() { _, ok := c.Watcher(1, 5*time.Second); got <- ok }()
	for i := range 2 {
		w, err := c.Watch(context.Background(), metav1.ListOptions{ResourceVersion: "7"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if i == 1 && !<-got {
			t.Fatal("Watcher(1) did not see the second watch")
		}
	}
	if ws := c.Watches(); len(ws) != 2 || ws[1].ResourceVersion != "7" {
		t.Fatalf("watches %+v", ws)
	}
}

type recordingT struct {
	testing.TB
	errs int
}

func (r *recordingT) Errorf(string, ...any) { r.errs++ }

func TestClientFlagsResourceVersionWithContinue(t *testing.T) {
	rt := &recordingT{TB: t}
	c := &Client{T: rt, ListFn: Answers(func(metav1.ListOptions) (runtime.Object, error) { return &corev1.ConfigMapList{}, nil })}
	_, _ = c.List(context.Background(), metav1.ListOptions{Continue: "x"})
	_, _ = c.List(context.Background(), metav1.ListOptions{Continue: "x", ResourceVersion: "5"})
	if rt.errs != 1 {
		t.Fatalf("%d errors reported, want 1 (only the request with both)", rt.errs)
	}
}

func TestPagesChainAndCopy(t *testing.T) {
	pages := NewPages(3, 2, "ns", func(cm *corev1.ConfigMap) { cm.ResourceVersion = "100" })
	var got []string
	token := ""
	for {
		l, err := pages.Page(token)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range l.Items {
			got = append(got, it.Namespace+"/"+it.Name+"@"+it.ResourceVersion)
		}
		if token = l.Continue; token == "" {
			if l.RemainingItemCount != nil {
				t.Errorf("last page has remainingItemCount %d", *l.RemainingItemCount)
			}
			break
		}
		if l.RemainingItemCount == nil || *l.RemainingItemCount != int64(6-len(got)) {
			t.Errorf("remainingItemCount %v after %d items", l.RemainingItemCount, len(got))
		}
		l.Continue = "changed" // a copy: the stored page keeps its token
	}
	if len(got) != 6 || got[0] != "ns/cm-0-0@100" || got[5] != "ns/cm-2-1@100" {
		t.Fatalf("items %v", got)
	}
	if first, _ := pages.Page(""); first.Continue != "c1" {
		t.Errorf("stored first page changed through a copy: continue %q", first.Continue)
	}
	if _, err := pages.Page("c9"); err == nil {
		t.Fatal("an unknown token was served")
	}
}

func TestReturnsAFreshObjectPerCall(t *testing.T) {
	answer := Returns(&corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "4"}}, nil)
	a, _ := answer(metav1.ListOptions{})
	b, _ := answer(metav1.ListOptions{})
	if a == b || b.(*corev1.ConfigMapList).ResourceVersion != "4" {
		t.Fatalf("answers %p %p: want two copies at 4", a, b)
	}
	boom := errors.New("boom")
	if obj, err := Returns(nil, boom)(metav1.ListOptions{}); obj != nil || !errors.Is(err, boom) {
		t.Fatalf("%v %v", obj, err)
	}
}

func TestPageLoopReadsEveryPage(t *testing.T) {
	pages := NewPages(4, 3, "ns", nil)
	var sent []metav1.ListOptions
	n, err := PageLoop(context.Background(), func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
		sent = append(sent, o)
		return pages.Page(o.Continue)
	}, 3)
	if err != nil || n != 12 || len(sent) != 4 || sent[0].ResourceVersion != "100" || sent[3].Continue != "c3" || sent[3].ResourceVersion != "" {
		t.Fatalf("n %d err %v sent %+v", n, err, sent)
	}
}
