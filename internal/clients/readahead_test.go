package clients

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

// Every byte arrives in order, whatever sizes the source and the reader use.
func TestReadAheadKeepsEveryByteInOrder(t *testing.T) {
	data := make([]byte, 5*readAheadChunk+12345)
	for i := range data {
		data[i] = byte(rand.IntN(256))
	}
	for _, src := range []io.Reader{bytes.NewReader(data), iotest.OneByteReader(bytes.NewReader(data)), iotest.HalfReader(bytes.NewReader(data))} {
		r := newReadAhead(io.NopCloser(src))
		got, err := io.ReadAll(iotest.HalfReader(r))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read %d bytes (err %v), want the %d bytes written", len(got), err, len(data))
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// The source's error reaches the reader after the bytes read before it.
func TestReadAheadReturnsTheSourcesError(t *testing.T) {
	boom := errors.New("boom")
	data := bytes.Repeat([]byte("x"), readAheadChunk+10)
	r := newReadAhead(io.NopCloser(io.MultiReader(bytes.NewReader(data), iotest.ErrReader(boom))))
	defer r.Close()
	got, err := io.ReadAll(r)
	if !errors.Is(err, boom) || len(got) != len(data) {
		t.Fatalf("read %d bytes, err %v; want %d bytes, then %v", len(got), err, len(data), boom)
	}
}

// blockingBody blocks every Read after the first until Close.
type blockingBody struct {
	sent   bool
	closed chan struct{}
}

func (b *blockingBody) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		return copy(p, "head"), nil
	}
	<-b.closed
	return 0, errors.New("body closed")
}

func (b *blockingBody) Close() error { close(b.closed); return nil }

// Close ends a read of the source in progress and returns once the
// reading goroutine has: a decoder that stops early leaks nothing.
func TestReadAheadCloseEndsTheReader(t *testing.T) {
	src := &blockingBody{closed: make(chan struct{})}
	r := newReadAhead(src)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-r.full:
		if ok {
			t.Fatal("a chunk left after Close")
		}
	default:
		t.Fatal("the reading goroutine did not end by Close")
	}
	if _, err := r.Read(make([]byte, 1)); err == nil {
		t.Fatal("Read after Close succeeded")
	}
}

// A reader that stops while the goroutine waits for room (every chunk
// full) still ends it.
func TestReadAheadCloseWhileChunksWait(t *testing.T) {
	data := bytes.Repeat([]byte("y"), (readAheadChunks+3)*readAheadChunk)
	r := newReadAhead(io.NopCloser(bytes.NewReader(data)))
	if _, err := r.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-r.full; ok {
		t.Fatal("a chunk left after Close")
	}
}
