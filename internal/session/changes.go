package session

import (
	"time"

	"github.com/codexec/codexec/internal/artifacts"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/files"
)

// snapshots takes the workspace snapshots before and after each Exec, from
// which a result reports the files the code created, modified and deleted.
// A snapshot walks the workspace on the sandbox user's confinement thread
// (~25 µs for an empty one, more under load). Most sessions leave their
// workspace empty, and an empty one need not be walked again while its
// directory is unchanged: empty holds the stamp of the workspace's root
// directory when a walk last found it empty, and a snapshot whose stamp
// equals it is empty without a walk. That is exact: an entry created,
// removed or renamed in the root moves its ctime, and empty is only set
// from a Quiet stamp, after which every change moves it (files.Stamp).
// With no entries there are no files to modify and no subdirectories to
// change unseen.
type snapshots struct {
	empty files.Stamp
	// walks counts the snapshots that walked the workspace (for tests).
	walks int
}

// take snapshots the workspace opened as root.
func (sn *snapshots) take(root *files.Root) artifacts.Snapshot {
	at := time.Now()
	st := root.Stamp()
	if st != (files.Stamp{}) && st == sn.empty {
		return artifacts.Snapshot{}
	}
	sn.walks++
	snap := artifacts.Take(root)
	sn.empty = files.Stamp{}
	if snap.Empty() && st.Quiet(at) {
		sn.empty = st // taken before the walk: a change during it moved the ctime past st's
	}
	return snap
}

// withChanges sets res's Diff (for the log) from the snapshots before and
// after, and adds the created and modified files to its Artifacts, as
// engine.Changes does for one-shot runs.
func withChanges(res engine.Result, before, after artifacts.Snapshot) engine.Result {
	res.Diff = artifacts.Compare(before, after)
	res.Artifacts = append(append(res.Artifacts, res.Diff.Created...), res.Diff.Modified...)
	return res
}
