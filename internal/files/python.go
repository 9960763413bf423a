package files

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"

	"github.com/codexec/codexec/internal/atomicfile"
)

//go:embed python/codexec_mpl.py
var mplBackend []byte

//go:embed python/matplotlibrc
var mplRC []byte

// MPLBackend is the MPLBACKEND value selecting codexec's matplotlib backend.
const MPLBackend = "module://codexec_mpl"

// PlotDir is where codexec_mpl saves figures, relative to the workspace.
const PlotDir = ".codexec/plots"

// InstallPython writes the python support files into dir (created 0755,
// files 0644, so the sandbox user can read them through a read-only mount):
// codexec_mpl.py, for PYTHONPATH, and a matplotlibrc, for MATPLOTLIBRC.
func InstallPython(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("python support: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("python support: %w", err)
	}
	for name, data := range map[string][]byte{"codexec_mpl.py": mplBackend, "matplotlibrc": mplRC} {
		if err := atomicfile.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("python support: %w", err)
		}
	}
	return nil
}
