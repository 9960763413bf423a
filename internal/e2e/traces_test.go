package e2e

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/codexec/codexec/internal/pgtest"
)

// tracedResult is a run's result with the trace id it carries.
type tracedResult struct {
	execResult
	TraceID string     `json:"trace_id"`
	Usage   *usageWire `json:"usage"`
}

// clientTrace is the trace context a client sends in _meta.
const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
)

// runSpans are the children of a one-shot run's request span.
var runSpans = []string{"workspace.acquire", "program.build", "sandbox.start", "sandbox.run", "sandbox.teardown", "artifacts", "execlog.write"}

// TestTracesOneShotRun: with an OTLP endpoint set, a one-shot run is one
// server span named for the MCP convention, a child of the client's
// traceparent, with the run's steps as children (and keeping its
// artifact in the store); its trace id is in the result and the log entry;
// nothing the code printed or contained, nor the file it wrote, is in any
// span.
func TestTracesOneShotRun(t *testing.T) {
	rcv := newOTLPReceiver(t)
	s := start(t, rcv.env()...)
	secret := "sk-live-51H8xQe2e7TRACEsecretZZ"
	code := fmt.Sprintf("token = %q\nprint('token is', token)\nopen('report-7f3e.txt', 'w').write(token)", secret)
	meta := mcp.Meta{"traceparent": "00-" + clientTraceID + "-" + clientSpanID + "-01", "tracestate": "vendor=e2e"}
	var r tracedResult
	decodeStructured(t, s.callMeta("execute_code", map[string]any{"language": "python", "code": code}, meta), &r)
	if r.Status != "success" || !strings.Contains(r.Stdout, secret) {
		t.Fatalf("run failed: %+v", r)
	}
	if r.TraceID != clientTraceID {
		t.Fatalf("result trace_id = %q, want the client's %s", r.TraceID, clientTraceID)
	}
	name := "tools/call execute_code"
	spans := rcv.trace(t, clientTraceID, append([]string{name, "store.keep"}, runSpans...)...)
	root := byName(spans, name)
	if got := hex.EncodeToString(root.ParentSpanId); got != clientSpanID {
		t.Errorf("request span's parent = %s, want the client's span %s", got, clientSpanID)
	}
	if root.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("request span kind = %v, want server", root.Kind)
	}
	for k, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "execute_code", "gen_ai.operation.name": "execute_tool"} {
		if got := attrString(root.Attributes, k); got != want {
			t.Errorf("attribute %s = %q, want %q", k, got, want)
		}
	}
	if rcv.service[root] != "codexec-e2e" {
		t.Errorf("service.name = %q, want OTEL_SERVICE_NAME's codexec-e2e", rcv.service[root])
	}
	kids := childrenOf(spans, root)
	for _, want := range runSpans {
		if !slices.Contains(kids, want) {
			t.Errorf("request span's children %v lack %s", kids, want)
		}
	}
	values := everyValue(rcv.all())
	if keep := byName(spans, "store.keep"); !descends(spans, keep, root) {
		t.Errorf("keeping the run's artifact (store.keep) is not under the request span")
	}
	// The start span names the path taken, as the result does, not the one asked for.
	if got := attrString(byName(spans, "sandbox.start").Attributes, "codexec.sandbox.path"); r.Usage == nil || got != r.Usage.Sandbox || got == "" {
		t.Errorf("sandbox.start's codexec.sandbox.path = %q, want the result's sandbox path (usage %v)", got, r.Usage)
	}
	for _, leak := range []string{secret, "token is", "print(", "report-7f3e"} {
		if strings.Contains(values, leak) {
			t.Errorf("an exported span carries %q:\n%s", leak, values)
		}
	}
	if n := logMentions(t, s.DataDir, clientTraceID); n == 0 {
		t.Errorf("no execution log entry carries trace_id %s", clientTraceID)
	}
}

// logMentions counts the lines of the execution logs under dir that carry
// traceID as their trace_id.
func logMentions(t *testing.T, dir, traceID string) int {
	t.Helper()
	n := 0
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return nil
		}
		b, _ := os.ReadFile(p)
		n += strings.Count(string(b), `"trace_id":"`+traceID+`"`)
		return nil
	})
	return n
}

// TestTracesOffByDefault: without an endpoint a result has no trace_id.
func TestTracesOffByDefault(t *testing.T) {
	sameInEveryMode(t, "whether tracing is on is decided at start, before any run")
	s := start(t)
	meta := mcp.Meta{"traceparent": "00-" + clientTraceID + "-" + clientSpanID + "-01"}
	res := s.callMeta("execute_code", map[string]any{"language": "bash", "code": "echo hi"}, meta)
	var r tracedResult
	decodeStructured(t, res, &r)
	if r.Status != "success" || r.TraceID != "" {
		t.Fatalf("status %s trace_id %q: want success and no trace_id while tracing is off", r.Status, r.TraceID)
	}
}

// TestTracesBadSettingRefusesStart: a protocol this build cannot export
// with stops the server at start with the fix.
func TestTracesBadSettingRefusesStart(t *testing.T) {
	sameInEveryMode(t, "configuration is checked before any run")
	cmd := exec.Command(binary(t), "serve")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CODEXEC_DATA_DIR=" + t.TempDir(), "CODEXEC_SANDBOX_MODE=subprocess",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}
	cmd.Stdin = strings.NewReader("")
	b, err := cmd.CombinedOutput()
	out := string(b)
	if err == nil || !strings.Contains(out, "OTLP/HTTP protobuf only") {
		t.Fatalf("err %v, output %q: want a configuration error naming the protocol", err, out)
	}
}

// TestTracesSessionSend: a send is one request span whose children are
// the run in the session, artifacts and the log write; the wait for the
// session is a child too when there was one (another send running in it).
func TestTracesSessionSend(t *testing.T) {
	rcv := newOTLPReceiver(t)
	s := start(t, rcv.env()...)
	id := s.startSession("python").SessionID
	var r tracedResult
	decodeStructured(t, s.call("send_to_session", map[string]any{"session_id": id, "code": "x = 41\nprint(x + 1)"}), &r)
	if r.Status != "success" || r.TraceID == "" {
		t.Fatalf("send: status %s trace_id %q", r.Status, r.TraceID)
	}
	want := []string{"session.run", "artifacts", "execlog.write"}
	spans := rcv.trace(t, r.TraceID, append([]string{"tools/call send_to_session"}, want...)...)
	kids := childrenOf(spans, byName(spans, "tools/call send_to_session"))
	for _, w := range want {
		if !slices.Contains(kids, w) {
			t.Errorf("send span's children %v lack %s", kids, w)
		}
	}
	if n := logMentions(t, s.DataDir, r.TraceID); n == 0 {
		t.Errorf("no session log entry carries trace_id %s", r.TraceID)
	}
	if w := byName(spans, "session.acquire"); w != nil {
		t.Errorf("a send that did not wait for its session recorded a wait of %d ns", w.EndTimeUnixNano-w.StartTimeUnixNano)
	}
	if res := s.call("send_to_session", map[string]any{"session_id": id, "code": "import time; time.sleep(0.5)", "background": true}); res.IsError {
		t.Fatalf("background send: %s", text(res))
	}
	var waited tracedResult
	decodeStructured(t, s.call("send_to_session", map[string]any{"session_id": id, "code": "x"}), &waited)
	spans = rcv.trace(t, waited.TraceID, "tools/call send_to_session", "session.acquire", "session.run")
	acq := byName(spans, "session.acquire")
	if !slices.Contains(childrenOf(spans, byName(spans, "tools/call send_to_session")), "session.acquire") {
		t.Errorf("the wait for a busy session is not a child of the send's span")
	}
	if d := time.Duration(acq.EndTimeUnixNano - acq.StartTimeUnixNano); d < 100*time.Millisecond {
		t.Errorf("session.acquire lasted %v behind a 0.5 s background send, want most of it", d)
	}
}

// TestTracesCodeModeUpstream: each upstream call of a code-mode run is a
// client span in the run's trace, under its request span.
func TestTracesCodeModeUpstream(t *testing.T) {
	rcv := newOTLPReceiver(t)
	f := startWithUpstreams(t, rcv.env()...)
	writeFiles(t, f.fsRoot)
	code := `const l = await filesystem.list_directory({ path: ROOT }); return String(l.content ?? l).split("\n").length;`
	var r struct {
		codeModeResult
		TraceID string `json:"trace_id"`
	}
	res := f.callInto("execute_code", map[string]any{"code": code, "context": map[string]any{"ROOT": f.fsRoot},
		"tools": []string{"filesystem.list_directory"}}, &r)
	mustOK(t, r.codeModeResult, res.IsError)
	if r.TraceID == "" {
		t.Fatal("code-mode result has no trace_id")
	}
	spans := rcv.trace(t, r.TraceID, "tools/call execute_code", "tools/call list_directory")
	call := byName(spans, "tools/call list_directory")
	if call.Kind != tracepb.Span_SPAN_KIND_CLIENT || attrString(call.Attributes, "codexec.upstream.server") != "filesystem" {
		t.Errorf("upstream span: kind %v server %q, want a client span to filesystem", call.Kind, attrString(call.Attributes, "codexec.upstream.server"))
	}
	if !descends(spans, call, byName(spans, "tools/call execute_code")) {
		t.Errorf("the upstream call's span is not under the request span")
	}
	if v := everyValue(rcv.all()); strings.Contains(v, f.fsRoot) {
		t.Errorf("an exported span carries the call's arguments (%s):\n%s", f.fsRoot, v)
	}
}

// TestTracesEgress: each connection of a run with network, one-shot or in
// a session, is an event on its request span: destination and whether it
// was allowed.
func TestTracesEgress(t *testing.T) {
	n := newEgressNet(t)
	rcv := newOTLPReceiver(t)
	s := start(t, n.env(rcv.env()...)...)
	requireEgress(t, s, n)
	code := fmt.Sprintf("import http.client\nfor h in (%q, %q):\n  try:\n    c = http.client.HTTPConnection(h, %s, timeout=20); c.request('GET', '/hello'); print(c.getresponse().read().decode())\n  except Exception as e:\n    print('refused', h)",
		plainHost, evilHost, n.plainPort)
	var r tracedResult
	decodeStructured(t, s.call("execute_code", map[string]any{"language": "python", "code": code, "timeout_ms": 60000,
		"network": allow(n.rule(plainHost))}), &r)
	if !strings.Contains(r.Stdout, "hello from "+plainHost) || r.TraceID == "" {
		t.Fatalf("run: status %s stdout %q stderr %q trace_id %q", r.Status, r.Stdout, r.Stderr, r.TraceID)
	}
	checkEgressEvents(t, rcv, r.TraceID, "tools/call execute_code", n)

	// A session's interpreter: its connections are events of the send
	// whose code made them.
	id := s.startSession("python").SessionID
	var sr tracedResult
	decodeStructured(t, s.call("send_to_session", map[string]any{"session_id": id, "code": code, "timeout_ms": 60000,
		"network": allow(n.rule(plainHost))}), &sr)
	if !strings.Contains(sr.Stdout, "hello from "+plainHost) || sr.TraceID == "" {
		t.Fatalf("send: status %s stdout %q stderr %q trace_id %q", sr.Status, sr.Stdout, sr.Stderr, sr.TraceID)
	}
	checkEgressEvents(t, rcv, sr.TraceID, "tools/call send_to_session", n)
}

// checkEgressEvents: the request span of trace has an allowed connection
// to plain and a refused one to evil as events.
func checkEgressEvents(t *testing.T, rcv *otlpReceiver, traceID, name string, n *egressNet) {
	t.Helper()
	spans := rcv.trace(t, traceID, name)
	got := map[string]bool{}
	for _, ev := range byName(spans, name).Events {
		if ev.Name == "egress.connection" {
			got[attrString(ev.Attributes, "server.address")] = strings.Contains(everyValue([]*tracepb.Span{{Attributes: ev.Attributes}}), "codexec.egress.allowed=bool_value:true")
		}
	}
	if allowed, ok := got[plainHost]; !ok || !allowed {
		t.Errorf("egress events %v: want an allowed connection to %s", got, plainHost)
	}
	if allowed, ok := got[evilHost]; !ok || allowed {
		t.Errorf("egress events %v: want a denied connection to %s", got, evilHost)
	}
}

// TestTracesForwardedCall: a call that reaches a replica that does not
// hold the session is forwarded, and the trace continues on the owner:
// the owner's request span is a child of the hop's span.
func TestTracesForwardedCall(t *testing.T) {
	sameInEveryMode(t, "replicas pin subprocess mode")
	dsn := pgtest.Start(t).NewDatabase(t)
	rcv := newOTLPReceiver(t)
	tokens := "CODEXEC_AUTH_TOKENS=" + tokenFile(t)
	a := startHTTP(t, "", replicaEnv(dsn, "r-a", append(rcv.env(tokens), "OTEL_SERVICE_NAME=codexec-a")...)...)
	b := startHTTP(t, "", replicaEnv(dsn, "r-b", append(rcv.env(tokens), "OTEL_SERVICE_NAME=codexec-b")...)...)
	aliceA, aliceB := a.mustConnect(aliceToken), b.mustConnect(aliceToken)
	sess := tout(t, aliceA, "start_session", map[string]any{"language": "python"})["session_id"].(string)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	meta := mcp.Meta{"traceparent": "00-" + clientTraceID + "-" + clientSpanID + "-01"}
	res, err := aliceB.CallTool(ctx, &mcp.CallToolParams{Name: "send_to_session", Meta: meta,
		Arguments: map[string]any{"session_id": sess, "code": "print(6 * 7)"}})
	if err != nil {
		t.Fatal(err)
	}
	var r tracedResult
	decodeStructured(t, res, &r)
	if r.Stdout != "42\n" || r.TraceID != clientTraceID {
		t.Fatalf("forwarded send: stdout %q trace_id %q, want 42 and the client's trace", r.Stdout, r.TraceID)
	}
	name := "tools/call send_to_session"
	var entry, owner *tracepb.Span
	spans := rcv.trace(t, clientTraceID, name, "forward", "session.run")
	for _, sp := range spans {
		if sp.Name == name && rcv.service[sp] == "codexec-b" {
			entry = sp
		}
		if sp.Name == name && rcv.service[sp] == "codexec-a" {
			owner = sp
		}
	}
	if entry == nil || owner == nil {
		t.Fatalf("want the request span on both replicas; got %v", spanNames(spans))
	}
	hop := byName(spans, "forward")
	if hex.EncodeToString(entry.ParentSpanId) != clientSpanID || string(hop.ParentSpanId) != string(entry.SpanId) {
		t.Errorf("entry replica: request span parent %x (want the client's), forward parent %x", entry.ParentSpanId, hop.ParentSpanId)
	}
	if string(owner.ParentSpanId) != string(hop.SpanId) {
		t.Errorf("owner's request span parent %x, want the forward span %x", owner.ParentSpanId, hop.SpanId)
	}
	if run := byName(spans, "session.run"); rcv.service[run] != "codexec-a" || !descends(spans, run, owner) {
		t.Errorf("session.run (on %s) is not under the owner's request span", rcv.service[run])
	}
	// The entry replica finds the owner in the shared PostgreSQL store: that
	// lookup is a statement span of the call's trace, without its text.
	spans = rcv.trace(t, clientTraceID, "SELECT")
	var lookups int
	for _, sp := range spans {
		if attrString(sp.Attributes, "db.system.name") == "postgresql" && rcv.service[sp] == "codexec-b" && descends(spans, sp, entry) {
			lookups++
		}
	}
	if lookups == 0 {
		t.Errorf("no PostgreSQL statement span under the entry replica's request span; spans %v", spanNames(spans))
	}
	if all := everyValue(spans); strings.Contains(all, sess) || strings.Contains(all, "FROM ") {
		t.Errorf("a span exports a statement or the session id it looked up")
	}
}
