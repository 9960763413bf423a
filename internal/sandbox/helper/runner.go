package helper

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// EncodeRun is the message a runner's stub reads from fd 3: the payload's
// length in decimal and a newline, then NUL-separated fields: cwd, the
// number of environment entries, the entries, the code, the arguments.
func EncodeRun(cwd string, env []string, code string, args []string) []byte {
	fields := append(append([]string{cwd, fmt.Sprint(len(env))}, env...), code)
	payload := strings.Join(append(fields, args...), "\x00")
	return []byte(fmt.Sprintf("%d\n%s", len(payload), payload))
}

// ReadStatus reads the stub's exit status ("X<status>\n") from its control
// channel; ok is false when the channel ends first or carries anything
// else.
func ReadStatus(ctl io.Reader) (code int, ok bool) {
	line, err := bufio.NewReaderSize(ctl, 16).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "X") {
		return 0, false
	}
	code, err = strconv.Atoi(strings.TrimSuffix(line[1:], "\n"))
	if err != nil || code < 0 || code > 255 {
		return 0, false
	}
	return code, true
}

// DecodeRun splits the payload of an EncodeRun message (what follows the
// length line) into its fields.
func DecodeRun(payload []byte) (cwd string, env []string, code string, args []string, err error) {
	f := strings.Split(string(payload), "\x00")
	if len(f) < 3 {
		return "", nil, "", nil, fmt.Errorf("run message: %d fields", len(f))
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n < 0 || 2+n >= len(f) {
		return "", nil, "", nil, fmt.Errorf("run message: bad environment count %q", f[1])
	}
	return f[0], f[2 : 2+n], f[2+n], f[3+n:], nil
}
