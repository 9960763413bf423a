package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/diskbound"
)

// TestStdioInputEndAnswersRunningCall closes stdin while a call runs: the
// client has left, so the run is cancelled at once (not after the shutdown
// grace), and the call is still answered (status cancelled) before the output
// ends and the server exits.
func TestStdioInputEndAnswersRunningCall(t *testing.T) {
	sameInEveryMode(t, "raw stdio pins subprocess mode")
	r := startRawStdio(t, "CODEXEC_SHUTDOWN_GRACE_MS=60000")
	params, _ := json.Marshal(map[string]any{"name": "execute_code",
		"arguments": map[string]any{"language": "python", "code": "import time\nprint('started', flush=True)\ntime.sleep(60)\nprint('finished')"}})
	r.send(`{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":` + string(params) + `}`)
	time.Sleep(500 * time.Millisecond) // let the call start
	begin := time.Now()
	if err := r.in.Close(); err != nil {
		t.Fatalf("close stdin: %v", err)
	}
	_, m := r.await(`"slow"`) // fails if the output ends first
	var res struct {
		IsError    bool `json:"isError"`
		Structured struct {
			Status string `json:"status"`
		} `json:"structuredContent"`
	}
	if m.Result != nil {
		if err := json.Unmarshal(m.Result, &res); err != nil {
			t.Fatalf("result %s: %v", m.Result, err)
		}
	}
	if m.Error == nil && !res.IsError && res.Structured.Status != "cancelled" {
		t.Errorf("answer after stdin closed: result %s; want the run cancelled", m.Result)
	}
	if took := time.Since(begin); took > 15*time.Second {
		t.Errorf("answered %v after stdin closed: the run waited for the grace instead of being cancelled", took)
	}
	select {
	case <-r.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("the server did not exit after answering")
	}
}

// TestStdioShortSessionNoDiskAlarm runs short namespace-mode sessions (stdin
// at its end from the start, racing the bounded disks' start-up) on a host
// where bounded disks work: none may warn that the disk limit covers only
// /tmp.
func TestStdioShortSessionNoDiskAlarm(t *testing.T) {
	sameInEveryMode(t, "pins namespace mode")
	if os.Geteuid() != 0 {
		t.Skip("namespace mode and bounded disks need root")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("namespace mode needs bubblewrap: " + err.Error())
	}
	if err := diskbound.Available(); err != nil {
		t.Skip("this host cannot make bounded disks: " + err.Error())
	}
	for i := range 3 {
		cmd := exec.Command(binary(t), "serve")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8",
			"CODEXEC_DATA_DIR=" + t.TempDir(), "CODEXEC_SANDBOX_MODE=namespace", "LOG_LEVEL=debug"}
		cmd.Stdin = strings.NewReader("") // the client is gone at once
		cmd.WaitDelay = time.Minute
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("session %d: serve: %v\n%s", i, err, tail(string(out), 3000))
		}
		if strings.Contains(string(out), "DISK LIMIT") {
			t.Errorf("session %d: the disk limit warning appeared on a host where bounded disks work:\n%s", i, tail(string(out), 3000))
		}
	}
}
