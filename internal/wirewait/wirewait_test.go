package wirewait

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

const bound = 100 * time.Millisecond

var errSilent = errors.New("silent")

func cause(p Phase, d time.Duration) error {
	if p != Body || d != bound {
		return errors.New("wrong phase or bound")
	}
	return errSilent
}

// Only the time a Read waits for bytes counts: a caller that takes longer
// than the bound between reads is not cut; a Read that waits longer is,
// with the cause, and the request's context ends with it.
func TestBodyBoundsOnlyTheWaitForBytes(t *testing.T) {
	ctx, g := Start(context.Background(), bound, cause)
	if !Guarded(ctx) {
		t.Fatal("the request's context is not marked guarded")
	}
	pr, pw := io.Pipe()
	body := g.Body(pr)
	defer body.Close()
	go func() { _, _ = pw.Write([]byte("a")) }()
	buf := make([]byte, 1)
	if _, err := body.Read(buf); err != nil {
		t.Fatal(err)
	}
	<-time.After(3 * bound) // the caller's own time between reads
	go func() { _, _ = pw.Write([]byte("b")) }()
	if _, err := body.Read(buf); err != nil || buf[0] != 'b' {
		t.Fatalf("read after a pause of the caller's: %q, %v; want b", buf, err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := body.Read(buf) // nothing is written: the bound runs out
		errc <- err
	}()
	select {
	case <-ctx.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the request's context did not end")
	}
	if !errors.Is(context.Cause(ctx), errSilent) {
		t.Errorf("cause %v; want the bound's error", context.Cause(ctx))
	}
	_ = pw.CloseWithError(context.Canceled) // what the transport returns once the context ends
	if err := <-errc; !errors.Is(err, errSilent) {
		t.Errorf("Read: %v; want the bound's error", err)
	}
}

func TestBoundOnTheContext(t *testing.T) {
	ctx := context.Background()
	if d := BoundFrom(ctx, time.Minute); d != time.Minute {
		t.Errorf("no bound set: %s; want the default", d)
	}
	if d := BoundFrom(WithBound(ctx, 0), time.Minute); d != time.Minute {
		t.Errorf("0: %s; want the default", d)
	}
	if d := BoundFrom(WithBound(ctx, -1), time.Minute); d > 0 {
		t.Errorf("negative: %s; want none", d)
	}
	if c, g := Start(ctx, BoundFrom(WithBound(ctx, -1), time.Minute), cause); g != nil || c != ctx {
		t.Error("no bound: want the context itself and no guard")
	}
	var g *Guard // nil-safe: no bound
	g.Answered()
	g.Stop()
	if err := g.Err(io.EOF); err != io.EOF {
		t.Errorf("nil guard Err = %v", err)
	}
}
