package e2e

import (
	"encoding/base64"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cpuUse is machine-wide CPU time in ms, split as /proc/stat splits it:
// user (user + nice) and sys (system + irq + softirq).
type cpuUse struct{ user, sys float64 }

// machineCPU is the machine's CPU time used so far (/proc/stat's first
// line, USER_HZ 100, so 10 ms ticks; zero when it cannot be read).
func machineCPU() cpuUse {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuUse{}
	}
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
	tick := func(i int) float64 {
		if i >= len(f) {
			return 0
		}
		v, _ := strconv.ParseFloat(f[i], 64)
		return v * 10
	}
	return cpuUse{user: tick(1) + tick(2), sys: tick(3) + tick(6) + tick(7)}
}

func (c cpuUse) since(c0 cpuUse) cpuUse { return cpuUse{c.user - c0.user, c.sys - c0.sys} }
func (c cpuUse) add(d cpuUse) cpuUse    { return cpuUse{c.user + d.user, c.sys + d.sys} }
func (c cpuUse) total() float64         { return c.user + c.sys }

// per is c divided over n runs.
func (c cpuUse) per(n int) cpuUse { return cpuUse{c.user / float64(n), c.sys / float64(n)} }

// reportCPU logs a row of machine CPU ms per run of a subject against its
// baseline's, each split user/sys, and their ratio.
func reportCPU(tb testing.TB, row, what string, got, base cpuUse) {
	tb.Logf("%-4s %-10s %9.2f ms (user %.2f sys %.2f)   baseline %9.2f ms (user %.2f sys %.2f)   ratio %.3f   machine CPU per %s",
		row, "cpu", got.total(), got.user, got.sys, base.total(), base.user, base.sys, got.total()/base.total(), what)
}

// f1Bytes is the size of the file F1 moves each way; over stdio it goes up
// in chunks of f1Chunk, download_file's default range.
const (
	f1Bytes = 10 << 20
	f1Chunk = 4 << 20
)

// measureF1 is F1: a 10 MiB binary file uploaded into a session's
// workspace and downloaded back (upload_file + download_file) through the
// real binary, over stdio (base64 in JSON, 4 MiB a message), over stdio
// with transfer "url" (raw PUT and GET on the loopback transfer listener)
// and over HTTP with transfer "url", against `cp` of the same file on
// the host. The subjects take turns in a shuffled order each round so that
// load on the machine weighs on each alike; rows report p50 wall time and
// machine CPU per op (user/sys, /proc/stat over each subject's own ops) as
// ratios to cp's, and the server process's own CPU per op.
func measureF1(tb testing.TB, mode string, rounds int) {
	env := []string{"CODEXEC_MAX_UPLOAD_BYTES=16m", "CODEXEC_MAX_DOWNLOAD_BYTES=16m", "CODEXEC_HTTP_MAX_BODY=16m"}
	data := randomBytes(tb, f1Bytes)
	dir := tb.TempDir()
	src := filepath.Join(dir, "src.bin")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	stdio := start(tb, env...)
	sid := stdio.startSession("python").SessionID
	hs := startHTTP(tb, "", env...)
	cs := hs.mustConnect("")
	hid := tenantCallB(tb, cs, "start_session", map[string]any{"language": "python"})["session_id"].(string)
	subjects := map[string]func(){
		"cp":        func() { cpFile(tb, src, filepath.Join(dir, "dst.bin")) },
		"stdio":     func() { stdio.roundTripStdio(tb, sid, data) },
		"stdio-url": func() { roundTripURL(tb, stdio.Session, sid, data) },
		"url":       func() { roundTripURL(tb, cs, hid, data) },
	}
	pids := map[string]int{"stdio": stdio.Cmd.Process.Pid, "stdio-url": stdio.Cmd.Process.Pid, "url": hs.Cmd.Process.Pid}
	times, cpu, srv := map[string][]time.Duration{}, map[string]cpuUse{}, map[string]cpuUse{}
	names := []string{"cp", "stdio", "stdio-url", "url"}
	for range rounds {
		rand.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
		for _, n := range names {
			s0, c0, t0 := processCPU(pids[n]), machineCPU(), time.Now()
			subjects[n]()
			times[n] = append(times[n], time.Since(t0))
			cpu[n] = cpu[n].add(machineCPU().since(c0))
			srv[n] = srv[n].add(processCPU(pids[n]).since(s0))
		}
	}
	cp := ms(percentile(times["cp"], 50))
	for _, r := range []struct{ row, subject string }{{"F1", "stdio"}, {"F1s", "stdio-url"}, {"F1u", "url"}} {
		got, sc := ms(percentile(times[r.subject], 50)), srv[r.subject].per(rounds)
		tb.Logf("%-4s %-10s %9.2f ms   baseline %9.2f ms   ratio %.3f   10 MiB up + down, %s vs cp (%.0f MB/s; server CPU %.1f ms: user %.1f sys %.1f)",
			r.row, mode, got, cp, got/cp, r.subject, 2*f1Bytes/1e3/got, sc.total(), sc.user, sc.sys)
		reportCPU(tb, r.row+"c", "op", cpu[r.subject].per(rounds), cpu["cp"].per(rounds))
	}
}

// processCPU is the CPU time process pid has used so far (/proc/pid/stat
// utime and stime; zero for pid 0 or when it cannot be read).
func processCPU(pid int) cpuUse {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if pid == 0 || err != nil {
		return cpuUse{}
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // f[0] is field 3, state
	user, _ := strconv.ParseFloat(f[11], 64)
	sys, _ := strconv.ParseFloat(f[12], 64)
	return cpuUse{user: user * 10, sys: sys * 10}
}

// cpFile copies src to dst with cp(1).
func cpFile(tb testing.TB, src, dst string) {
	if out, err := exec.Command("cp", src, dst).CombinedOutput(); err != nil {
		tb.Fatalf("cp: %v %s", err, out)
	}
}

// roundTripStdio uploads data into session sid as big.bin in chunks of
// f1Chunk (upload_file with offset) and downloads it back in the ranges one
// message carries, and checks the bytes.
func (s *server) roundTripStdio(tb testing.TB, sid string, data []byte) {
	for off := 0; off < len(data); off += f1Chunk {
		args := map[string]any{"session_id": sid, "path": "big.bin", "offset": off, "overwrite": true,
			"content_base64": base64.StdEncoding.EncodeToString(data[off:min(off+f1Chunk, len(data))])}
		if _, res := s.upload(args); res.IsError {
			tb.Fatal(text(res))
		}
	}
	checkSame(tb, downloadRanges(tb, len(data), func(args map[string]any) *mcp.CallToolResult {
		args["session_id"] = sid
		return s.call("download_file", args)
	}), data)
}

// roundTripURL uploads data with one PUT to an upload_url and downloads it
// with one GET of a download_url, and checks the bytes.
func roundTripURL(tb testing.TB, cs *mcp.ClientSession, sid string, data []byte) {
	up := tenantCallB(tb, cs, "upload_file", map[string]any{"session_id": sid, "path": "big.bin", "transfer": "url", "overwrite": true})["upload_url"].(string)
	if st, body, _ := transferDo(tb, http.MethodPut, up, "", data, nil); st != http.StatusOK {
		tb.Fatalf("PUT: %d %s", st, body)
	}
	down := tenantCallB(tb, cs, "download_file", map[string]any{"session_id": sid, "path": "big.bin", "transfer": "url"})["download_url"].(string)
	st, got, _ := transferDo(tb, http.MethodGet, down, "", nil, nil)
	if st != http.StatusOK {
		tb.Fatalf("GET: %d", st)
	}
	checkSame(tb, got, data)
}
