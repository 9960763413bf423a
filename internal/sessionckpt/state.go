package sessionckpt

import (
	"math"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/checkpoint"
)

// State is a live session's checkpoint state: its current checkpoint and
// the executions that checkpoint saw, the report of a resume not yet
// given, and its automatic checkpoint's timer and hold-back. The zero
// value has none of them. Safe for concurrent use.
type State struct {
	mu      sync.Mutex
	rec     *checkpoint.Record
	execs   int
	resumed *Resumed
	timer   *time.Timer
	hold    time.Time
}

// Current is the session's current checkpoint (nil: none).
func (st *State) Current() *checkpoint.Record {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.rec
}

// Bytes is the size of the current checkpoint (0: none).
func (st *State) Bytes() int64 {
	if rec := st.Current(); rec != nil {
		return rec.Bytes
	}
	return 0
}

// TakeResumed returns the resume report once (nil: none waiting).
func (st *State) TakeResumed() *Resumed {
	st.mu.Lock()
	defer st.mu.Unlock()
	r := st.resumed
	st.resumed = nil
	return r
}

// resume leaves r for TakeResumed.
func (st *State) resume(r *Resumed) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.resumed = r
}

// set makes rec the current checkpoint, taken after execs executions.
func (st *State) set(rec *checkpoint.Record, execs int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.rec, st.execs = rec, execs
}

// unchanged reports whether the session, now at execs executions, has
// not run code since its current checkpoint.
func (st *State) unchanged(execs int) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.rec != nil && st.execs == execs
}

// stopAuto disarms the automatic checkpoint.
func (st *State) stopAuto() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.timer != nil {
		st.timer.Stop()
	}
}

// Resumed is what a resumed session (or a fork child) reports once: how
// old its checkpoint is and, by name, what came back and what did not.
type Resumed struct {
	// AgeS is the checkpoint's age in seconds.
	AgeS float64 `json:"age_s"`
	// Auto: the checkpoint was taken automatically while the session ran
	// (the server stopped without pausing it); work after it is lost.
	Auto bool `json:"auto,omitempty"`
	checkpoint.Report
}

// AgeS is the age of a checkpoint taken at t, in seconds to a tenth.
func AgeS(t time.Time) float64 {
	return math.Round(time.Since(t).Seconds()*10) / 10
}

// Paused is a session without a process: its record names the checkpoint
// a resume restores. Make one with NewPaused; its record never changes.
// Its lock serialises resumes and closes of it.
type Paused[S Live] struct {
	mu  sync.Mutex
	rec checkpoint.Record
	// live is the session it became, once resumed; gone is set when it
	// was closed. Either way waiters on mu look the id up again.
	live S
	gone bool
	// elsewhere: gone because another replica claimed it (shared.go).
	elsewhere bool
}

// NewPaused is the paused session rec is the checkpoint of.
func NewPaused[S Live](rec checkpoint.Record) *Paused[S] { return &Paused[S]{rec: rec} }

// Record is p's checkpoint record.
func (p *Paused[S]) Record() checkpoint.Record { return p.rec }

// PauseInfo is what pausing a session kept and lost.
type PauseInfo struct {
	ID     string
	Bytes  int64
	Report checkpoint.Report
}
