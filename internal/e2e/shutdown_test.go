package e2e

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitFor polls cond every 50 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processesWith lists host PIDs whose command line contains arg.
func processesWith(arg string) []string {
	var pids []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && strings.Contains(string(b), arg) {
			pids = append(pids, filepath.Base(d))
		}
	}
	return pids
}

type callOutcome struct {
	r   execResult
	err error
}

func TestHTTPShutdownLetsRunningCallFinish(t *testing.T) {
	s := startHTTP(t, "")
	cs := s.mustConnect("")
	done := make(chan callOutcome, 1)
	go func() {
		r, err := callExec(t, cs, "python", "import time\ntime.sleep(1.5)\nprint('finished')")
		done <- callOutcome{r, err}
	}()
	waitFor(t, 30*time.Second, "the call to run", func() bool { return s.metric("codexec_running_calls") == 1 })
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	// While the call runs, the server still answers: /readyz says it is
	// draining (a proxy stops sending new work), /healthz that it is alive.
	waitFor(t, 5*time.Second, "/readyz to report draining", func() bool {
		code, body := probe(s.URL + "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "draining")
	})
	if code, _ := probe(s.URL + "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while draining: %d, want 200", code)
	}
	out := <-done
	if out.err != nil || out.r.Status != "success" || out.r.Stdout != "finished\n" {
		t.Fatalf("running call did not finish normally: %+v %v", out.r, out.err)
	}
	if err := s.terminate(30 * time.Second); err != nil {
		t.Errorf("exit: %v", err)
	}
	if log := s.Stderr.String(); !strings.Contains(log, "http server stopped") || strings.Contains(log, "killed=") {
		t.Errorf("shutdown log:\n%s", tail(log, 1500))
	}
}

// probe GETs url and returns the status and body; 0 when nothing answers.
func probe(url string) (int, string) {
	resp, err := httpClient("").Get(url)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHTTPShutdownKillsCallPastGrace(t *testing.T) {
	s := startHTTP(t, "", "CODEXEC_SHUTDOWN_GRACE_MS=1000")
	cs := s.mustConnect("")
	marker := fmt.Sprintf("29.%08d", rand.IntN(1e8))
	done := make(chan callOutcome, 1)
	go func() {
		r, err := callExec(t, cs, "bash", "sleep "+marker)
		done <- callOutcome{r, err}
	}()
	waitFor(t, 30*time.Second, "the sleep to start", func() bool { return len(processesWith(marker)) > 0 })
	start := time.Now()
	if err := s.terminate(20 * time.Second); err != nil {
		t.Errorf("exit: %v", err)
	}
	t.Logf("exited %v after SIGTERM (grace 1s)", time.Since(start).Round(time.Millisecond))
	waitFor(t, 5*time.Second, "the sleep to be gone", func() bool { return len(processesWith(marker)) == 0 })
	if log := s.Stderr.String(); !strings.Contains(log, "killed=1") {
		t.Errorf("shutdown did not log the killed call:\n%s", tail(log, 1500))
	}
	select {
	case out := <-done:
		t.Logf("client saw: status %q err %v", out.r.Status, out.err)
	case <-time.After(10 * time.Second):
		t.Error("client call still pending after the server exited")
	}
	found := false
	for _, l := range logLines(t, s.DataDir) {
		found = found || (strings.Contains(l, marker) && strings.Contains(strings.ToLower(l), "cancel"))
	}
	if !found {
		t.Errorf("no cancelled log entry for the killed run")
	}
}

func TestStdioShutdownLetsRunningCallFinish(t *testing.T) {
	s := start(t, "CODEXEC_SHUTDOWN_GRACE_MS=20000")
	marker := fmt.Sprintf("1.%08d", rand.IntN(1e8))
	done := make(chan callOutcome, 1)
	go func() {
		r, err := callExec(t, s.Session, "bash", "sleep "+marker+"; echo finished")
		done <- callOutcome{r, err}
	}()
	waitFor(t, 30*time.Second, "the sleep to start", func() bool { return len(processesWith(marker)) > 0 })
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	out := <-done
	if out.err != nil || out.r.Stdout != "finished\n" {
		t.Fatalf("running call did not finish after SIGTERM: %+v %v", out.r, out.err)
	}
	if !strings.Contains(s.Stderr.String(), "shutting down") {
		t.Errorf("no shutdown log:\n%s", tail(s.Stderr.String(), 1500))
	}
}
