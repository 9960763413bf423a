package execlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/atomicfile"
	"github.com/codexec/codexec/internal/atomicfile/fulldisk"
)

var day = time.Date(2026, 2, 9, 14, 30, 1, 0, time.UTC)

// fileLines splits a log file into lines: the execution ids of those that
// parse and, separately, the raw lines that do not.
func fileLines(t *testing.T, path string) (ids []string, junk []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Errorf("%s does not end with a newline: torn tail %q", path, tail(b))
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var e Entry
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			ids = append(ids, e.ExecutionID)
		} else {
			junk = append(junk, sc.Text())
		}
	}
	return ids, junk
}

func tail(b []byte) []byte { return b[max(0, len(b)-40):] }

func entry(id string, stdout int) Entry {
	return Entry{ExecutionID: id, Language: "python", Stdout: strings.Repeat("o", stdout), ExecutedAt: day}
}

func TestAppendOnFullDiskIsWholeOrNothing(t *testing.T) {
	d := fulldisk.Mount(t, 512<<10)
	l, err := New(d.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	path := filepath.Join(d.Dir, DailyFile(day))
	var want []string
	appendOK := func(id string, stdout int) {
		t.Helper()
		if err := l.AppendExecution(entry(id, stdout)); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		want = append(want, id)
	}
	appendFails := func(id string, stdout int) {
		t.Helper()
		before, _ := os.ReadFile(path)
		err := l.AppendExecution(entry(id, stdout))
		var we *WriteError
		if !errors.As(err, &we) || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("%s: want a WriteError for ENOSPC, got %v", id, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "execution log not written: no space left on device ("+path+")") {
			t.Errorf("message %q", msg)
		}
		after, _ := os.ReadFile(path)
		if !bytes.Equal(before, after) {
			t.Fatalf("%s: the failed append changed the file (%d -> %d bytes)", id, len(before), len(after))
		}
	}
	appendOK("exec_before1", 100)
	appendOK("exec_before2", 20000)
	d.Fill()
	appendFails("exec_full", 8<<10) // more than the free end of the last page
	d.Leave(16 << 10)               // a few pages: a big entry is cut short by the disk
	appendFails("exec_short_write", 200<<10)
	appendOK("exec_fits", 100) // what fits is still written whole
	appendFails("exec_short_again", 200<<10)
	d.Free()
	appendOK("exec_after", 200<<10)
	ids, junk := fileLines(t, path)
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("entries in the file (-want +got):\n%s", diff)
	}
	if len(junk) > 0 {
		t.Errorf("unparseable lines: %q", junk)
	}
}

func TestAppendAfterTornTail(t *testing.T) {
	whole := `{"type":"execution","execution_id":"exec_whole","language":"bash","executed_at":"2026-02-09T14:00:00Z"}`
	tests := []struct {
		name      string
		content   string
		wantIDs   []string
		wantJunk  []string
		wantBytes string // file content expected before the new entry's line
	}{
		{"torn by a crash", whole + "\n" + `{"type":"execution","execution_id":"exec_torn","co`,
			[]string{"exec_whole", "exec_new"}, []string{`{"type":"execution","execution_id":"exec_torn","co`},
			whole + "\n" + `{"type":"execution","execution_id":"exec_torn","co` + "\n"},
		{"whole entry missing its newline", whole,
			[]string{"exec_whole", "exec_new"}, nil, whole + "\n"},
		{"clean file", whole + "\n", []string{"exec_whole", "exec_new"}, nil, whole + "\n"},
		{"empty file", "", []string{"exec_new"}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, DailyFile(day))
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			l, _ := New(dir)
			defer l.Close()
			var offs []int64
			l.OnAppend(func(_ string, off int64, _ []byte) { offs = append(offs, off) })
			if err := l.AppendExecution(entry("exec_new", 10)); err != nil {
				t.Fatal(err)
			}
			ids, junk := fileLines(t, path)
			if diff := cmp.Diff(tc.wantIDs, ids); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantJunk, junk); diff != "" {
				t.Errorf("unparseable lines (-want +got):\n%s", diff)
			}
			b, _ := os.ReadFile(path)
			if !strings.HasPrefix(string(b), tc.wantBytes) || len(offs) != 1 || offs[0] != int64(len(tc.wantBytes)) {
				t.Errorf("new entry at offset %v of %q, want it to start at %d", offs, b, len(tc.wantBytes))
			}
		})
	}
}

func TestAppendFollowsReplacedFile(t *testing.T) {
	dir := t.TempDir()
	l, _ := New(dir)
	defer l.Close()
	if err := l.AppendExecution(entry("exec_1", 1)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, DailyFile(day))
	// Retention rewrites the file under the open handle.
	if err := atomicfile.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := l.AppendExecution(entry("exec_2", 1)); err != nil {
		t.Fatal(err)
	}
	ids, _ := fileLines(t, path)
	if diff := cmp.Diff([]string{"exec_2"}, ids); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

func TestWriteErrorNamesCauseAndPath(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	l := &Logger{dir: notDir, files: map[string]*logFile{}}
	err := l.Append("x.jsonl", map[string]string{"type": "t"})
	want := "execution log not written: not a directory (" + filepath.Join(notDir, "x.jsonl") + ")"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}
