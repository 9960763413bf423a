package tasks

import (
	"bytes"
	"encoding/json"
	"slices"
)

// Wire holds what the transports need to serve tasks: the Service that
// answers tasks/*, and which tools can run as tasks (tools/list says so).
type Wire struct {
	svc     *Service
	capable []string
}

// NewWire returns the Wire of svc for the tools named capable.
func NewWire(svc *Service, capable []string) *Wire {
	return &Wire{svc: svc, capable: capable}
}

// Service is the service answering tasks/*.
func (w *Wire) Service() *Service { return w.svc }

// taskKey is how `params.task` reads in a request's raw params: the cheap
// test that keeps every other tools/call off the decoding path.
var taskKey = []byte(`"task"`)

// callParams is a tools/call's params with a 2025-11-25 `params.task`
// moved to _meta[MarkerKey], where the server's middleware sees it; params
// without one come back as they are (ok false).
func callParams(params json.RawMessage) (json.RawMessage, bool) {
	if !bytes.Contains(params, taskKey) {
		return params, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(params, &m) != nil {
		return params, false
	}
	task, ok := m["task"]
	if !ok {
		return params, false
	}
	delete(m, "task")
	meta := map[string]json.RawMessage{}
	if raw, ok := m["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return params, false // a malformed _meta: the SDK says what is wrong with it
	}
	if bytes.Equal(bytes.TrimSpace(task), []byte("null")) {
		task = json.RawMessage(`{}`)
	}
	meta[MarkerKey] = task
	m["_meta"] = object(meta)
	return object(m), true
}

// SetField is the JSON object obj (null or empty: {}) with key set to
// value, its other members as they were.
func SetField(obj json.RawMessage, key string, value json.RawMessage) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if t := bytes.TrimSpace(obj); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		if err := json.Unmarshal(t, &m); err != nil {
			return nil, err
		}
	}
	m[key] = value
	return object(m), nil
}

// object encodes m, whose values are JSON already (decoded from a
// message): as they are, without the re-validation json.Marshal gives a
// RawMessage, which on a call's megabyte of code costs tens of
// milliseconds.
func object(m map[string]json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for k, v := range m {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(k)
		b.Write(key)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// initializeResult adds the 2025-11-25 tasks capability to an initialize
// result that negotiated that revision (later ones declare the extension
// instead, which the server's capabilities carry).
func initializeResult(result json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(result, &m) != nil {
		return result
	}
	var version string
	if json.Unmarshal(m["protocolVersion"], &version) != nil || version != legacyVersion {
		return result
	}
	caps := map[string]json.RawMessage{}
	if raw, ok := m["capabilities"]; ok && json.Unmarshal(raw, &caps) != nil {
		return result
	}
	caps["tasks"] = LegacyCapability
	m["capabilities"], _ = json.Marshal(caps)
	out, err := json.Marshal(m)
	if err != nil {
		return result
	}
	return out
}

// toolsListResult adds `execution` (taskSupport optional) to the
// task-capable tools of a tools/list result.
func (w *Wire) toolsListResult(result json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	var tools []map[string]json.RawMessage
	if json.Unmarshal(result, &m) != nil || json.Unmarshal(m["tools"], &tools) != nil {
		return result
	}
	for _, t := range tools {
		var name string
		if json.Unmarshal(t["name"], &name) == nil && slices.Contains(w.capable, name) {
			t["execution"] = Execution
		}
	}
	var err error
	if m["tools"], err = json.Marshal(tools); err != nil {
		return result
	}
	out, err := json.Marshal(m)
	if err != nil {
		return result
	}
	return out
}

// responseRewrite is how the response to a request of method must be
// rewritten for a client that negotiated version (the protocol revision
// the request runs under; "" unknown); nil: it passes as it is. Only
// 2025-11-25 has taskSupport in tools/list: other clients get today's
// bytes.
func (w *Wire) responseRewrite(method, version string) func(json.RawMessage) json.RawMessage {
	switch {
	case method == "initialize":
		return initializeResult
	case method == "tools/list" && version == legacyVersion:
		return w.toolsListResult
	}
	return nil
}

// negotiated is the protocol version an initialize result agreed on.
func negotiated(result json.RawMessage) string {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(result, &r)
	return r.ProtocolVersion
}
