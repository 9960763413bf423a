package capture

import (
	"os"
	"time"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/helper"
)

// Receive reads the sockets s from conn, a message tagged tag
// (helper.ReceiveSockets; conn non-blocking so timeout holds), and wraps
// them (Wrap).
func Receive(conn *os.File, tag byte, s helper.Sockets, timeout time.Duration) (*sandbox.Capture, error) {
	files, err := helper.ReceiveSockets(conn, tag, len(s.List()), timeout)
	if err != nil {
		return nil, err
	}
	return Wrap(s, files)
}
