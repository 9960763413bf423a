package files

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
)

//go:embed python/codexec_mpl.py
var mplBackend []byte

// MPLBackend is the MPLBACKEND value selecting codexec's matplotlib backend.
const MPLBackend = "module://codexec_mpl"

// PlotDir is where codexec_mpl saves figures, relative to the workspace.
const PlotDir = ".codexec/plots"

// InstallPython writes the python support modules into dir (created 0755,
// files 0644, so the sandbox user can read them through a read-only mount).
// dir goes on PYTHONPATH of every python run and session.
func InstallPython(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("python support: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("python support: %w", err)
	}
	tmp := filepath.Join(dir, ".codexec_mpl.py.tmp")
	if err := os.WriteFile(tmp, mplBackend, 0o644); err != nil {
		return fmt.Errorf("python support: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, "codexec_mpl.py"))
}
