package execlog

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestAppendConcurrentLinesStayWhole(t *testing.T) {
	dir := t.TempDir()
	l, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	var seen sync.Map
	l.OnAppend(func(file string, off int64, line []byte) { seen.Store(off, file) })
	at := time.Date(2026, 2, 9, 14, 30, 1, 0, time.UTC)
	big := strings.Repeat("x", 200_000)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = l.AppendExecution(Entry{ExecutionID: NewID("exec_"), Language: "python", Stdout: big, ExecutedAt: at})
		}()
	}
	wg.Wait()
	f, err := os.Open(filepath.Join(dir, "executions-2026-02-09.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Type != "execution" || len(e.Stdout) != len(big) {
			t.Fatalf("line %d broken: %v", n, err)
		}
		n++
	}
	count := 0
	seen.Range(func(any, any) bool { count++; return true })
	if n != 20 || count != 20 {
		t.Errorf("%d lines, %d callbacks", n, count)
	}
}

func TestSessionEntriesGoToSessionFile(t *testing.T) {
	dir := t.TempDir()
	l, _ := New(dir)
	sid := "sess_abc"
	if err := l.AppendExecution(Entry{ExecutionID: "exec_1", SessionID: &sid, ExecutedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, SessionFile(sid)))
	if err != nil || !strings.Contains(string(b), `"at":`) || !strings.Contains(string(b), `"session_id":"sess_abc"`) {
		t.Fatalf("%s %v", b, err)
	}
	if id := NewID("exec_"); len(id) != len("exec_")+12 {
		t.Errorf("id %q", id)
	}
}

func TestObserversSeeEveryExecution(t *testing.T) {
	l, _ := New(t.TempDir())
	var mu sync.Mutex
	var got []string
	l.ObserveExecutions(func(e Entry) { mu.Lock(); got = append(got, e.ExecutionID+"/"+e.Status); mu.Unlock() })
	sid := "sess_x"
	_ = l.AppendExecution(Entry{ExecutionID: "exec_1", Status: "success", ExecutedAt: time.Now()})
	_ = l.AppendExecution(Entry{ExecutionID: "exec_2", Status: "timeout", SessionID: &sid, ExecutedAt: time.Now()})
	_ = l.Append("other.jsonl", map[string]string{"type": "session_start"})
	if strings.Join(got, " ") != "exec_1/success exec_2/timeout" {
		t.Errorf("observed %v", got)
	}
}
