package config

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Idle actions accepted by CODEXEC_SESSION_IDLE_ACTION.
const (
	IdlePause = "pause"
	IdleClose = "close"
)

// Checkpoint holds the settings of session checkpoints: pause_session,
// resume_session, fork_session, pausing idle sessions and sessions at
// shutdown, and automatic checkpoints.
type Checkpoint struct {
	// IdleAction is IdlePause or IdleClose: what
	// CODEXEC_SESSION_IDLE_TIMEOUT_MS does to an idle session.
	IdleAction string
	// MaxBytes bounds one session's checkpoint; MaxTotal all of them.
	MaxBytes, MaxTotal int64
	// TTL is how long a checkpoint is kept; a session paused longer is
	// closed.
	TTL time.Duration
	// Key is the AES-256-GCM key checkpoints are sealed with at rest (64
	// hex digits or base64 of 32 bytes); empty: not encrypted.
	Key string
	// Auto is the quiet period after a run before an automatic checkpoint
	// (0: none).
	Auto time.Duration
	// Spares is how many started interpreters per language wait for a
	// restore (0: none).
	Spares int
	// MaxFork bounds fork_session's count.
	MaxFork int
}

func init() {
	settings = append(settings, checkpointSettings...)
}

var checkpointSettings = []setting{
	{"CODEXEC_SESSION_IDLE_ACTION", IdlePause, "what an idle timeout does to a session: pause (checkpoint it, stop its process and free its memory; it resumes on its next call, so the work survives a break; costs disk within CODEXEC_CHECKPOINT_MAX_TOTAL, and falls back to close when the state cannot be checkpointed) | close (end it and lose its state)", oneOf(func(c *Config) *string { return &c.Checkpoint.IdleAction }, IdlePause, IdleClose)},
	{"CODEXEC_CHECKPOINT_MAX_BYTES", "64m", "largest checkpoint of one session (interpreter state and workspace files); a larger session cannot be paused or forked", bytesize(func(c *Config) *int64 { return &c.Checkpoint.MaxBytes })},
	{"CODEXEC_CHECKPOINT_MAX_TOTAL", "1g", "disk all checkpoints may use together; a pause beyond it is refused. Replicas sharing paused sessions (PostgreSQL and an S3 blob store) count every replica's checkpoints in the bucket against it; otherwise each server counts its own, on its own disk", bytesize(func(c *Config) *int64 { return &c.Checkpoint.MaxTotal })},
	{"CODEXEC_CHECKPOINT_TTL", "168h", "how long a checkpoint is kept; a session paused longer is closed", duration(func(c *Config) *time.Duration { return &c.Checkpoint.TTL })},
	{"CODEXEC_CHECKPOINT_KEY", "", "AES-256-GCM key checkpoints are encrypted with at rest: 64 hex digits or base64 of 32 bytes (e.g. openssl rand -hex 32); unset: not encrypted; shown masked", secret(str(func(c *Config) *string { return &c.Checkpoint.Key }))},
	{"CODEXEC_CHECKPOINT_AUTO", "10s", "quiet period after a run before a live session is checkpointed automatically, so that it resumes after a crash or kill -9 (0 = never; an unchanged session is not checkpointed twice, a slow one less often)", optionalDuration(func(c *Config) *time.Duration { return &c.Checkpoint.Auto })},
	{"CODEXEC_CHECKPOINT_SPARES", "1", "started interpreters per language kept waiting, once checkpoints are in use, so that a resume or fork child skips interpreter start-up; a fork of n keeps n until idle (0 = none)", nonNegative(func(c *Config) *int { return &c.Checkpoint.Spares })},
	{"CODEXEC_CHECKPOINT_MAX_FORK", "10", "largest count one fork_session makes", positive(func(c *Config) *int { return &c.Checkpoint.MaxFork })},
}

// optionalDuration is duration that also accepts 0 (or off): none.
func optionalDuration(field func(*Config) *time.Duration) kind {
	k := duration(field)
	set := k.set
	k.set = func(c *Config, v string) error {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "0", "off", "0s":
			*field(c) = 0
			return nil
		}
		return set(c, v)
	}
	get := k.get
	k.get = func(c *Config) string {
		if *field(c) == 0 {
			return "0"
		}
		return get(c)
	}
	return k
}

// CheckpointKey returns the 32-byte checkpoint key (nil when unset).
func (c Config) CheckpointKey() ([]byte, error) {
	s := strings.TrimSpace(c.Checkpoint.Key)
	if s == "" {
		return nil, nil
	}
	if b, err := hex.DecodeString(s); err == nil && len(b) == 32 {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == 32 {
			return b, nil
		}
	}
	return nil, errors.New("CODEXEC_CHECKPOINT_KEY must be 32 bytes written as 64 hex digits or base64 (e.g. openssl rand -hex 32)")
}

// validateCheckpoint checks the checkpoint settings.
func (c Config) validateCheckpoint() error {
	if _, err := c.CheckpointKey(); err != nil {
		return err
	}
	if c.Checkpoint.MaxBytes > c.Checkpoint.MaxTotal {
		return fmt.Errorf("CODEXEC_CHECKPOINT_MAX_BYTES (%s) must not exceed CODEXEC_CHECKPOINT_MAX_TOTAL (%s)",
			FormatSize(c.Checkpoint.MaxBytes), FormatSize(c.Checkpoint.MaxTotal))
	}
	return nil
}
