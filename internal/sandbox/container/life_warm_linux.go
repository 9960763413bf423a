package container

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/codexec/codexec/internal/sandbox"
)

// The lifetime of a warm container (life.go explains it): its first
// process waits for the run's deadline on a FIFO the server holds open.

// Names of a warm container's lifetime FIFOs in its runner directory.
const (
	deadlineFIFO = ".codexec-deadline"
	exitFIFO     = ".codexec-exit"
)

// warmEntry is the command of a warm container running cmd with the
// redirections redirect (fd 5 is the container's stdin): see life.go. The
// runner's status crosses from the background job to the sentinel through
// the exit FIFO. `timeout` passes SIGTERM and SIGINT on to the whole process
// group: the job's shell traps SIGTERM and the sentinel ignores both, so that
// a terminated runner still reports how it ended (the trap is reset, not
// inherited, when the runner starts). A background job starts with SIGINT
// and SIGQUIT ignored; the python stub restores them (runner_python.py),
// node resets every signal itself. Without a deadline (the FIFO ended, or an
// empty line) the shell exits 125. The deadline FIFO is opened read-write
// first (fd 6) only so that opening its read end (fd 8) cannot block: a
// plain read-only open waits for a writer, and a server killed before it
// opened its end would leave the shell waiting forever. Once fd 6 is
// closed, the server's end is the only writer, and its death ends the read.
func warmEntry(cmd []string, redirect string) []string {
	ws := sandbox.WorkspacePath + "/"
	script := `exec 5<&0 6<>` + ws + deadlineFIFO + ` 8<` + ws + deadlineFIFO + ` 7<>` + ws + exitFIFO + `
exec 6<&-
(trap : TERM; "$@" ` + redirect + ` 5<&- 8<&- 7>&-; echo "$?" >&7) &
exec 5<&-
read -r d <&8 && [ -n "$d" ] || exit 125
exec 8<&-
exec timeout -s KILL "$d" sh -c 'trap "" TERM INT; read -r s; exit "$s"' <&7 7<&-`
	return append([]string{"sh", "-c", script, "sh"}, cmd...)
}

// makeLifeFIFOs creates a warm container's lifetime FIFOs in dir and
// returns the server's end of the deadline FIFO, open for reading and
// writing so that the container's shell never sees it without a writer
// while the server lives.
func makeLifeFIFOs(dir string) (*os.File, error) {
	for _, name := range []string{deadlineFIFO, exitFIFO} {
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			return nil, err
		}
		if err := os.Chmod(p, 0o666); err != nil {
			return nil, err
		}
	}
	return os.OpenFile(filepath.Join(dir, deadlineFIFO), os.O_RDWR|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
}

// armDeadline hands a taken warm container its run's deadline and closes
// the server's end of the FIFO.
func armDeadline(f *os.File, d time.Duration) error {
	_, err := f.WriteString(deadlineSeconds(d) + "\n")
	return errors.Join(err, f.Close())
}
