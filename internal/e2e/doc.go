// Package e2e holds end-to-end tests: they build the real codexec binary,
// start it as an MCP server over stdio and talk to it through the official
// go-sdk client, exactly as an agent's host would. The package has no
// non-test code besides this comment.
package e2e
