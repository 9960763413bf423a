package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestEgressClients: the clients agents use reach an allowed API through
// codexec's proxy, by name, and every run's result names what it
// reached. Python's http.client and node (fetch and https; node 20
// ignores proxy variables) never read the proxy variables: their
// connections are caught by the sandbox's DNS stub and captured ports.
func TestEgressClients(t *testing.T) {
	n := newEgressNet(t)
	s := start(t, n.env()...)
	requireEgress(t, s, n)
	both := allow(n.rule(apiHost), n.rule(plainHost))
	cases := []struct {
		name, lang, code, host string
	}{
		{"python urllib (proxy variables)", "python", fmt.Sprintf("import urllib.request\nprint(urllib.request.urlopen(%q, timeout=20).read().decode())", n.api("/hello")), apiHost},
		{"python http.client (transparent)", "python", fmt.Sprintf("import http.client\nc = http.client.HTTPConnection(%q, %s, timeout=20)\nc.request('GET', '/hello')\nprint(c.getresponse().read().decode())", plainHost, n.plainPort), plainHost},
		{"python requests", "python", fmt.Sprintf("try:\n  import requests\nexcept ImportError:\n  print('hello from %s (requests not installed)')\nelse:\n  print(requests.get(%q, timeout=20).text)", apiHost, n.api("/hello")), apiHost},
		{"node fetch (transparent)", "node", fmt.Sprintf("fetch(%q).then(r => r.text()).then(t => console.log(t), e => { console.error(e, e.cause); process.exit(1) })", n.api("/hello")), apiHost},
		{"node https (transparent)", "node", fmt.Sprintf("require('https').get(%q, r => { let b = ''; r.on('data', d => b += d); r.on('end', () => console.log(b)) }).on('error', e => { console.error(e); process.exit(1) })", n.api("/hello")), apiHost},
		{"bash curl", "bash", fmt.Sprintf("command -v curl >/dev/null || { echo 'hello from %s (no curl)'; exit 0; }\ncurl -sS --max-time 20 %s", apiHost, n.api("/hello")), apiHost},
		{"bash wget", "bash", fmt.Sprintf("command -v wget >/dev/null || { echo 'hello from %s (no wget)'; exit 0; }\nwget -q -O - --timeout=20 %s", plainHost, n.plain("/hello")), plainHost},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.lang == "python" && tc.host == apiHost {
				n.needPythonTLS(t)
			}
			r, _ := s.execNet(tc.lang, tc.code, both)
			if !strings.Contains(r.Stdout, "hello from "+tc.host) {
				t.Fatalf("status %s stdout %q stderr %q", r.Status, r.Stdout, r.Stderr)
			}
			if strings.Contains(r.Stdout, "not installed") || strings.Contains(r.Stdout, "(no ") {
				t.Skipf("client missing in the sandbox: %s", r.Stdout)
			}
			if ok, _, conns := r.audit(tc.host); !ok || conns < 1 {
				t.Errorf("audit %+v lacks an allowed connection to %s", r.Network, tc.host)
			}
		})
	}
}

// TestEgressBackgroundAndCodeMode: a background run and a code-mode run
// carry their call's network too.
func TestEgressBackgroundAndCodeMode(t *testing.T) {
	n := newEgressNet(t)
	s := start(t, n.env()...)
	requireEgress(t, s, n)
	code := fmt.Sprintf("import urllib.request\nprint(urllib.request.urlopen(%q, timeout=20).read().decode())", n.plain("/hello"))
	id := startBackground(t, s.Session, "execute_code", map[string]any{"language": "python", "code": code, "network": allow(n.rule(plainHost))})
	v := (&reader{id: id}).untilEnd(t, s.Session, time.Minute)
	var r netResult
	if err := json.Unmarshal(v.Result, &r); err != nil || !strings.Contains(r.Stdout, "hello from "+plainHost) {
		t.Errorf("background run: %s (%v)", v.Result, err)
	} else if ok, _, _ := r.audit(plainHost); !ok {
		t.Errorf("background run's audit %+v lacks %s", r.Network, plainHost)
	}
	ts := fmt.Sprintf("const r = await fetch(%q); return await r.text();", n.api("/hello"))
	var cm struct {
		Result  any `json:"result"`
		Network []struct {
			Host string `json:"host"`
		} `json:"network"`
	}
	res := s.callInto("execute_code", map[string]any{"code": ts, "network": allow(n.rule(apiHost))}, &cm)
	if got := fmt.Sprint(cm.Result); !strings.Contains(got, "hello from "+apiHost) || len(cm.Network) == 0 {
		t.Errorf("code mode: result %q network %+v (%s)", got, cm.Network, text(res))
	}
}

// TestEgressRefusals: no network without the argument; rules outside the
// ceiling refused before anything runs; denied hosts, names, redirects,
// private addresses and IP literals fail fast with a message and are
// audited; the history finds runs by the hosts they reached or were
// denied.
func TestEgressRefusals(t *testing.T) {
	n := newEgressNet(t)
	s := start(t, n.env("ALLOWED_COMMANDS=python3")...)
	requireEgress(t, s, n)
	apiOnly := allow(n.rule(apiHost))
	fetch := func(url string) string {
		return fmt.Sprintf("import urllib.request, urllib.error\ntry:\n  print(urllib.request.urlopen(%q, timeout=20).read().decode())\nexcept urllib.error.HTTPError as e:\n  print('refused', e.code, e.read().decode())\nexcept Exception as e:\n  print('failed', e)", url)
	}
	t.Run("no network argument, no network", func(t *testing.T) {
		r, _ := s.execNet("python", fetch(n.api("/hello")), nil)
		if strings.Contains(r.Stdout, "hello from") || len(r.Network) != 0 || r.NetworkMode != "" {
			t.Errorf("a run without network reached out: %+v", r)
		}
	})
	t.Run("argv programs have no network", func(t *testing.T) {
		res := s.call("execute_process", map[string]any{"file": "python3", "args": []string{"-c", fetch(n.plain("/hello"))}})
		if out := text(res); strings.Contains(out, "hello from") || !strings.Contains(out, "failed") {
			t.Errorf("execute_process reached the network: %s", out)
		}
	})
	t.Run("outside the ceiling", func(t *testing.T) {
		res := s.call("execute_code", map[string]any{"language": "python", "code": "print(1)", "network": allow(n.rule(apiHost), "other.example")})
		code, msg := toolError(t, res)
		if code != "INVALID_PARAMS" || !strings.Contains(msg, "other.example") {
			t.Errorf("got %s %q, want INVALID_PARAMS naming other.example", code, msg)
		}
	})
	t.Run("denied host fails fast", func(t *testing.T) {
		n.needPythonTLS(t)
		r, took := s.execNet("python", fetch(n.evil("/hello")), apiOnly)
		if strings.Contains(r.Stdout, "hello from") || took > 20*time.Second {
			t.Fatalf("evil reached or slow (%s): %q", took, r.Stdout)
		}
		if ok, reason, _ := r.audit(evilHost); ok || reason == "" {
			t.Errorf("audit %+v: want %s denied with a reason", r.Network, evilHost)
		}
	})
	t.Run("denied plain HTTP names the host", func(t *testing.T) {
		r, _ := s.execNet("python", fetch(n.plain("/hello")), apiOnly)
		if !strings.Contains(r.Stdout, "refused 403") || !strings.Contains(r.Stdout, plainHost) {
			t.Errorf("want a 403 naming %s, got %q %q", plainHost, r.Stdout, r.Stderr)
		}
	})
	t.Run("DNS answers allowed names only", func(t *testing.T) {
		code := fmt.Sprintf("import socket\nfor h in (%q, %q):\n  try:\n    socket.getaddrinfo(h, 443); print(h, 'resolves')\n  except socket.gaierror as e:\n    print(h, 'unknown', e)", apiHost, evilHost)
		r, _ := s.execNet("python", code, apiOnly)
		if !strings.Contains(r.Stdout, apiHost+" resolves") || !strings.Contains(r.Stdout, evilHost+" unknown") {
			t.Errorf("got %q %q", r.Stdout, r.Stderr)
		}
	})
	t.Run("redirect to a denied host", func(t *testing.T) {
		n.needPythonTLS(t)
		r, _ := s.execNet("python", fetch(n.api("/redirect")), apiOnly)
		if strings.Contains(r.Stdout, "hello from "+evilHost) {
			t.Fatalf("redirect reached evil: %q", r.Stdout)
		}
		if ok, _, _ := r.audit(apiHost); !ok {
			t.Errorf("audit %+v lacks the allowed first hop", r.Network)
		}
		if ok, reason, _ := r.audit(evilHost); ok || reason == "" {
			t.Errorf("audit %+v: want the redirect's host denied", r.Network)
		}
	})
	connect := func(target string) string {
		return fmt.Sprintf("import socket\ns = socket.create_connection(('127.0.0.1', 3128), timeout=20)\ns.sendall(b'CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n')\nprint(s.recv(4096).decode())", target, target)
	}
	t.Run("private address without a pin", func(t *testing.T) {
		r, _ := s.execNet("python", connect("localhost:"+n.tlsPort), allow("localhost:"+n.tlsPort))
		if !strings.Contains(r.Stdout, "403") {
			t.Errorf("CONNECT to localhost was not refused: %q %q", r.Stdout, r.Stderr)
		}
		if ok, reason, _ := r.audit("localhost"); ok || !strings.Contains(reason, "private") {
			t.Errorf("audit %+v: want localhost denied as a private address", r.Network)
		}
	})
	t.Run("IP literal", func(t *testing.T) {
		r, _ := s.execNet("python", connect("127.0.0.1:"+n.tlsPort), apiOnly)
		if !strings.Contains(r.Stdout, "403") {
			t.Errorf("CONNECT to an IP literal was not refused: %q %q", r.Stdout, r.Stderr)
		}
	})
	t.Run("SNI other than the CONNECT host", func(t *testing.T) {
		n.needPythonTLS(t)
		code := fmt.Sprintf(`import socket, ssl
s = socket.create_connection(('127.0.0.1', 3128), timeout=20)
s.sendall(b'CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n')
print(s.recv(4096).decode().split('\r\n')[0])
try:
    ssl.create_default_context().wrap_socket(s, server_hostname=%q)
    print('handshake done')
except (ssl.SSLError, OSError) as e:
    print('refused', e)`, n.rule(apiHost), n.rule(apiHost), evilHost)
		r, _ := s.execNet("python", code, allow(n.rule(apiHost)))
		if !strings.Contains(r.Stdout, "refused") {
			t.Errorf("a TLS handshake naming %s through a tunnel to %s went on: %q %q", evilHost, apiHost, r.Stdout, r.Stderr)
		}
		if ok, reason, _ := r.audit(apiHost); ok || !strings.Contains(reason, "sni") {
			t.Errorf("audit %+v: want the connection denied for its SNI", r.Network)
		}
	})
	t.Run("search by host", func(t *testing.T) {
		var out struct {
			Results []struct {
				ExecutionID string `json:"execution_id"`
			} `json:"results"`
		}
		s.callInto("search_execution_logs", map[string]any{"denied_host": plainHost}, &out)
		if len(out.Results) != 1 {
			t.Errorf("denied_host %s found %d runs, want the one refused it", plainHost, len(out.Results))
		}
		s.callInto("search_execution_logs", map[string]any{"host": plainHost}, &out)
		if len(out.Results) != 0 {
			t.Errorf("host %s (reached) found %v; no run reached it", plainHost, out.Results)
		}
	})
}

// sendNet runs code in session id (network, if set, replaces its policy) and decodes the result with its audit.
func (s *server) sendNet(id, code string, network map[string]any) netResult {
	s.t.Helper()
	args := map[string]any{"session_id": id, "code": code, "timeout_ms": 60000}
	if network != nil {
		args["network"] = network
	}
	var r netResult
	s.callInto("send_to_session", args, &r)
	return r
}

// TestEgressSessionPolicy: a session keeps its policy between calls; a
// call's network replaces it whole before its code runs (a connection
// opened before goes on, new ones follow the new policy); a fork keeps
// its parent's policy, never more; pip installs from an allowed index.
func TestEgressSessionPolicy(t *testing.T) {
	n := newEgressNet(t)
	s := start(t, n.env()...)
	requireEgress(t, s, n)
	n.needPythonTLS(t)
	var st struct {
		SessionID string `json:"session_id"`
	}
	res := s.callInto("start_session", map[string]any{"language": "python", "network": allow(n.rule(apiHost))}, &st)
	if res.IsError {
		t.Fatalf("start_session: %s", text(res))
	}
	get := func(url string) string {
		return fmt.Sprintf("try:\n  print(urllib.request.urlopen(%q, timeout=20).read().decode())\nexcept Exception as e:\n  print('failed', e)", url)
	}
	open := fmt.Sprintf("import http.client, ssl, urllib.request\nc = http.client.HTTPSConnection('127.0.0.1', 3128, timeout=20, context=ssl.create_default_context())\nc.set_tunnel(%q, %s)\nc.request('GET', '/hello'); print(c.getresponse().read().decode())", apiHost, n.tlsPort)
	if r := s.sendNet(st.SessionID, open, nil); !strings.Contains(r.Stdout, "hello from "+apiHost) {
		t.Fatalf("first call: %q %q", r.Stdout, r.Stderr)
	}
	r := s.sendNet(st.SessionID, "c.request('GET', '/hello'); print('open:', c.getresponse().read().decode())\n"+get(n.api("/hello"))+"\n"+get(n.plain("/hello")),
		allow(n.rule(plainHost)))
	if !strings.Contains(r.Stdout, "open: hello from "+apiHost) {
		t.Errorf("the connection opened before the replacement did not go on: %q %q", r.Stdout, r.Stderr)
	}
	if strings.Count(r.Stdout, "hello from "+apiHost) != 1 || !strings.Contains(r.Stdout, "hello from "+plainHost) {
		t.Errorf("after replacing the policy with plain only: %q %q", r.Stdout, r.Stderr)
	}
	t.Run("a context without network given one", func(t *testing.T) {
		var c struct {
			ContextID string `json:"context_id"`
		}
		if res := s.callInto("create_context", map[string]any{"name": "egress-ctx"}, &c); res.IsError {
			t.Fatalf("create_context: %s", text(res))
		}
		code := "import urllib.request\n" + get(n.api("/hello"))
		var before, after netResult
		s.callInto("run_code", map[string]any{"context_id": c.ContextID, "code": code}, &before)
		s.callInto("run_code", map[string]any{"context_id": c.ContextID, "code": code, "network": allow(n.rule(apiHost))}, &after)
		if strings.Contains(before.Stdout, "hello from") || !strings.Contains(after.Stdout, "hello from "+apiHost) {
			t.Errorf("before network: %q; after run_code gave it: %q %q", before.Stdout, after.Stdout, after.Stderr)
		}
		if ok, _, _ := after.audit(apiHost); !ok {
			t.Errorf("run_code's audit %+v lacks %s", after.Network, apiHost)
		}
	})
	t.Run("a node session given network later", func(t *testing.T) {
		var ns struct {
			SessionID string `json:"session_id"`
		}
		if res := s.callInto("start_session", map[string]any{"language": "node"}, &ns); res.IsError {
			t.Fatalf("start_session node: %s", text(res))
		}
		code := fmt.Sprintf("const r = await fetch(%q); console.log(await r.text())", n.api("/hello"))
		r := s.sendNet(ns.SessionID, code, allow(n.rule(apiHost)))
		if !strings.Contains(r.Stdout, "hello from "+apiHost) {
			t.Errorf("node session: %q %q", r.Stdout, r.Stderr)
		}
	})
	t.Run("pip install from an allowed index", func(t *testing.T) {
		code := fmt.Sprintf("import subprocess, sys\np = subprocess.run([sys.executable, '-m', 'pip', 'install', '--no-cache-dir', '--disable-pip-version-check', '--index-url', %q, '--target', '/tmp/pk', 'tinypkg'], capture_output=True, text=True)\nprint(p.returncode, p.stdout[-300:], p.stderr[-600:])\nsys.path.insert(0, '/tmp/pk')\nimport tinypkg; print('VALUE', tinypkg.VALUE)",
			n.api("/simple/"))
		r := s.sendNet(st.SessionID, code, allow(n.rule(apiHost)))
		if !strings.Contains(r.Stdout, "VALUE 42") {
			t.Errorf("pip install through the proxy: %q %q", r.Stdout, r.Stderr)
		}
	})
	t.Run("a paused session resumes with its policy", func(t *testing.T) {
		s.sendNet(st.SessionID, "x = 2", allow(n.rule(plainHost)))
		if res := s.call("pause_session", map[string]any{"session_id": st.SessionID}); res.IsError {
			t.Skipf("pause_session unavailable: %s", text(res))
		}
		r := s.sendNet(st.SessionID, "import urllib.request\n"+get(n.plain("/hello"))+"\n"+get(n.api("/hello")), nil)
		if !strings.Contains(r.Stdout, "hello from "+plainHost) || strings.Contains(r.Stdout, "hello from "+apiHost) {
			t.Errorf("resumed plain-only session: %q %q", r.Stdout, r.Stderr)
		}
	})
	t.Run("a fork keeps its parent's policy", func(t *testing.T) {
		s.sendNet(st.SessionID, "x = 1", allow(n.rule(plainHost)))
		var fo struct {
			Children []struct {
				SessionID string `json:"session_id"`
				Error     string `json:"error"`
			} `json:"children"`
		}
		res := s.call("fork_session", map[string]any{"session_id": st.SessionID})
		if res.IsError {
			t.Skipf("fork_session unavailable: %s", text(res))
		}
		decodeStructured(t, res, &fo)
		if len(fo.Children) != 1 || fo.Children[0].SessionID == "" {
			t.Fatalf("fork: %+v", fo)
		}
		r := s.sendNet(fo.Children[0].SessionID, "import urllib.request\n"+get(n.plain("/hello"))+"\n"+get(n.api("/hello")), nil)
		if !strings.Contains(r.Stdout, "hello from "+plainHost) || strings.Contains(r.Stdout, "hello from "+apiHost) {
			t.Errorf("fork of a plain-only session: %q %q", r.Stdout, r.Stderr)
		}
	})
}

// TestEgressCredentials: the proxy adds the credential to requests to its
// host only; the program holds a placeholder, never the value, and the
// value is in no result, log entry or search.
func TestEgressCredentials(t *testing.T) {
	n := newEgressNet(t)
	env := n.credentialEnv(t)
	if why := credentialsUnavailable(t, env); why != "" {
		t.Skip(why)
	}
	s := start(t, env...)
	requireEgress(t, s, n)
	n.needPythonTLS(t)
	code := fmt.Sprintf(`import os, urllib.request
tok = os.environ.get('API_TOKEN', '')
print('placeholder set:', tok.startswith('codexec-placeholder-'))
needle = bytes.fromhex('%x')  # the value, written so that the code itself does not hold it
leak = any(needle.decode() in v for v in os.environ.values()) or needle in open('/proc/self/environ', 'rb').read()
print('secret in env:', leak)
for url in (%q, %q):
    req = urllib.request.Request(url, headers={'Authorization': tok})
    print(urllib.request.urlopen(req, timeout=20).read().decode().strip())
`, strings.TrimPrefix(secretValue, "Bearer "), n.api("/hello"), n.evil("/hello"))
	r, _ := s.execNet("python", code, allow(n.rule(apiHost), n.rule(evilHost)))
	if !strings.Contains(r.Stdout, "placeholder set: True") || !strings.Contains(r.Stdout, "secret in env: False") || !strings.Contains(r.Stdout, "hello from "+evilHost) {
		t.Fatalf("program: %q %q", r.Stdout, r.Stderr)
	}
	for _, e := range r.Network {
		if e.Intercepted != (e.Host == apiHost) {
			t.Errorf("audit entry %+v: only the host with a credential is intercepted", e)
		}
	}
	if got := n.authSeen(apiHost); len(got) != 1 || got[0] != secretValue {
		t.Errorf("api received Authorization %q, want the credential", got)
	}
	for _, a := range n.authSeen(evilHost) {
		if strings.Contains(a, "s3cret") || !strings.HasPrefix(a, "codexec-placeholder-") {
			t.Errorf("evil (no credential) received Authorization %q, want the placeholder unreplaced", a)
		}
	}
	log := text(s.call("get_execution_log", map[string]any{"execution_id": r.ExecutionID}))
	search := text(s.call("search_execution_logs", map[string]any{"query": "s3cret"}))
	for what, v := range map[string]string{"result": r.Stdout + r.Stderr, "log": log, "search": search} {
		if strings.Contains(v, "s3cret") {
			t.Errorf("the credential's value is in the %s", what)
		}
	}
}

// TestEgressSubprocessHostNetwork: subprocess mode has the host's
// network; a run given network says so, and doctor says so.
func TestEgressSubprocessHostNetwork(t *testing.T) {
	sameInEveryMode(t, "pins subprocess mode")
	n := newEgressNet(t)
	s := start(t, n.env("CODEXEC_SANDBOX_MODE=subprocess")...)
	r, _ := s.execNet("python", "print('ran')", allow(n.rule(apiHost)))
	if r.NetworkMode != "host" || len(r.Network) != 0 {
		t.Errorf("subprocess run with network: network_mode %q network %+v, want host and no audit", r.NetworkMode, r.Network)
	}
	cmd := exec.Command(binary(t), "doctor")
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "CODEXEC_DATA_DIR=" + t.TempDir(), "CODEXEC_SANDBOX_MODE=subprocess"}, n.env()...)
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "HOST's network") || !strings.Contains(string(out), "egress: ceiling") {
		t.Errorf("doctor in subprocess mode does not say runs have the host network:\n%s", out)
	}
}

// TestEgressPrincipalCeilings: over HTTP, a principal's ceiling
// (CODEXEC_PRINCIPAL_EGRESS_ALLOW) is narrower than the server's: alice
// may ask for api only, bob (not listed) for anything in the server's.
func TestEgressPrincipalCeilings(t *testing.T) {
	pinsNamespaceMode(t, "pins namespace mode where the host has it (subprocess otherwise)")
	mode := "namespace"
	if modeAvailable(t, mode) != "" {
		mode = "subprocess" // the ceilings still hold; the counters part skips
	}
	n := newEgressNet(t)
	s := startHTTP(t, "", n.env("CODEXEC_AUTH_TOKENS="+tokenFile(t), "CODEXEC_PRINCIPAL_EGRESS_ALLOW=alice="+n.rule(apiHost), "CODEXEC_SANDBOX_MODE="+mode)...)
	alice, bob := s.mustConnect(aliceToken), s.mustConnect(bobToken)
	args := map[string]any{"language": "python", "code": "print('ran')", "network": allow(n.rule(plainHost))}
	res := tenantCall(t, alice, "execute_code", args)
	if code, msg := toolError(t, res); code != "INVALID_PARAMS" || !strings.Contains(msg, plainHost) {
		t.Errorf("alice asking for %s beyond her ceiling: %s %q", plainHost, code, msg)
	}
	if out := tenantOK(t, bob, "execute_code", args); out["stdout"] != "ran\n" {
		t.Errorf("bob within the server's ceiling: %v", out)
	}
	if out := tenantOK(t, alice, "execute_code", map[string]any{"language": "python", "code": "print('ran')", "network": allow(n.rule(apiHost))}); out["stdout"] != "ran\n" {
		t.Errorf("alice within her ceiling: %v", out)
	}
	// The connection counters (no host names) move with bob's runs.
	fetch := fmt.Sprintf("import urllib.request\nfor u in (%q, %q):\n  try: print(urllib.request.urlopen(u, timeout=20).read().decode())\n  except Exception as e: print('failed', e)", n.plain("/hello"), n.api("/hello"))
	out := tenantOK(t, bob, "execute_code", map[string]any{"language": "python", "code": fetch, "network": allow(n.rule(plainHost))})
	if !strings.Contains(fmt.Sprint(out["stdout"]), "hello from "+plainHost) {
		t.Skipf("this server's sandbox does not capture a run's network: %v", out["stdout"])
	}
	allowed, denied := s.metric(`codexec_egress_connections_total{decision="allowed"}`), s.metric(`codexec_egress_connections_total{decision="denied"}`)
	if allowed < 1 || denied < 1 {
		t.Errorf("egress counters allowed %v denied %v, want both ≥ 1", allowed, denied)
	}
	if _, body, _ := s.get("/metrics"); strings.Contains(body, plainHost) || strings.Contains(body, apiHost) {
		t.Errorf("a host name is in the metrics")
	}
}

// TestEgressBadSettingsRefuseStart: a malformed rule, a principal rule
// outside the server's ceiling, a bad pin or CA file stops the server at
// start, naming the setting and what is wrong.
func TestEgressBadSettingsRefuseStart(t *testing.T) {
	sameInEveryMode(t, "settings checked at start, before any run")
	notPEM := t.TempDir() + "/ca.pem"
	writeFile(t, notPEM, "not a certificate")
	badCreds := t.TempDir() + "/credentials.yaml"
	writeFile(t, badCreds, "credentials:\n  - host: api.test.example\n    value_env: HOME\n    placeholder: API_TOKEN\n")
	cases := []struct {
		env  []string
		want []string
	}{
		{[]string{"CODEXEC_EGRESS_ALLOW=api.test.example,https://x.example/"}, []string{"CODEXEC_EGRESS_ALLOW", "https://x.example/"}},
		{[]string{"CODEXEC_EGRESS_ALLOW=api.test.example", "CODEXEC_PRINCIPAL_EGRESS_ALLOW=alice=evil.test.example"}, []string{"CODEXEC_PRINCIPAL_EGRESS_ALLOW", "evil.test.example"}},
		{[]string{"CODEXEC_EGRESS_ALLOW=api.test.example", "CODEXEC_EGRESS_RESOLVE=api.test.example=nowhere"}, []string{"CODEXEC_EGRESS_RESOLVE", "nowhere"}},
		{[]string{"CODEXEC_EGRESS_ALLOW=api.test.example", "CODEXEC_EGRESS_CA_FILE=" + notPEM}, []string{"CODEXEC_EGRESS_CA_FILE", notPEM}},
		{[]string{"CODEXEC_EGRESS_ALLOW=api.test.example", "CODEXEC_EGRESS_CREDENTIALS=" + badCreds}, []string{"CODEXEC_EGRESS_CREDENTIALS", "header"}},
	}
	for _, tc := range cases {
		cmd := exec.Command(binary(t), "serve")
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CODEXEC_DATA_DIR=" + t.TempDir(), "CODEXEC_SANDBOX_MODE=subprocess"}, tc.env...)
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("%v: the server started", tc.env)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%v: output does not name %q:\n%s", tc.env, w, tail(string(out), 600))
			}
		}
	}
}

// TestEgressConnectionLimit: a run that keeps opening connections is
// bounded (egress.DefaultMaxConns in total): past it, connections are
// refused at once and the audit says why.
func TestEgressConnectionLimit(t *testing.T) {
	n := newEgressNet(t)
	s := start(t, n.env()...)
	requireEgress(t, s, n)
	code := fmt.Sprintf(`import socket, collections
seen = collections.Counter()
for i in range(4200):
    s = socket.create_connection(('127.0.0.1', 3128), timeout=20)
    s.sendall(b'CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n')
    seen[s.recv(64).split(b' ')[1].decode()] += 1
    s.close()
print(dict(seen))`, n.rule(apiHost), n.rule(apiHost))
	r, took := s.execNet("python", code, allow(n.rule(apiHost)))
	if !strings.Contains(r.Stdout, "'403'") || !strings.Contains(r.Stdout, "'200'") {
		t.Fatalf("after %s: %q %q", took, r.Stdout, r.Stderr)
	}
	limited := false
	for _, e := range r.Network {
		limited = limited || e.Reason == "limit"
	}
	if !limited {
		t.Errorf("audit %+v does not say the limit refused connections", r.Network)
	}
	t.Logf("4200 connections in %s: %s", took, strings.TrimSpace(r.Stdout))
}
