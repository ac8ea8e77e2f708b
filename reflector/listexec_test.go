package reflector

// This test file is a minimal list executor over the Client: it translates one
// fallback.Query into wire options the way KEP-2523 says new and legacy
// servers read them, pages with client-go's pager and verifies an Exact
// list's served resourceVersion. Production uses package lister (New's
// default, with the full decision table); these unit tests use it to see
// the state machine's own decisions in isolation from the lister's fallbacks.

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
)

func (r *Reflector) clientList(ctx context.Context, q fallback.Query) (runtime.Object, error) {
	match := false
	if r.o.Server != nil {
		match = r.o.Server.Capabilities(ctx).Get(capability.ResourceVersionMatch) == capability.Yes
	}
	opts := metav1.ListOptions{}
	switch q.Semantic {
	case fallback.MostRecent:
	case fallback.Any:
		opts.ResourceVersion = "0"
	case fallback.NotOlderThan:
		// Unpaginated: served from the watch cache, and read as NotOlderThan
		// by legacy servers too (with a limit they would read it as Exact).
		opts.ResourceVersion = q.ResourceVersion
		q.Limit = 0
		if match {
			opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
		}
	case fallback.Exact:
		opts.ResourceVersion = q.ResourceVersion
		if match {
			opts.ResourceVersionMatch = metav1.ResourceVersionMatchExact
		} else if q.Limit <= 0 {
			// Legacy servers read resourceVersion=N as Exact only with a limit.
			q.Limit = documentedPageSize
		}
	}
	p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return r.client.List(ctx, o)
	})
	p.PageSize = q.Limit
	obj, _, err := p.ListWithAlloc(ctx, opts)
	outcome := "ok"
	if err != nil {
		c, _ := classify(err)
		outcome = c.String()
	} else if q.Semantic == fallback.Exact {
		if served := listRV(obj); served != q.ResourceVersion {
			outcome = "NotExact"
			err = &NotExactError{Requested: q.ResourceVersion, Served: served}
			obj = nil
		}
	}
	r.o.Metrics.List(r.name, q.Semantic.String(), outcome)
	return obj, err
}
