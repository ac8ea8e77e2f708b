package clients

import (
	"io"
	"sync"
)

// A list response is read ahead of its decoder: one goroutine reads the
// body (for a compressed response, the gzip inflation runs in those reads)
// while the caller's goroutine decodes what was already read, so a large
// list costs the time of the slower of the two instead of their sum. At
// most readAheadChunks chunks of readAheadChunk bytes wait for the decoder.
const (
	readAheadChunk  = 64 << 10
	readAheadChunks = 4
)

// readAhead is an io.ReadCloser that reads src on its own goroutine.
type readAhead struct {
	src  io.ReadCloser
	full chan chunk  // chunks read, in order; closed after the last one
	free chan []byte // buffers the decoder is done with
	done chan struct{}
	once sync.Once

	cur  []byte // the unread rest of the chunk being read
	last []byte // that chunk's buffer, returned to free once read
	err  error  // the error that came with the last chunk
}

type chunk struct {
	b   []byte
	err error
}

func newReadAhead(src io.ReadCloser) *readAhead {
	r := &readAhead{src: src, full: make(chan chunk, readAheadChunks), free: make(chan []byte, readAheadChunks+1), done: make(chan struct{})}
	go r.fill()
	return r
}

// fill reads src in chunks until it fails or ends (io.EOF), or Close.
func (r *readAhead) fill() {
	defer close(r.full)
	for {
		var buf []byte
		select {
		case buf = <-r.free:
		default:
			buf = make([]byte, readAheadChunk)
		}
		// One Read, not a full chunk: bytes that arrived are decoded
		// while the rest of the body is still on its way.
		n, err := r.src.Read(buf)
		if n == 0 && err == nil {
			continue
		}
		select {
		case r.full <- chunk{b: buf[:n], err: err}:
		case <-r.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (r *readAhead) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.last != nil {
			select {
			case r.free <- r.last:
			default:
			}
			r.last = nil
		}
		c, ok := <-r.full
		if !ok {
			return 0, io.ErrClosedPipe // Read after Close
		}
		r.cur, r.last, r.err = c.b, c.b[:cap(c.b)], c.err
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// Close closes src, which ends a read of it in progress, and waits until
// the reading goroutine has returned.
func (r *readAhead) Close() error {
	r.once.Do(func() { close(r.done) })
	err := r.src.Close()
	for range r.full {
	}
	return err
}
