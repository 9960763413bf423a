package e2e

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawInit POSTs an initialize with token and returns the status and the
// JSON-RPC error of the body (zero when it is not one).
func rawInit(t *testing.T, s *httpServer, token string) (int, rpcErr) {
	t.Helper()
	status, body, _ := do(t, "POST", s.URL+"/mcp", initBody, mcpHeaders(map[string]string{"Authorization": "Bearer " + token}))
	var r struct {
		ID    json.RawMessage
		Error *rpcErr
	}
	if json.Unmarshal([]byte(body), &r) != nil || r.Error == nil {
		return status, rpcErr{}
	}
	r.Error.ID = string(r.ID)
	return status, *r.Error
}

type rpcErr struct {
	ID      string
	Code    int
	Message string
}

// TestHTTPMCPSessionCapPerPrincipal: one principal holds at most
// CODEXEC_MAX_MCP_SESSIONS_PER_PRINCIPAL MCP sessions; one more initialize
// gets 429 with a JSON-RPC error naming the cap and its setting, also when
// the initializes race; another principal is not affected, the open
// sessions keep working, and closing one frees its slot.
func TestHTTPMCPSessionCapPerPrincipal(t *testing.T) {
	sameInEveryMode(t, "pins subprocess mode")
	const max = 3
	s := startHTTP(t, "", "CODEXEC_AUTH_TOKENS="+tokenFile(t), "CODEXEC_SANDBOX_MODE=subprocess",
		"CODEXEC_MAX_MCP_SESSIONS_PER_PRINCIPAL=3")

	// Concurrent initializes: exactly max are admitted.
	const racers = 8
	statuses := make([]int, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i], _ = rawInit(t, s, bobToken)
		}()
	}
	wg.Wait()
	count := map[int]int{}
	for _, st := range statuses {
		count[st]++
	}
	if diff := cmp.Diff(map[int]int{200: max, 429: racers - max}, count); diff != "" {
		t.Errorf("racing initializes by status (-want +got):\n%s", diff)
	}

	// Sequential: the SDK client opens max sessions, the next is refused.
	var open []*mcp.ClientSession
	for range max {
		open = append(open, s.mustConnect(aliceToken))
	}
	status, e := rawInit(t, s, aliceToken)
	if status != 429 || e.ID != "1" || e.Code != -32000 ||
		!strings.Contains(e.Message, `principal "alice" has 3 open`) || !strings.Contains(e.Message, "CODEXEC_MAX_MCP_SESSIONS_PER_PRINCIPAL=3") {
		t.Fatalf("initialize over the cap: status %d, error %+v", status, e)
	}
	if _, err := s.connect(aliceToken); err == nil {
		t.Fatal("the SDK client opened a session over the cap")
	}
	if r, err := callExec(t, open[0], "bash", "echo still here"); err != nil || r.Stdout != "still here\n" {
		t.Fatalf("an open session after the refusal: %+v %v", r, err)
	}

	// Closing one (DELETE) frees a slot.
	if err := open[0].Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		cs, err := s.connect(aliceToken)
		if err == nil {
			_ = cs.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no slot 10s after closing a session: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
