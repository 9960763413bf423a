package session

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/artifacts"
	"github.com/codexec/codexec/internal/files"
)

// TestExecReportsChanges: a send reports exactly the files it created,
// modified and deleted, in subdirectories and by processes and threads it
// left running, whether or not its snapshots skip the walk of an empty,
// quiet workspace; and a quiet empty workspace is not walked.
func TestExecReportsChanges(t *testing.T) {
	m := testManager(t)
	ctx := context.Background()
	info, err := m.Start(ctx, StartRequest{Kind: KindSession, Language: "python"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Get(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	quiet := func() { time.Sleep(files.QuietFor + 100*time.Millisecond) }
	type step struct {
		name    string
		quiet   bool // wait first until the workspace is quiet
		code    string
		want    artifacts.Diff
		walks   int // the snapshots that walk (-1: any)
		settled time.Duration
	}
	none := artifacts.Diff{Created: []string{}, Modified: []string{}, Deleted: []string{}}
	// bytes: the size the created and modified files have after the send.
	diff := func(c, m, d []string, bytes ...int64) artifacts.Diff {
		out := none
		for _, b := range bytes {
			out.Bytes += b
		}
		if c != nil {
			out.Created = c
		}
		if m != nil {
			out.Modified = m
		}
		if d != nil {
			out.Deleted = d
		}
		return out
	}
	for _, st := range []step{
		{name: "first send", code: "import os, subprocess, threading, time, shutil\nx = 0", want: none, walks: -1},
		{name: "quiet", quiet: true, code: "x += 1", want: none, walks: -1},
		{name: "quiet and empty: no walk", code: "x += 1", want: none, walks: 0},
		{name: "created", code: "open('a.txt', 'w').write('1')", want: diff([]string{"a.txt"}, nil, nil, 1), walks: 1},
		{name: "modified", code: "open('a.txt', 'w').write('22')", want: diff(nil, []string{"a.txt"}, nil, 2), walks: 2},
		{name: "deleted", code: "os.remove('a.txt')", want: diff(nil, nil, []string{"a.txt"}), walks: 2},
		{name: "created in a subdirectory", quiet: true, code: "os.makedirs('d/e'); open('d/e/f', 'w').write('x')",
			want: diff([]string{"d/e/f"}, nil, nil, 1), walks: -1},
		{name: "modified in a subdirectory", quiet: true, code: "open('d/e/f', 'a').write('y')",
			want: diff(nil, []string{"d/e/f"}, nil, 2), walks: 2},
		{name: "deleted with its subdirectory", code: "shutil.rmtree('d')", want: diff(nil, nil, []string{"d/e/f"}), walks: 2},
		{name: "quiet again", quiet: true, code: "x += 1", want: none, walks: -1},
		{name: "created by a background process",
			code: "subprocess.Popen(['sh', '-c', 'sleep 0.3; echo x > bg.txt']); time.sleep(0.8)",
			want: diff([]string{"bg.txt"}, nil, nil, 2), walks: 1},
		{name: "deleted by a background process", quiet: true,
			code: "subprocess.Popen(['sh', '-c', 'sleep 0.3; rm bg.txt']); time.sleep(0.8)",
			want: diff(nil, nil, []string{"bg.txt"}), walks: 2},
		{name: "quiet once more", quiet: true, code: "x += 1", want: none, walks: -1},
		{name: "created by a thread",
			code: "threading.Timer(0.2, lambda: open('t.txt', 'w').write('x')).start(); time.sleep(0.6)",
			want: diff([]string{"t.txt"}, nil, nil, 1), walks: 1},
		{name: "deleted, and a process left to create one after the send", code: "os.remove('t.txt'); subprocess.Popen(['sh', '-c', 'sleep 0.5; echo y > late.txt'])",
			want: diff(nil, nil, []string{"t.txt"}), walks: 2, settled: 1500 * time.Millisecond},
		{name: "a file that came between sends is not this send's", quiet: true, code: "x += 1", want: none, walks: 2},
		{name: "and its change is", code: "open('late.txt', 'a').write('z')", want: diff(nil, []string{"late.txt"}, nil, 3), walks: 2},
		{name: "empty again", code: "os.remove('late.txt')", want: diff(nil, nil, []string{"late.txt"}), walks: 2},
		{name: "a file that came between sends into a quiet empty workspace", quiet: true,
			code: "subprocess.Popen(['sh', '-c', 'sleep 0.2; echo y > late2.txt'])", want: none, walks: -1, settled: 1500 * time.Millisecond},
		{name: "is seen before the next send", code: "os.remove('late2.txt')", want: diff(nil, nil, []string{"late2.txt"}), walks: 2},
	} {
		if st.quiet {
			quiet()
		}
		w0 := s.snaps.walks
		res, err := m.Exec(ctx, ExecRequest{Session: info.ID, Code: st.code})
		if err != nil || !res.Success {
			t.Fatalf("%s: %v %+v", st.name, err, res)
		}
		if diff := cmp.Diff(st.want, res.Diff); diff != "" {
			t.Errorf("%s: changes (-want +got):\n%s", st.name, diff)
		}
		wantArtifacts := append(append([]string{}, st.want.Created...), st.want.Modified...)
		if diff := cmp.Diff(wantArtifacts, res.Artifacts); diff != "" {
			t.Errorf("%s: artifacts (-want +got):\n%s", st.name, diff)
		}
		if got := s.snaps.walks - w0; st.walks >= 0 && got != st.walks {
			t.Errorf("%s: %d snapshots walked the workspace, want %d", st.name, got, st.walks)
		}
		time.Sleep(st.settled)
	}
}
