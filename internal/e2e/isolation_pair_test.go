package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// isolationPair is a run that tries to leave something behind and a run
// that must not see it. probe prints "CLEAN" when it sees nothing.
type isolationPair struct {
	name, lang, leave, probe string
}

var isolationPairs = []isolationPair{
	{"files in /tmp and HOME", "python",
		"import os\nopen('/tmp/leak','w').write('x'); os.makedirs('/tmp/d/e', exist_ok=True)\ntry: open(os.path.expanduser('~/leak'),'w').write('x')\nexcept OSError: pass",
		"import os; home=os.listdir(os.path.expanduser('~')); print('CLEAN' if not os.path.exists('/tmp/leak') and not os.path.exists('/tmp/d') and 'leak' not in home else 'LEAK', home)"},
	{"shared memory (/dev/shm), used by multiprocessing", "python",
		"import multiprocessing as mp, os\nwith mp.Pool(2) as p: assert p.map(abs, [-1, -2]) == [1, 2]\nopen('/dev/shm/leak','w').write('x')",
		"import os; print('CLEAN' if os.listdir('/dev/shm') == [] else 'LEAK', os.listdir('/dev/shm'))"},
	{"environment", "python",
		"import os; os.environ['LEAK']='1'; os.putenv('LEAK2','1')",
		"import os; print('CLEAN' if 'LEAK' not in os.environ and 'LEAK2' not in os.environ else 'LEAK')"},
	{"background processes", "python",
		"import subprocess; subprocess.Popen(['sleep','60'], start_new_session=True); subprocess.Popen(['sh','-c','(sleep 61 &) ; sleep 62'])",
		"import os; c=[open('/proc/%s/cmdline'%p,'rb').read() for p in os.listdir('/proc') if p.isdigit()]; print('CLEAN' if not any(x.split(b'\\0')[0].endswith(b'sleep') for x in c) else 'LEAK', len(c))"},
	{"open descriptors", "python",
		"import os; fs=[open('/tmp/f%d'%i,'w') for i in range(5)]; r,w=os.pipe(); os.set_inheritable(r,True); os.set_inheritable(w,True); print(sorted(os.listdir('/proc/self/fd')))",
		fdsProbes["python"]},
	{"sys.modules, builtins, globals, sys.path", "python",
		"import sys, builtins, json; sys.modules['json']='poison'; sys.modules['evil']=1; builtins.len=lambda x: 42; builtins.LEAKED=1; sys.path.insert(0,'/tmp/evil'); global G; G=1",
		"import sys, builtins; ok = 'evil' not in sys.modules and sys.modules.get('json') != 'poison' and len([1,2]) == 2 and not hasattr(builtins,'LEAKED') and '/tmp/evil' not in sys.path and 'G' not in globals(); print('CLEAN' if ok else 'LEAK')"},
	{"memory counters", "python",
		"b = bytearray(96 << 20); print(len(b))",
		"print('CLEAN')"},
	{"node globals, prototypes, require cache, env", "node",
		"globalThis.LEAK=1; Object.prototype.polluted=1; Array.prototype.push=function(){return -1}; process.env.LEAK='1'; require.cache['/x']={exports:1}; require('fs').writeFileSync('/tmp/leak','x')",
		"const ok = typeof LEAK==='undefined' && ({}).polluted===undefined && [].push(1)===1 && !process.env.LEAK && !require.cache['/x'] && !require('fs').existsSync('/tmp/leak'); console.log(ok ? 'CLEAN' : 'LEAK')"},
	// bash runs are served by exec runners: the helper waits in the
	// sandbox and executes bash when the run comes.
	{"bash: files in /tmp and HOME", "bash",
		"echo x > /tmp/leak; mkdir -p /tmp/d/e; echo x > ~/leak 2>/dev/null; echo left",
		"if [ -e /tmp/leak ] || [ -e /tmp/d ] || [ -e ~/leak ]; then echo LEAK; else echo CLEAN; fi; ls -A ~"},
	{"bash: environment, functions, rc files", "bash",
		"export LEAK=1; f() { :; }; export -f f; echo 'export LEAK2=1' >> ~/.bashrc 2>/dev/null; echo 'export LEAK3=1' >> /tmp/.profile; echo left",
		`if [ -n "${LEAK+x}${LEAK2+x}${LEAK3+x}" ] || declare -F f >/dev/null || env | grep -q BASH_FUNC; then echo LEAK; else echo CLEAN; fi`},
	{"bash: background processes", "bash",
		"setsid sleep 60 >/dev/null 2>&1 & (sleep 61 &); nohup sleep 62 >/dev/null 2>&1 & disown; echo left",
		`for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f"; echo; done 2>/dev/null | grep -q '^sleep' && echo LEAK || echo CLEAN`},
	{"bash: open descriptors", "bash",
		"exec 5>/tmp/f5 7</dev/null 9>&1; ls /proc/$$/fd",
		fdsProbes["bash"]},
	{"bash: memory counters", "bash",
		"dd if=/dev/zero of=/dev/null bs=100M count=1 status=none && echo left",
		"echo CLEAN"},
}

// fdsProbes print "FDS" and the descriptors a run holds; a probe that
// does must print what it printed in a run of its own before any pair.
var fdsProbes = map[string]string{
	"python": "import os; print('FDS', sorted(os.listdir('/proc/self/fd')))",
	// Listed to a file, not through a pipe or command substitution:
	// bash holds a pipeline's pipes while it starts it.
	"bash": "ls /proc/$$/fd > /tmp/fds; echo FDS $(cat /tmp/fds)",
}

// TestIsolationPairs runs each pair through the server in every isolated
// mode with warm runners on: the second run must see nothing of the first.
// It also checks the second runs were actually served warm and that their
// cgroup counters are their own.
func TestIsolationPairs(t *testing.T) {
	pinsNamespaceMode(t, "pins its sandbox modes")
	for _, m := range withForkVariant(sandboxModes(t)) {
		if m.name == "subprocess" {
			continue // no isolation to prove
		}
		t.Run(m.label(), func(t *testing.T) {
			if why := modeAvailable(t, m.name, m.env...); why != "" {
				t.Skipf("%s mode unavailable here: %s", m.name, why)
			}
			env := append([]string{"CODEXEC_SANDBOX_MODE=" + m.name, "CODEXEC_POOL_SIZE=2", "CODEXEC_MEMORY_LIMIT=256m"}, m.env...)
			s := start(t, env...)
			s.awaitWarm("python")
			baselines := map[string]string{}
			for lang, probe := range fdsProbes {
				// Two runs: one may be served cold while the runners refill.
				for range 2 {
					s.awaitWarm(lang)
					r, _ := s.exec(map[string]any{"language": lang, "code": probe})
					baselines[lang] += r.Stdout
				}
			}
			warm, forked := 0, 0
			for _, p := range isolationPairs {
				t.Run(p.name, func(t *testing.T) {
					// Docker mode serves bash cold: no runner to wait for.
					coldOnly := m.name == "docker" && p.lang == "bash"
					if !coldOnly {
						s.awaitWarm(p.lang)
					}
					first, _ := s.exec(map[string]any{"language": p.lang, "code": p.leave})
					if first.Status == "setup_error" && strings.Contains(deref(first.ErrorMessage), "unavailable") {
						t.Skipf("%s unavailable in this mode: %s", p.lang, deref(first.ErrorMessage))
					}
					if first.Status != "success" {
						t.Fatalf("leave run: %s %s %s", first.Status, deref(first.ErrorMessage), first.Stderr)
					}
					if !coldOnly {
						s.awaitWarm(p.lang)
					}
					second, _ := s.exec(map[string]any{"language": p.lang, "code": p.probe})
					if strings.HasPrefix(second.Stdout, "FDS") {
						if extra := extraFDs(second.Stdout, baselines[p.lang]); extra != "" {
							t.Fatalf("second run holds descriptors %s the baseline run did not: %q; baseline %q", extra, second.Stdout, baselines[p.lang])
						}
					} else if !strings.HasPrefix(second.Stdout, "CLEAN") {
						t.Fatalf("second run saw the first's leftovers: %q (stderr %q)", second.Stdout, second.Stderr)
					}
					if s.servedWarm(second.ExecutionID) {
						warm++
					}
					if strings.Contains(s.Stderr.String(), `msg="warm run" id=`+second.ExecutionID+" kind=python forked=true") {
						forked++
					}
					if strings.HasSuffix(p.name, "memory counters") {
						s.checkMemoryPeak(first.ExecutionID, second.ExecutionID)
					}
				})
			}
			if warm < len(isolationPairs)/2 {
				t.Errorf("only %d of %d probe runs were served by warm runners", warm, len(isolationPairs))
			}
			// Python probes are forked from a zygote where the kernel allows
			// (Landlock ABI 6, as on the machines CI runs on).
			if m.fork && strings.Contains(s.Stderr.String(), "python fork-server started") && forked == 0 {
				t.Errorf("no python probe run was served by a forked runner")
			}
			t.Logf("%d of %d probe runs served warm, %d of them forked", warm, len(isolationPairs), forked)
		})
	}
}

// awaitWarm waits (up to 20 s) until the server log shows more warm runners
// of lang started than taken, so the next run can be served warm.
func (s *server) awaitWarm(lang string) {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		log := s.Stderr.String()
		ready := strings.Count(log, `msg="warm runner ready" kind=`+lang)
		taken := len(regexp.MustCompile(`msg="warm run" id=\S+ kind=`+lang).FindAllString(log, -1))
		if ready > taken {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// servedWarm reports whether the server log shows execution id as served
// by a warm runner. The server logs a run's end ("run timing") before it
// answers, but its stderr reaches the test through a pipe, later than the
// answer: so it first waits (up to 10 s) for that line.
func (s *server) servedWarm(id string) bool {
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.Stderr.String(), `msg="run timing" id=`+id+" ") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return strings.Contains(s.Stderr.String(), `msg="warm run" id=`+id+" ")
}

// checkMemoryPeak compares the cgroup memory peaks the execution log
// recorded: the probe's must not include the first run's allocation.
func (s *server) checkMemoryPeak(firstID, secondID string) {
	s.t.Helper()
	var a, b struct {
		MemoryPeakMB *float64 `json:"memory_peak_mb"`
	}
	s.callInto("get_execution_log", map[string]any{"execution_id": firstID}, &a)
	s.callInto("get_execution_log", map[string]any{"execution_id": secondID}, &b)
	if a.MemoryPeakMB == nil || b.MemoryPeakMB == nil {
		s.t.Logf("memory peaks not recorded in this mode (%v, %v)", a.MemoryPeakMB, b.MemoryPeakMB)
		return
	}
	if *a.MemoryPeakMB < 96 || *b.MemoryPeakMB >= 64 {
		s.t.Fatalf("memory peaks: first %.1f MiB (want ≥ 96), second %.1f MiB (want < 64)", *a.MemoryPeakMB, *b.MemoryPeakMB)
	}
}

// extraFDs names the descriptors in a probe's "FDS ..." line that the
// baseline's line lacks. A run served cold may hold fewer than a warm
// baseline (no runner status socket), never more.
func extraFDs(got, baseline string) string {
	have := map[string]bool{}
	for _, f := range fdRe.FindAllString(baseline, -1) {
		have[f] = true
	}
	var extra []string
	for _, f := range fdRe.FindAllString(got, -1) {
		if !have[f] {
			extra = append(extra, f)
		}
	}
	return strings.Join(extra, " ")
}

var fdRe = regexp.MustCompile(`\d+`)

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
