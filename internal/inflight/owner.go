package inflight

import (
	"os"

	"github.com/codexec/codexec/internal/instance"
)

// A server holds the lock of its journal file for as long as it lives (see
// createLocked), so a server of another pid namespace — a pod's restarted
// container, a container beside a server on the host — whose pid means
// nothing here is proved gone when its journal's lock is free. A journal is
// only ever put in place already locked; names of earlier versions, which
// did not lock, are judged by package instance alone.

// createLocked writes content to a new file at path: a temporary file,
// locked, written and then renamed over path, so the file at path is always
// whole and locked while its server lives. It returns the file open for
// appending.
func createLocked(path string, content []byte) (_ *os.File, retErr error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err := lock(f); err != nil {
		return nil, err
	}
	if _, err := f.Write(content); err != nil {
		return nil, err
	}
	return f, os.Rename(tmp, path)
}

// ownerGone reports whether the server that wrote the journal at path,
// named server, is provably gone. For a server of another pid namespace
// this takes the journal's lock: the returned file holds it, so no other
// server reads or removes the journal meanwhile (close it when done; nil
// otherwise).
func ownerGone(path, server string) (bool, *os.File) {
	switch {
	case instance.Dead(server):
		return true, nil
	case !instance.Foreign(server):
		return false, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, nil
	}
	// Locked, but perhaps a file its live server has since replaced
	// (compaction): only the file still at path counts.
	if held, err := tryLock(f); err != nil || held || !sameFile(f, path) {
		_ = f.Close()
		return false, nil
	}
	return true, f
}
