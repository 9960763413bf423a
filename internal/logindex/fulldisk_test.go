package logindex

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/atomicfile/fulldisk"
	"github.com/codexec/codexec/internal/execlog"
)

// checkNoTornLines asserts every line of every JSONL file in dir parses
// and every file ends with a newline.
func checkNoTornLines(t *testing.T, dir string) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			t.Errorf("%s ends in a torn line", p)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 4<<20)
		for n := 1; sc.Scan(); n++ {
			if !json.Valid(sc.Bytes()) {
				t.Errorf("%s line %d does not parse: %.80q", p, n, sc.Bytes())
			}
		}
	}
}

// logged appends an execution whose output is size bytes and whose code
// holds a word unique to it, and reports the error.
func logged(lg *execlog.Logger, id string, size int) error {
	return lg.AppendExecution(execlog.Entry{ExecutionID: id, Language: "python", Code: "print('" + id + "')",
		Stdout: strings.Repeat("o", size), Status: "success", ExecutedAt: time.Now().UTC()})
}

func searchIDs(t *testing.T, x *Index, text string) []string {
	t.Helper()
	hits, _, err := x.Search(context.Background(), Query{Text: text, Limit: MaxLimit})
	if err != nil {
		t.Fatalf("search %q: %v", text, err)
	}
	got := ids(hits)
	slices.Sort(got)
	return got
}

func wantENOSPC(t *testing.T, err error, what string) {
	t.Helper()
	var we *execlog.WriteError
	if !errors.As(err, &we) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("%s: want a WriteError for ENOSPC, got %v", what, err)
	}
}

func TestFullDiskKeepsLogWholeAndIndexRecovers(t *testing.T) {
	d := fulldisk.Mount(t, 4<<20)
	lg, _ := execlog.New(d.Dir)
	defer lg.Close()
	dbPath := filepath.Join(d.Dir, FileName)
	x, err := Open(d.Dir, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = x.Close() }()
	lg.OnAppend(func(f string, _ int64, _ []byte) { x.Notify(f) })
	var want []string
	for i, size := range []int{10, 30000, 200} {
		id := "exec_before" + string(rune('a'+i))
		if err := logged(lg, id, size); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	if diff := cmp.Diff(want, searchIDs(t, x, "print")); diff != "" {
		t.Fatalf("before the disk filled (-want +got):\n%s", diff)
	}

	d.Fill()
	// An index of the current schema opens on a full disk (it is not
	// written to) and still answers from what it holds.
	_ = x.Close()
	if x, err = Open(d.Dir, dbPath); err != nil {
		t.Fatalf("reopening the index on a full disk: %v", err)
	}
	lg.OnAppend(func(f string, _ int64, _ []byte) { x.Notify(f) })
	if got := searchIDs(t, x, "print"); len(got) != 3 {
		t.Errorf("search on a full disk found %v", got)
	}
	for i, size := range []int{10, 8 << 10, 300 << 10} {
		id := "exec_full" + string(rune('a'+i))
		if err := logged(lg, id, size); err == nil {
			want = append(want, id) // it fitted in a page the file already had
		} else {
			t.Logf("%s: %v", id, err)
			wantENOSPC(t, err, id)
		}
	}
	_, _, err = x.Search(context.Background(), Query{Text: "print"})
	t.Logf("search after appends on a full disk: %v", err)
	if err != nil && !errors.Is(err, ErrUnavailable) {
		t.Errorf("search on a full disk: want results or ErrUnavailable, got %v", err)
	}
	d.Leave(16 << 10) // room for a part of the next entry only
	wantENOSPC(t, logged(lg, "exec_cut_short", 400<<10), "exec_cut_short")
	checkNoTornLines(t, d.Dir)

	d.Free()
	// What was written while the index could not follow is found as soon
	// as it can, without waiting for another append.
	slices.Sort(want)
	if diff := cmp.Diff(want, searchIDs(t, x, "print")); diff != "" {
		t.Errorf("indexed once space returned (-want +got):\n%s", diff)
	}
	if err := logged(lg, "exec_after", 100); err != nil {
		t.Fatalf("after freeing space: %v", err)
	}
	want = append(want, "exec_after")
	slices.Sort(want)
	checkNoTornLines(t, d.Dir)
	if diff := cmp.Diff(want, searchIDs(t, x, "print")); diff != "" {
		t.Errorf("indexed executions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"exec_after"}, searchIDs(t, x, "exec_after")); diff != "" {
		t.Errorf("the entry written after space returned (-want +got):\n%s", diff)
	}
}

func TestIndexStartsOnFullDiskAndRecovers(t *testing.T) {
	d := fulldisk.Mount(t, 1<<20)
	d.Fill()
	lg, err := execlog.New(d.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	if err := lg.Probe(); !errors.Is(err, syscall.ENOSPC) || lg.Err() == nil {
		t.Errorf("probe on a full disk: %v (Err %v)", err, lg.Err())
	}
	x := New(d.Dir, filepath.Join(d.Dir, FileName))
	defer func() { _ = x.Close() }()
	lg.OnAppend(func(f string, _ int64, _ []byte) { x.Notify(f) })
	if err := x.Ready(); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Ready on a full disk: %v", err)
	}
	wantENOSPC(t, logged(lg, "exec_lost", 8<<10), "exec_lost")
	_, _, err = x.Search(context.Background(), Query{})
	t.Logf("search on a full disk: %v", err)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "full") {
		t.Errorf("search on a full disk: want ErrUnavailable saying the disk is full, got %v", err)
	}

	d.Free()
	if err := logged(lg, "exec_back", 100); err != nil {
		t.Fatalf("after freeing space: %v", err)
	}
	if lg.Err() != nil {
		t.Errorf("Err after a written entry: %v", lg.Err())
	}
	if diff := cmp.Diff([]string{"exec_back"}, searchIDs(t, x, "print")); diff != "" {
		t.Errorf("indexed after recovery (-want +got):\n%s", diff)
	}
	checkNoTornLines(t, d.Dir)
}
