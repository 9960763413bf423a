package mcpserver_test

import (
	"encoding/json"
	"sync"
	"testing"
)

// TestTaskFlowInProcess runs tasks through the whole server in this
// process (so the race detector sees the tasks wire): a task is created,
// polled from several goroutines while its run ends, and read; plain calls
// run meanwhile on the same connection.
func TestTaskFlowInProcess(t *testing.T) {
	c := rawAppClient(t)
	var created struct {
		Task struct{ TaskID, Status string } `json:"task"`
	}
	c.decode(t, c.mustResult(t, "tools/call", `{"name":"execute_code","arguments":{"language":"bash","code":"echo in-process"},"task":{}}`), &created)
	if created.Task.Status != "working" || created.Task.TaskID == "" {
		t.Fatalf("created: %+v", created)
	}
	id := created.Task.TaskID
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			res, err := c.result("tasks/result", `{"taskId":"`+id+`"}`)
			var r struct {
				StructuredContent struct{ Stdout string } `json:"structuredContent"`
			}
			if err != nil || json.Unmarshal(res, &r) != nil || r.StructuredContent.Stdout != "in-process\n" {
				t.Errorf("tasks/result: %s %v", res, err)
			}
		})
	}
	wg.Go(func() {
		if _, err := c.result("tools/call", `{"name":"execute_code","arguments":{"language":"bash","code":"true"}}`); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	var got struct{ Status string }
	c.decode(t, c.mustResult(t, "tasks/get", `{"taskId":"`+id+`"}`), &got)
	if got.Status != "completed" {
		t.Errorf("tasks/get after the end: %+v", got)
	}
}
