package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// checkpointData makes a python session hold about mb MB of plain data:
// a list of small dicts, a list of strings and a dict of ints (no numpy),
// 970 kB of pickle per mb.
func checkpointData(mb int) string {
	return fmt.Sprintf(`n = %d * 7000
data = {"rows": [{"id": i, "name": "item-%%06d" %% i, "tags": ["a", "b"]} for i in range(n)],
        "lines": ["line %%d " %% i + "y" * 80 for i in range(n)],
        "index": {("k%%d" %% i): i for i in range(n)}}`, mb)
}

// BenchmarkCheckpoint measures, through the real binary and the go-sdk
// client, in one run and interleaved per iteration:
//
//	baseline   start_session + first send_to_session (then close_session)
//	resume1    resume_session of a paused python session holding 1 MB
//	resume10   the same holding 10 MB
//	fork10     fork_session count 10 of the 1 MB session, per child
//
// and reports each p50 and its ratio to the baseline's. Pauses (not timed)
// come before each resume; every resumed state is checked. Two servers:
// the default (one spare interpreter per language) and one keeping ten
// spares, which a fork of ten takes at once.
//
//	go test ./internal/e2e/ -run '^$' -bench Checkpoint -benchtime 20x
func BenchmarkCheckpoint(b *testing.B) {
	for _, spares := range []string{"1", "10"} {
		b.Run("spares="+spares, func(b *testing.B) { benchCheckpoint(b, spares) })
	}
}

func benchCheckpoint(b *testing.B, spares string) {
	s := start(b, "CODEXEC_MAX_SESSIONS=16", "CODEXEC_CHECKPOINT_AUTO=0", "CODEXEC_CHECKPOINT_SPARES="+spares)
	one, ten := s.startSession("python"), s.startSession("python")
	s.send(one.SessionID, checkpointData(1), nil)
	s.send(ten.SessionID, checkpointData(10), nil)
	var base, r1, r10, f10 []time.Duration
	var bytes1, bytes10 int64
	for b.Loop() {
		base = append(base, timeFreshSession(b, s))
		var d time.Duration
		d, bytes1 = timePauseResume(b, s, one.SessionID)
		r1 = append(r1, d)
		d, bytes10 = timePauseResume(b, s, ten.SessionID)
		r10 = append(r10, d)
		f10 = append(f10, timeFork(b, s, one.SessionID, 10)/10)
		// The spares the fork took (ten, when the server keeps a fork's width
		// of them) are replaced before the next baseline.
		time.Sleep(3 * time.Second)
	}
	pb := percentile(base, 50)
	for _, m := range []struct {
		name string
		ds   []time.Duration
	}{{"baseline", base}, {"resume1mb", r1}, {"resume10mb", r10}, {"fork10-per-child", f10}} {
		p := percentile(m.ds, 50)
		b.ReportMetric(ms(p), m.name+"-p50-ms")
		if m.name != "baseline" {
			b.ReportMetric(float64(p)/float64(pb), m.name+"-ratio")
		}
	}
	if testing.Verbose() {
		for _, l := range strings.Split(s.Stderr.String(), "\n") {
			if strings.Contains(l, "checkpoint restore") {
				b.Log(l)
			}
		}
	}
	b.ReportMetric(float64(bytes1)/1e6, "ckpt1-MB")
	b.ReportMetric(float64(bytes10)/1e6, "ckpt10-MB")
}

// timeFreshSession times start_session and a first send, then closes it.
func timeFreshSession(b *testing.B, s *server) time.Duration {
	t0 := time.Now()
	sess := s.startSession("python")
	if r, isErr := s.send(sess.SessionID, "x = 1", nil); isErr || r.Status != "success" {
		b.Fatalf("first send: %+v", r)
	}
	d := time.Since(t0)
	s.call("close_session", map[string]any{"session_id": sess.SessionID})
	return d
}

// timePauseResume pauses id (untimed), times resume_session, and checks
// the state came back.
func timePauseResume(b *testing.B, s *server, id string) (time.Duration, int64) {
	var p pauseOut
	if res := s.callInto("pause_session", map[string]any{"session_id": id}, &p); res.IsError {
		b.Fatalf("pause_session: %s", text(res))
	}
	// A spare replaces the one used last and readies itself for this
	// checkpoint's size (a resume sooner than that waits for it).
	time.Sleep(300 * time.Millisecond)
	t0 := time.Now()
	var r resumeOut
	res := s.callInto("resume_session", map[string]any{"session_id": id}, &r)
	d := time.Since(t0)
	if res.IsError || r.Resumed == nil || len(r.Resumed.Lost) != 0 {
		b.Fatalf("resume_session: %s", text(res))
	}
	if out, isErr := s.send(id, "print(len(data['rows']) == n)", nil); isErr || out.Stdout != "True\n" {
		b.Fatalf("state after resume: %+v", out)
	}
	return d, p.CheckpointBytes
}

// timeFork times fork_session of id into count children, checks one, and
// closes them all.
func timeFork(b *testing.B, s *server, id string, count int) time.Duration {
	t0 := time.Now()
	var f forkOut
	res := s.callInto("fork_session", map[string]any{"session_id": id, "count": count}, &f)
	d := time.Since(t0)
	if res.IsError || len(f.Children) != count {
		b.Fatalf("fork_session: %s", text(res))
	}
	for i, c := range f.Children {
		if c.Error != "" {
			b.Fatalf("child %d: %s", i, c.Error)
		}
	}
	if out, isErr := s.send(f.Children[count-1].SessionID, "print(len(data['rows']) == n)", nil); isErr || out.Stdout != "True\n" {
		b.Fatalf("child state: %+v", out)
	}
	for _, c := range f.Children {
		s.call("close_session", map[string]any{"session_id": c.SessionID})
	}
	return d
}
