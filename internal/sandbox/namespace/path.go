package namespace

import "github.com/codexec/codexec/internal/proc"

// pathed returns a function that records path on a started run (see
// proc.HostProc.SetPath) and passes the start's results on.
func pathed(path string) func(*proc.HostProc, error) (*proc.HostProc, error) {
	return func(p *proc.HostProc, err error) (*proc.HostProc, error) {
		if err == nil {
			p.SetPath(path)
			if path == proc.PathCold {
				p.MeasureTree() // sandbox-init, bwrap and the program: the run's own
			}
		}
		return p, err
	}
}
