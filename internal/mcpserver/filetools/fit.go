package filetools

import (
	"unicode/utf8"

	"github.com/codexec/codexec/internal/mcpserver/budget"
)

// MessageBudget is the most bytes file content may take, encoded, in one
// message (see package budget).
const MessageBudget = budget.MessageBytes

// blobBudget is the most raw bytes a base64 blob or image may have within
// MessageBudget (base64 turns 3 bytes into 4).
const blobBudget = MessageBudget / 4 * 3

// fitMessage returns the longest prefix of data (a file range) whose
// content, as fileContent renders it (text or base64), fits MessageBudget:
// all of data when it fits. A range cut here continues at the result's
// next_offset.
func fitMessage(data []byte) []byte {
	if isText(data) {
		return data[:textFit(data, MessageBudget)]
	}
	if len(data) <= blobBudget {
		return data
	}
	data = data[:blobBudget]
	if isText(data) { // the bytes that made it binary were past the cut
		return data[:textFit(data, MessageBudget)]
	}
	return data
}

// textFit is how many bytes of the text data (valid UTF-8) fit budget once
// escaped as a JSON string, cut at a rune boundary.
func textFit(data []byte, budget int) int {
	n := 0
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if n += jsonRuneLen(r, size); n > budget {
			return i
		}
		i += size
	}
	return len(data)
}

// jsonRuneLen is the length of rune r (size bytes of UTF-8) in a JSON
// string as the worst encoder writes it: quotes and backslashes escaped,
// control characters and (HTML-safe encoders) <, >, & and the line and
// paragraph separators as \uXXXX.
func jsonRuneLen(r rune, size int) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
		return 6
	}
	return size
}
