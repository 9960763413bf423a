package runs

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/output"
)

// run is one background run in memory.
type run struct {
	owner, tool string
	started     time.Time
	cancel      context.CancelCauseFunc

	mu     sync.Mutex
	id     string
	stdout stream
	stderr stream
	// changed is closed (and replaced) whenever output arrives or the run
	// ends, waking the readers that wait (Get with a wait).
	changed chan struct{}
	status  string
	endTime time.Time
	result  json.RawMessage
	// stored: the result and output are in the store, which reads now
	// serve; the output is no longer kept here, only its sizes.
	stored           bool
	outSize, errSize int64
	// claimed: this replica holds the run's id in the session registry.
	claimed bool
}

func newRun(owner, tool string, outputMax int64, now time.Time) *run {
	return &run{owner: owner, tool: tool, started: now, status: StatusRunning, changed: make(chan struct{}),
		stdout: stream{max: outputMax}, stderr: stream{max: outputMax}}
}

// observer keeps the program's output, and passes it on to also.
func (r *run) observer(also output.Observer) output.Observer {
	return func(name string, p []byte) {
		r.mu.Lock()
		if name == "stderr" {
			r.stderr.write(p)
		} else {
			r.stdout.write(p)
		}
		r.wakeLocked()
		r.mu.Unlock()
		if also != nil {
			also(name, p)
		}
	}
}

// wakeLocked wakes the readers waiting for a change; r.mu is held.
func (r *run) wakeLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// end records the run's end.
func (r *run) end(status string, result json.RawMessage, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status, r.result, r.endTime = status, result, at
	r.wakeLocked()
}

// ended reports whether the run has ended.
func (r *run) ended() bool {
	_, ok := r.endedAt()
	return ok
}

// endedAt is when the run ended, if it has.
func (r *run) endedAt() (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.endTime, r.status != StatusRunning
}

// markStored notes that the store holds the run's result and output, and
// lets the memory go.
func (r *run) markStored() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stored = true
	r.outSize, r.errSize = r.stdout.size(), r.stderr.size()
	r.stdout.buf, r.stderr.buf = nil, nil
}

// await waits until r has output past the offsets, has ended, wait has
// passed or ctx ends.
func (r *run) await(ctx context.Context, outOff, errOff int64, wait time.Duration) {
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		r.mu.Lock()
		ready := r.status != StatusRunning || r.stdout.size() > outOff || r.stderr.size() > errOff
		ch := r.changed
		r.mu.Unlock()
		if ready {
			return
		}
		select {
		case <-ch:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// mustJSON encodes a result (a Go value of the run path's result types,
// which always encode).
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error_message": "result not encodable: " + err.Error()})
	}
	return b
}
