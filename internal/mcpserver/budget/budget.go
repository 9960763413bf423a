// Package budget states how large one MCP message codexec sends may be, so
// that every official SDK client reads it. The tightest is the TypeScript
// SDK's stdio client: its ReadBuffer holds at most 10 MiB
// (STDIO_DEFAULT_MAX_BUFFER_SIZE), the message being read plus the start of
// the next one, and past that it drops the connection. File ranges, inline
// images and code-mode results are sized to MessageBytes.
package budget

// ClientMaxMessage is the official TypeScript SDK client's stdio limit.
const ClientMaxMessage = 10 << 20

// MessageBytes is the most one result's content may take encoded, leaving
// the last MiB under ClientMaxMessage for the rest of the message and the
// start of the next one in the client's buffer.
const MessageBytes = 9 << 20
