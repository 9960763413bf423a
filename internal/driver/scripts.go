package driver

import (
	_ "embed"
	"fmt"
)

//go:embed driver_python.py
var pythonDriver string

//go:embed driver_node.js
var nodeDriver string

// The checkpoint halves of the drivers, prepended to them.
var (
	//go:embed checkpoint_python.py
	pythonCheckpoint string
	//go:embed checkpoint_node.js
	nodeCheckpoint string
)

// argv returns the argv that starts the driver for a canonical language
// with the frame mark as its last argument.
func argv(lang, interp, mark string) ([]string, error) {
	switch lang {
	case "python":
		return []string{interp, "-c", pythonCheckpoint + "\n" + pythonDriver, mark}, nil
	case "node":
		return []string{interp, "-e", nodeCheckpoint + "\n" + nodeDriver, mark}, nil
	}
	return nil, fmt.Errorf("sessions support python and node/javascript, not %s", lang)
}
