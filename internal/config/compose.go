package config

import "fmt"

// compose reconciles pairs of settings where one caps another, so that
// setting only the cap (CODEXEC_MAX_TIMEOUT_MS=10000 with the default 30 s
// timeout, CODEXEC_MAX_OUTPUT_CHARS=2000 with the default 4000+4000
// truncation) starts a working server instead of refusing to: the capped
// value is lowered to fit and a warning saying so is added to c.Warnings,
// which the server logs at start-up.
func (c *Config) compose() {
	if c.DefaultTimeout > c.MaxTimeout {
		c.warn("CODEXEC_DEFAULT_TIMEOUT_MS (%d) exceeds CODEXEC_MAX_TIMEOUT_MS (%d): the default timeout is lowered to %d ms",
			c.DefaultTimeout.Milliseconds(), c.MaxTimeout.Milliseconds(), c.MaxTimeout.Milliseconds())
		c.DefaultTimeout = c.MaxTimeout
	}
	if c.CodeMode.Timeout > c.MaxTimeout {
		c.warn("CODEXEC_CODEMODE_TIMEOUT_MS (%d) exceeds CODEXEC_MAX_TIMEOUT_MS (%d): the code-mode timeout is lowered to %d ms",
			c.CodeMode.Timeout.Milliseconds(), c.MaxTimeout.Milliseconds(), c.MaxTimeout.Milliseconds())
		c.CodeMode.Timeout = c.MaxTimeout
	}
	if sum := c.TruncationHead + c.TruncationTail; sum > c.MaxOutputChars {
		head := c.MaxOutputChars * c.TruncationHead / sum
		tail := c.MaxOutputChars * c.TruncationTail / sum
		c.warn("CODEXEC_TRUNCATION_HEAD + CODEXEC_TRUNCATION_TAIL (%d+%d) exceed CODEXEC_MAX_OUTPUT_CHARS (%d): keeping %d+%d characters, in the same proportion",
			c.TruncationHead, c.TruncationTail, c.MaxOutputChars, head, tail)
		c.TruncationHead, c.TruncationTail = head, tail
	}
}

func (c *Config) warn(format string, args ...any) {
	c.Warnings = append(c.Warnings, fmt.Sprintf(format, args...))
}
