package session

import (
	_ "embed"
	"fmt"
)

//go:embed driver_python.py
var pythonDriver string

//go:embed driver_node.js
var nodeDriver string

// driverArgv returns the argv that starts the driver for a canonical
// language with the frame mark as its last argument.
func driverArgv(lang, interp, mark string) ([]string, error) {
	switch lang {
	case "python":
		return []string{interp, "-c", pythonDriver, mark}, nil
	case "node":
		return []string{interp, "-e", nodeDriver, mark}, nil
	}
	return nil, fmt.Errorf("sessions support python and node/javascript, not %s", lang)
}
