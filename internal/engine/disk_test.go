package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/codexec/codexec/internal/diskbound"
)

// TestDiskUnavailableFallsBack: when the bounded disks could not start, runs
// still work (with /tmp left to the backend) instead of failing.
func TestDiskUnavailableFallsBack(t *testing.T) {
	if err := diskbound.Available(); err != nil {
		t.Skipf("bounded disks unavailable here: %v", err)
	}
	e := newTestEngine(t)
	broken, err := diskbound.New(diskbound.Options{Dir: filepath.Join(t.TempDir(), ".disks"), Bytes: 1 << 62})
	if err != nil {
		t.Fatal(err)
	}
	defer broken.Close()
	e.opts.Disks = broken
	r, err := e.Execute(context.Background(), Request{Language: "bash", Code: "echo ok"})
	if err != nil || r.Stdout != "ok\n" {
		t.Fatalf("%v %+v", err, r)
	}
}

// TestNoteDiskFull: a failed run on a full disk leads its message with the
// limit; successes and runs with room are unchanged.
func TestNoteDiskFull(t *testing.T) {
	if err := diskbound.Available(); err != nil {
		t.Skipf("bounded disks unavailable here: %v", err)
	}
	set, err := diskbound.New(diskbound.Options{Dir: filepath.Join(t.TempDir(), ".disks"), Bytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	d, err := set.Scratch()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	msg := "Process exited with code 1."
	failed := Result{Status: StatusExecutionError, ErrorMessage: &msg}
	if r := noteDiskFull(failed, d); *r.ErrorMessage != msg {
		t.Fatalf("disk with room: %q", *r.ErrorMessage)
	}
	if err := os.WriteFile(filepath.Join(d.TmpDir(), "fill"), make([]byte, 9<<20), 0o644); err == nil {
		t.Fatal("9 MiB fit on an 8 MiB disk")
	}
	got := noteDiskFull(failed, d)
	if want := "disk limit 8 MiB exceeded (workspace and /tmp together): " + msg; *got.ErrorMessage != want {
		t.Fatalf("got %q, want %q", *got.ErrorMessage, want)
	}
	ok := Result{Success: true, Status: StatusSuccess}
	if r := noteDiskFull(ok, d); r.ErrorMessage != nil {
		t.Fatalf("success got a message: %q", *r.ErrorMessage)
	}
}
