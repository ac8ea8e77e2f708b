package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// defaultRequestTimeout is --request-timeout's default. kubectl's is 0 (no
// bound), so a server that accepts the connection and never answers holds a
// command until a TLS or TCP timeout, if any.
const defaultRequestTimeout = "30s"

// ErrRequestTimeout is matched by the error of a request that got no answer
// within --request-timeout.
var ErrRequestTimeout = errors.New("no answer within --request-timeout")

// checkRequestTimeout accepts what kubectl accepts for --request-timeout (a
// duration, or an integer number of seconds), and nothing negative.
func checkRequestTimeout(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		n, aerr := strconv.Atoi(v)
		if aerr != nil {
			return usagef("--request-timeout %q: want a duration such as 30s or 2m (0 = no bound)", v)
		}
		d = time.Duration(n) * time.Second
	}
	if d < 0 {
		return usagef("--request-timeout %q: must not be negative", v)
	}
	return nil
}

// requestTimeout bounds every request of the plugin's clients by
// --request-timeout: a watch (watch=true: a watch or a streaming list) until
// its response headers arrive, so the stream itself runs as long as the
// command wants; every other request until its body is read. client-go's own
// rest.Config.Timeout cannot be used: it becomes http.Client.Timeout, which
// also ends a watch's stream.
type requestTimeout struct {
	rt http.RoundTripper
	d  time.Duration
}

func (t *requestTimeout) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	timedOut := make(chan struct{})
	timer := time.AfterFunc(t.d, func() { close(timedOut); cancel() })
	resp, err := t.rt.RoundTrip(req.WithContext(ctx))
	fired := func() bool {
		select {
		case <-timedOut:
			return true
		default:
			return false
		}
	}
	if err != nil {
		timer.Stop()
		cancel()
		if fired() {
			return nil, fmt.Errorf("%w (%s)", ErrRequestTimeout, t.d)
		}
		return nil, err
	}
	if req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1" {
		if !timer.Stop() {
			// The headers came as the timer fired: the stream is cancelled.
			<-timedOut
			_ = resp.Body.Close()
			cancel()
			return nil, fmt.Errorf("%w (%s)", ErrRequestTimeout, t.d)
		}
	}
	resp.Body = &timedBody{ReadCloser: resp.Body, stop: func() { timer.Stop(); cancel() }, fired: fired, d: t.d}
	return resp, nil
}

// timedBody ends the request's context when the body is closed, and names
// --request-timeout when a read fails because it passed.
type timedBody struct {
	io.ReadCloser
	once  sync.Once
	stop  func()
	fired func() bool
	d     time.Duration
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && b.fired() {
		err = fmt.Errorf("%w (%s): %w", ErrRequestTimeout, b.d, err)
	}
	return n, err
}

func (b *timedBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.stop)
	return err
}
