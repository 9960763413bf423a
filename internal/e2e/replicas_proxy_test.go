package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/pgtest"
	"github.com/codexec/codexec/internal/s3store/s3test"
)

// proxy is HAProxy in front of the replicas, from a copy of
// deploy/haproxy/haproxy.cfg with the addresses rewritten.
type proxy struct{ URL string }

var serverLineRE = regexp.MustCompile(`(?m)^\s*server replica\d+ .*\n`)

// startProxy runs haproxy (Debian's; the test skips without it) with the
// shipped configuration in front of backends.
func startProxy(t *testing.T, backends []*httpServer) *proxy {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("haproxy not installed (scripts/deps.sh installs Debian's): the multi-replica proxy test needs it")
	}
	cfg, err := os.ReadFile("../../deploy/haproxy/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	front := freeAddr(t)
	var servers strings.Builder
	for i, b := range backends {
		fmt.Fprintf(&servers, "    server replica%d %s\n", i+1, strings.TrimPrefix(b.URL, "http://"))
	}
	s := strings.Replace(string(cfg), "bind 127.0.0.1:18080", "bind "+front, 1)
	s = serverLineRE.ReplaceAllString(s, "")
	s = strings.TrimRight(s, "\n") + "\n" + servers.String()
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-db", "-f", path)
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("haproxy log:\n%s", tail(logs.String(), 4000))
		}
	})
	p := &proxy{URL: "http://" + front}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(p.URL + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
	}
	t.Fatalf("haproxy did not pass /readyz within 20s\n%s", logs.String())
	return nil
}

// connectTo connects a client at base (the proxy or one replica) at the
// client's newest protocol revision: the stateless protocol, no MCP session.
func connectTo(t *testing.T, base string) *mcp.ClientSession {
	return connectAtTo(t, base, "")
}

// connectAtTo is connectTo at protocol revision version ("" = the client's
// newest, the stateless protocol; legacyVersion opens an MCP session).
func connectAtTo(t *testing.T, base, version string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "codexec-e2e-replicas", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s: %v", base, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// storeQueries is the statements (round trips) the replicas sent to the
// shared store so far, summed over their codexec_store_queries_total.
func storeQueries(reps []*httpServer) float64 {
	n := 0.0
	for _, r := range reps {
		n += r.metric("codexec_store_queries_total")
	}
	return n
}

// TestReplicasBehindHAProxy: three replicas behind the shipped HAProxy
// configuration, on one PostgreSQL store and one S3 bucket. Clients through
// the proxy start sessions, save scripts, run, upload and download; every
// replica sees every script, log entry and artifact; a client that
// reconnects, in a new MCP session or statelessly, reaches its session from
// any replica; after kill -9 of one
// replica its sessions answer SESSION_LOST within the lease bound and the
// other sessions keep counting without a lost or repeated call. It logs
// the figures measured through the proxy.
func TestReplicasBehindHAProxy(t *testing.T) {
	sameInEveryMode(t, "replicas pin subprocess mode")
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed (scripts/deps.sh installs Debian's)")
	}
	dsn := pgtest.Start(t).NewDatabase(t)
	s3 := s3test.Start(t)
	var reps []*httpServer
	for i := range 3 {
		reps = append(reps, startHTTP(t, "", replicaEnv(dsn, fmt.Sprintf("r%d", i+1), s3Env(t, s3)...)...))
	}
	px := startProxy(t, reps)

	// Clients through the proxy: each a session, a script, a run, a file.
	const clients = 6
	type work struct {
		sess, script, execID, sha string
		size                      int
	}
	ws := make([]work, clients)
	for i := range ws {
		// In MCP sessions, which the proxy spreads by their open streams
		// (leastconn) and sticks to their replicas.
		cs := connectAtTo(t, px.URL, legacyVersion)
		w := &ws[i]
		w.sess = tout(t, cs, "start_session", map[string]any{"language": "python"})["session_id"].(string)
		tout(t, cs, "send_to_session", map[string]any{"session_id": w.sess, "code": "n = 0"})
		w.script = fmt.Sprintf("replica-script-%d", i)
		tout(t, cs, "save_script", map[string]any{"name": w.script, "language": "python", "code": fmt.Sprintf("print('script %d')", i), "description": "replica test"})
		data := randomBytes(t, 50_000+i)
		up := tout(t, cs, "upload_file", map[string]any{"path": "in/data.bin", "content_base64": base64.StdEncoding.EncodeToString(data)})
		r := tout(t, cs, "execute_code", map[string]any{"language": "python", "code": roundTripCode, "files": []string{up["upload_id"].(string)}})
		w.execID, w.sha, w.size = r["execution_id"].(string), sum(data), len(data)
		if strings.TrimSpace(r["stdout"].(string)) != w.sha {
			t.Fatalf("client %d run: %v", i, r)
		}
	}
	// Every replica, asked directly, sees every script, log entry and
	// artifact, and reaches every session (its own or forwarded).
	for ri, rep := range reps {
		cs := connectTo(t, rep.URL)
		for i, w := range ws {
			if out := tout(t, cs, "run_script", map[string]any{"name": w.script}); out["stdout"] != fmt.Sprintf("script %d\n", i) {
				t.Errorf("replica %d run_script %s: %v", ri+1, w.script, out["stdout"])
			}
			if lg := tout(t, cs, "get_execution_log", map[string]any{"execution_id": w.execID}); lg["stdout"] != w.sha+"\n" {
				t.Errorf("replica %d log %s: %v", ri+1, w.execID, lg["stdout"])
			}
			if dl := tout(t, cs, "download_file", map[string]any{"execution_id": w.execID, "path": "out/result.bin"}); int(dl["size"].(float64)) != w.size {
				t.Errorf("replica %d artifact of %s: %v", ri+1, w.execID, dl)
			}
			tout(t, cs, "send_to_session", map[string]any{"session_id": w.sess, "code": "n += 1"})
		}
	}
	// Reconnecting clients (new MCP sessions through the proxy, then
	// stateless clients, whose requests the proxy balances freely) reach
	// their sessions; the counter shows each call ran exactly once.
	want := map[string]int{}
	for _, w := range ws {
		want[w.sess] = len(reps)
	}
	for round, version := range []string{legacyVersion, ""} { // new MCP sessions, then stateless clients
		for _, w := range ws {
			cs := connectAtTo(t, px.URL, version)
			want[w.sess]++
			if out := tout(t, cs, "send_to_session", map[string]any{"session_id": w.sess, "code": "n += 1; print(n)"}); out["stdout"] != fmt.Sprintf("%d\n", want[w.sess]) {
				t.Errorf("round %d, session %s: stdout %v, want %d", round, w.sess, out["stdout"], want[w.sess])
			}
			_ = cs.Close()
		}
	}
	measure(t, px, reps, want)
	measureHop(t, reps, ws[0].sess)

	// kill -9 one replica: which sessions it held, any replica's listing
	// says (a client through the proxy lists every session of its
	// principal, with the replica holding it).
	victim := reps[1]
	held := map[string]bool{}
	lcs := connectTo(t, px.URL)
	listed := listSessions(t, lcs)
	for _, w := range ws {
		if s := listed[w.sess]; s.Status != "active" || !slices.Contains([]string{"r1", "r2", "r3"}, s.Replica) {
			t.Errorf("session %s listed through the proxy as %+v", w.sess, s)
		} else if s.Replica == "r2" {
			held[w.sess] = true
		}
	}
	_ = lcs.Close()
	killed := time.Now()
	_ = victim.Cmd.Process.Kill()
	survivors := []*httpServer{reps[0], reps[2]}
	lostBy := map[string]time.Duration{}
	for time.Since(killed) < 4*replicaLease+5*time.Second && len(lostBy) < len(held) {
		cs := connectTo(t, survivors[len(lostBy)%2].URL)
		for s := range held {
			if _, done := lostBy[s]; done {
				continue
			}
			res := tcall(t, cs, "send_to_session", map[string]any{"session_id": s, "code": "print(n)"})
			if errCode(res) == "SESSION_LOST" {
				lostBy[s] = time.Since(killed)
			} else if !res.IsError {
				t.Fatalf("a killed replica's session %s answered: %s", s, text(res))
			}
		}
		_ = cs.Close()
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("kill -9 of replica r2 (%d sessions): lost answers after %v (bound 4/3 × %v)", len(held), lostBy, replicaLease)
	for s := range held {
		if d, ok := lostBy[s]; !ok || d > replicaLease*4/3+2*time.Second {
			t.Errorf("session %s of the killed replica: lost after %v (ok %v)", s, d, ok)
		}
	}
	// Listed through the proxy, the killed replica's sessions are lost, the
	// others active.
	lcs = connectTo(t, px.URL)
	for id, s := range listSessions(t, lcs) {
		if want := map[bool]string{true: "lost", false: "active"}[held[id]]; s.Status != want || (held[id] && (s.Replica != "r2" || s.LostAt == nil)) {
			t.Errorf("after the kill, session %s is listed as %+v, want %s", id, s, want)
		}
	}
	_ = lcs.Close()
	// The other sessions keep counting through the proxy, each call once.
	for _, w := range ws {
		if held[w.sess] {
			continue
		}
		cs := connectTo(t, px.URL)
		want[w.sess]++
		if out := tout(t, cs, "send_to_session", map[string]any{"session_id": w.sess, "code": "n += 1; print(n)"}); out["stdout"] != fmt.Sprintf("%d\n", want[w.sess]) {
			t.Errorf("after the kill, session %s: %v, want %d", w.sess, out["stdout"], want[w.sess])
		}
		_ = cs.Close()
	}
	if len(held) == 0 || len(held) == len(ws) {
		t.Logf("note: the killed replica held %d of %d sessions", len(held), len(ws))
	}
}

// measure runs a bounded load through the proxy (concurrent clients, each
// on its own MCP session, calls to sessions on every replica) and logs
// calls/s, p50/p99 and store round trips per call.
func measure(t *testing.T, px *proxy, reps []*httpServer, counters map[string]int) {
	t.Helper()
	const workers, perWorker = 6, 25
	var sessions []string
	for s := range counters {
		sessions = append(sessions, s)
	}
	slices.Sort(sessions)
	type sample struct {
		d    time.Duration
		sess string
	}
	var mu sync.Mutex
	var samples []sample
	conns := make([]*mcp.ClientSession, workers)
	for i := range conns {
		conns[i] = connectTo(t, px.URL)
	}
	before := storeQueries(reps)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess := sessions[i%len(sessions)]
			for range perWorker {
				t0 := time.Now()
				res, err := conns[i].CallTool(context.Background(), &mcp.CallToolParams{Name: "send_to_session",
					Arguments: map[string]any{"session_id": sess, "code": "n += 0"}})
				if err != nil || res.IsError {
					t.Errorf("load call: %v %v", err, res)
					return
				}
				mu.Lock()
				samples = append(samples, sample{time.Since(t0), sess})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	queries := storeQueries(reps) - before
	ds := make([]time.Duration, len(samples))
	for i, s := range samples {
		ds[i] = s.d
	}
	slices.Sort(ds)
	if len(ds) == 0 {
		t.Fatal("no load samples")
	}
	pct := func(p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
	t.Logf("load through HAProxy, 3 replicas, %d workers × %d send_to_session calls (sessions spread over the replicas, some forwarded): %d calls in %v = %.1f calls/s (%.1f per replica); p50 %v, p99 %v; store: %.0f statements = %.2f round trips per call (heartbeats and lease sweeps of 3 replicas included)",
		workers, perWorker, len(ds), elapsed.Round(time.Millisecond), float64(len(ds))/elapsed.Seconds(), float64(len(ds))/elapsed.Seconds()/3,
		pct(0.5).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), queries, queries/float64(len(ds)))
}

// measureHop times one session's calls made directly at its owner and at
// another replica (one forwarding hop), sequentially, and logs both.
func measureHop(t *testing.T, reps []*httpServer, sess string) {
	t.Helper()
	cs := connectTo(t, reps[0].URL)
	holder := listSessions(t, cs)[sess].Replica
	_ = cs.Close()
	owner := slices.IndexFunc([]string{"r1", "r2", "r3"}, func(id string) bool { return id == holder })
	if owner < 0 {
		t.Fatalf("session %s is listed on replica %q", sess, holder)
	}
	const calls = 40
	p50 := func(base, tool string, args map[string]any) (time.Duration, time.Duration) {
		cs := connectTo(t, base)
		defer cs.Close()
		ds := make([]time.Duration, 0, calls)
		for range calls {
			t0 := time.Now()
			tout(t, cs, tool, args)
			ds = append(ds, time.Since(t0))
		}
		slices.Sort(ds)
		return ds[calls/2], ds[calls*99/100]
	}
	send := map[string]any{"session_id": sess, "code": "n += 0"}
	l50, l99 := p50(reps[owner].URL, "send_to_session", send)
	f50, f99 := p50(reps[(owner+1)%len(reps)].URL, "send_to_session", send)
	r := func(d time.Duration) time.Duration { return d.Round(time.Microsecond) }
	t.Logf("one session, %d sequential send_to_session calls straight to a replica: at its owner p50 %v p99 %v; through another replica (one hop) p50 %v p99 %v",
		calls, r(l50), r(l99), r(f50), r(f99))
	n50, n99 := p50(reps[owner].URL, "list_sessions", map[string]any{})
	t.Logf("%d sequential list_sessions calls at one replica (its own sessions, one registry query, in parallel one hop to each other replica holding one): p50 %v p99 %v",
		calls, r(n50), r(n99))
}
