package app

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/recovery"
)

// TestBuildRollsBack makes Build fail late, after the backend started warm
// runners and the start-up health check ran code through it, and checks
// that everything Build started is gone again: no process it started is
// left, its in-flight journal is removed, and its goroutines (health check,
// log index, sessions, upstreams) have ended.
func TestBuildRollsBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tweak func(dir string, cfg *config.Config)
		want  string
	}{
		{"upstreams file missing", func(dir string, cfg *config.Config) {
			cfg.CodeMode.Upstreams = filepath.Join(dir, "missing.json")
		}, "CODEXEC_UPSTREAMS"},
		{"unknown toolset", func(_ string, cfg *config.Config) {
			cfg.Toolsets = append(cfg.Toolsets, "nope")
		}, "unknown toolset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := config.Defaults(dir)
			cfg.SandboxMode = config.ModeSubprocess
			cfg.HealthCheck = config.HealthStartup // code has run through the backend when Build fails
			tc.tweak(dir, &cfg)
			goroutines := runtime.NumGoroutine()
			a, err := Build(context.Background(), cfg, HostEnv{Home: dir, Path: os.Getenv("PATH"), Cwd: dir})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				if a != nil {
					a.Close()
				}
				t.Fatalf("Build: %v, want an error about %s", err, tc.want)
			}
			if left := eventually(func() []string { return processesIn(dir) }); len(left) > 0 {
				t.Errorf("processes left running: %v", left)
			}
			if left, _ := os.ReadDir(recovery.JournalDir(cfg.LogDir)); len(left) > 0 {
				t.Errorf("in-flight journal left behind: %v", left)
			}
			n := 0
			eventually(func() []string {
				if n = runtime.NumGoroutine(); n > goroutines {
					return []string{"running"}
				}
				return nil
			})
			if n > goroutines {
				buf := make([]byte, 1<<20)
				t.Errorf("%d goroutines before Build, %d after it failed:\n%s", goroutines, n, buf[:runtime.Stack(buf, true)])
			}
		})
	}
}

// eventually polls check for up to 5 s until it reports nothing, and
// returns what it reported last.
func eventually(check func() []string) []string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := check()
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processesIn lists the processes (pid and command line) that are children
// of this one or whose working directory lies below dir.
func processesIn(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	self := strconv.Itoa(os.Getpid())
	var out []string
	for _, e := range entries {
		pid := e.Name()
		if _, err := strconv.Atoi(pid); err != nil || pid == self {
			continue
		}
		cwd, _ := os.Readlink(filepath.Join("/proc", pid, "cwd"))
		if !strings.HasPrefix(cwd, dir) && parent(pid) != self {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		out = append(out, pid+" "+strings.ReplaceAll(string(cmd[:min(len(cmd), 60)]), "\x00", " "))
	}
	return out
}

// parent is the parent pid of pid, from /proc/<pid>/stat ("" if gone).
func parent(pid string) string {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return ""
	}
	// The command name may hold spaces: fields count from its closing ")".
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 2 {
		return ""
	}
	return f[1]
}
