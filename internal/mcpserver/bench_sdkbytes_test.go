package mcpserver_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	mrand "math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/stdiowire"
)

// BenchmarkSDKFileBytes measures what moving file bytes through the go-sdk
// costs per MiB, against what the bytes cost at least, in one loop in a
// shuffled order so that load on the machine weighs on each alike. Client
// and server share the process, so each figure is both ends' work:
//
//   - base64: encode + decode (a stdio client can send bytes no other way)
//   - json: one encoding/json Marshal + Unmarshal of a tools/call message
//     carrying them, plus base64 (a minimal JSON-RPC hop)
//   - sdk-up: go-sdk client CallTool → go-sdk server over a newline pipe,
//     to a tool that decodes the base64 to nowhere
//   - wire-up: the same with stdiowire's Stream as the server's transport
//     (its line check and its connection), as `codexec serve` runs it
//   - sdk-down, wire-down: a tool returning the bytes as an embedded
//     resource blob, over the SDK's stdio connection and over stdiowire's
//
// It reports each subject's median ms and allocated bytes per MiB, the
// ratios to base64 and to json, and stdiowire's to the SDK's connection.
//
//	go test ./internal/mcpserver -run '^$' -bench SDKFileBytes -benchtime 20x
func BenchmarkSDKFileBytes(b *testing.B) {
	data := make([]byte, 4<<20)
	_, _ = rand.Read(data)
	mib := float64(len(data)) / (1 << 20)
	enc := base64.StdEncoding.EncodeToString(data)
	bare := sdkPair(b, false)
	wired := sdkPair(b, true)
	subjects := map[string]func(){
		"base64": func() {
			s := base64.StdEncoding.EncodeToString(data)
			if _, err := base64.StdEncoding.DecodeString(s); err != nil {
				b.Fatal(err)
			}
		},
		"json":      func() { jsonHop(b, data) },
		"sdk-up":    func() { bare.call(b, "up", map[string]any{"data": enc}) },
		"wire-up":   func() { wired.call(b, "up", map[string]any{"data": enc}) },
		"sdk-down":  func() { bare.down(b, len(data)) },
		"wire-down": func() { wired.down(b, len(data)) },
	}
	names := []string{"base64", "json", "sdk-up", "wire-up", "sdk-down", "wire-down"}
	times, allocs := map[string][]time.Duration{}, map[string]uint64{}
	var m0, m1 runtime.MemStats
	for b.Loop() {
		mrand.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
		for _, n := range names {
			runtime.ReadMemStats(&m0)
			t0 := time.Now()
			subjects[n]()
			times[n] = append(times[n], time.Since(t0))
			runtime.ReadMemStats(&m1)
			allocs[n] += m1.TotalAlloc - m0.TotalAlloc
		}
	}
	med := func(n string) float64 {
		ds := slices.Clone(times[n])
		slices.Sort(ds)
		return float64(ds[len(ds)/2]) / 1e6 / mib
	}
	for _, n := range []string{"base64", "json", "sdk-up", "wire-up", "sdk-down", "wire-down"} {
		b.ReportMetric(med(n), n+"-ms/MiB")
		b.ReportMetric(float64(allocs[n])/float64(len(times[n]))/mib, n+"-B/MiB")
	}
	for _, n := range []string{"sdk-up", "wire-up", "sdk-down", "wire-down"} {
		b.ReportMetric(med(n)/med("base64"), n+"/base64")
		b.ReportMetric(med(n)/med("json"), n+"/json")
	}
	b.ReportMetric(med("wire-up")/med("sdk-up"), "wire-up/sdk-up")
	b.ReportMetric(med("wire-down")/med("sdk-down"), "wire-down/sdk-down")
}

// jsonHop encodes a tools/call message carrying data as base64 and decodes
// it back, with encoding/json and nothing else.
func jsonHop(b *testing.B, data []byte) {
	type args struct {
		Path string `json:"path"`
		Data string `json:"content_base64"`
	}
	type params struct {
		Name      string `json:"name"`
		Arguments args   `json:"arguments"`
	}
	type msg struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int    `json:"id"`
		Method  string `json:"method"`
		Params  params `json:"params"`
	}
	line, err := json.Marshal(msg{"2.0", 1, "tools/call", params{"upload_file", args{"a.bin", base64.StdEncoding.EncodeToString(data)}}})
	if err != nil {
		b.Fatal(err)
	}
	var got msg
	if err := json.Unmarshal(line, &got); err != nil {
		b.Fatal(err)
	}
	if _, err := base64.StdEncoding.DecodeString(got.Params.Arguments.Data); err != nil {
		b.Fatal(err)
	}
}

// sdkSession is a go-sdk client connected to a go-sdk server with two
// tools: "up" decodes its base64 argument to nowhere, "down" returns n
// bytes as a blob.
type sdkSession struct{ cs *mcp.ClientSession }

func (s sdkSession) call(b *testing.B, name string, args map[string]any) *mcp.CallToolResult {
	res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil || res.IsError {
		b.Fatalf("%s: %v %+v", name, err, res)
	}
	return res
}

func (s sdkSession) down(b *testing.B, n int) {
	res := s.call(b, "down", map[string]any{"n": n})
	if got := len(res.Content[0].(*mcp.EmbeddedResource).Resource.Blob); got != n {
		b.Fatalf("down: %d bytes, want %d", got, n)
	}
}

// sdkPair starts the server and connects the client over pipes; wire puts
// stdiowire in front of the server, as `codexec serve` does.
func sdkPair(b *testing.B, wire bool) sdkSession {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bytes", Version: "1"}, nil)
	type upIn struct {
		Data string `json:"data"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "up"}, func(_ context.Context, _ *mcp.CallToolRequest, in upIn) (*mcp.CallToolResult, struct{}, error) {
		_, err := io.Copy(io.Discard, base64.NewDecoder(base64.StdEncoding, bytes.NewReader([]byte(in.Data))))
		return nil, struct{}{}, err
	})
	type downIn struct {
		N int `json:"n"`
	}
	blob := make([]byte, 8<<20)
	mcp.AddTool(srv, &mcp.Tool{Name: "down"}, func(_ context.Context, _ *mcp.CallToolRequest, in downIn) (*mcp.CallToolResult, struct{}, error) {
		c := &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b", MIMEType: "application/octet-stream", Blob: blob[:in.N]}}
		return &mcp.CallToolResult{Content: []mcp.Content{c}}, struct{}{}, nil
	})
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	var t mcp.Transport = &mcp.IOTransport{Reader: sr, Writer: sw, MaxLineLength: -1}
	if wire {
		t = stdiowire.New(sr, sw, stdiowire.Options{MaxLineBytes: 32 << 20}).Transport()
	}
	ctx, cancel := context.WithCancel(context.Background())
	ss, err := srv.Connect(ctx, t, nil)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
		&mcp.IOTransport{Reader: cr, Writer: cw, MaxLineLength: -1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close(); _ = ss.Close(); cancel(); _ = cw.Close(); _ = sw.Close() })
	return sdkSession{cs}
}

// BenchmarkSDKSmallCall is a small tools/call round trip (a 16-byte
// argument) over the SDK's stdio connection and over stdiowire's Stream,
// interleaved, reporting each one's median µs and their ratio: what the
// Stream's check and connection cost a call of the usual size.
//
//	go test ./internal/mcpserver -run '^$' -bench SDKSmallCall -benchtime 2000x
func BenchmarkSDKSmallCall(b *testing.B) {
	bare, wired := sdkPair(b, false), sdkPair(b, true)
	args := map[string]any{"data": base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))}
	var sdk, wire []time.Duration
	timed := func(s sdkSession) time.Duration {
		t0 := time.Now()
		s.call(b, "up", args)
		return time.Since(t0)
	}
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 { // each goes first half the time
			sdk = append(sdk, timed(bare))
			wire = append(wire, timed(wired))
		} else {
			wire = append(wire, timed(wired))
			sdk = append(sdk, timed(bare))
		}
	}
	med := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2]) / 1e3
	}
	s, w := med(sdk), med(wire)
	b.ReportMetric(s, "sdk-µs")
	b.ReportMetric(w, "wire-µs")
	b.ReportMetric(w/s, "wire/sdk")
}
