package mcastd

import (
	"io"
	"sync"
	"time"
)

// Writer writes a member's output on a goroutine of its own, so that a
// slow or stopped reader of stdout never stops the protocol: the member
// pushes formatted chunks, which queue until written. The queue itself
// is not bounded here: the machine bounds what it hands over (its
// Backlog) by what Written reports.
type Writer struct {
	w        io.Writer
	mu       sync.Mutex
	queue    []chunk
	queued   int // bytes in queue
	busy     bool
	since    time.Time // when the write under way began
	written  uint64    // Cost of the deliveries written
	lines    uint64    // lines written
	pending  uint64    // lines queued or being written
	err      error
	closed   bool
	wake     chan struct{} // work for the writer
	progress chan struct{} // a chunk was written (or writing failed)
	room     chan struct{} // the same, for a pusher waiting for room
	done     chan struct{} // the writer goroutine has ended
}

type chunk struct {
	b     []byte
	cost  uint64
	lines uint64
}

// NewWriter starts a Writer onto w.
func NewWriter(w io.Writer) *Writer {
	wr := &Writer{w: w, wake: make(chan struct{}, 1), progress: make(chan struct{}, 1), room: make(chan struct{}, 1), done: make(chan struct{})}
	go wr.run()
	return wr
}

func (w *Writer) run() {
	defer close(w.done)
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.closed && w.err == nil {
			w.mu.Unlock()
			<-w.wake
			w.mu.Lock()
		}
		if len(w.queue) == 0 || w.err != nil {
			w.mu.Unlock()
			return
		}
		c := w.queue[0]
		w.queue[0] = chunk{}
		w.queue = w.queue[1:]
		w.busy, w.since = true, time.Now()
		w.mu.Unlock()

		_, err := w.w.Write(c.b)

		w.mu.Lock()
		w.busy = false
		w.queued -= len(c.b)
		w.pending -= c.lines
		if err != nil {
			w.err = err
		} else {
			w.written += c.cost
			w.lines += c.lines
		}
		w.mu.Unlock()
		signal(w.progress)
		signal(w.room)
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Push queues b (lines lines, deliveries of cost Cost in all); it never
// blocks.
func (w *Writer) Push(b []byte, lines, cost uint64) {
	if len(b) == 0 && cost == 0 {
		return
	}
	w.mu.Lock()
	w.queue = append(w.queue, chunk{b: b, cost: cost, lines: lines})
	w.queued += len(b)
	w.pending += lines
	w.mu.Unlock()
	signal(w.wake)
}

// Progress is signalled whenever a chunk has been written (or writing
// failed).
func (w *Writer) Progress() <-chan struct{} { return w.progress }

// Room is signalled like Progress, for the one goroutine that pushes.
func (w *Writer) Room() <-chan struct{} { return w.room }

// Written is the Cost of the deliveries written so far.
func (w *Writer) Written() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.written
}

// Lines is how many lines were written, and how many wait or are being
// written.
func (w *Writer) Lines() (written, pending uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lines, w.pending
}

// Queued is the bytes waiting to be written.
func (w *Writer) Queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.queued
}

// Stalled is how long the write under way has been blocked at now (0:
// none under way).
func (w *Writer) Stalled(now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.busy {
		return 0
	}
	return now.Sub(w.since)
}

// Idle reports whether everything pushed has been written.
func (w *Writer) Idle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.busy && len(w.queue) == 0
}

// Err is the error writing failed with, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close lets the writer goroutine end once the queue is written.
func (w *Writer) Close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	signal(w.wake)
}
