// Package config owns codexec's settings: every CODEXEC_* environment variable
// of the specification (plus the shell-tool variables ALLOWED_COMMANDS and
// ALLOWED_CWD_ROOTS and LOG_LEVEL), each also settable by a command-line flag.
//
// Config is parsed exactly once, in main, into a plain struct; no package below
// main reads the environment. A Config is an immutable value after Load returns
// and is safe to share between goroutines.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Sandbox modes accepted by CODEXEC_SANDBOX_MODE.
const (
	ModeAuto       = "auto"
	ModeSubprocess = "subprocess"
	ModeNamespace  = "namespace"
	ModeDocker     = "docker"
)

// Health check timing accepted by CODEXEC_HEALTH_CHECK.
const (
	HealthBackground = "background"
	HealthStartup    = "startup"
)

// Config is the whole server configuration. The zero value is not useful:
// obtain one from Load (or Defaults for tests).
type Config struct {
	// DataDir is the data root (default ~/.codexec); SandboxDir, LogDir and
	// ScriptsDir default to directories below it.
	DataDir    string
	SandboxDir string
	LogDir     string
	ScriptsDir string
	// PackagesDir holds globally installed packages (python/ and node/).
	PackagesDir string
	// Store is CODEXEC_STORE: StoreEmbedded or a PostgreSQL URL (StoreDSN).
	Store string

	// SandboxMode is one of ModeAuto, ModeSubprocess, ModeNamespace, ModeDocker.
	SandboxMode   string
	DockerImage   string
	DockerCLI     string
	DockerNetwork string

	DefaultTimeout     time.Duration
	MaxTimeout         time.Duration
	SessionIdleTimeout time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL on timeout.
	KillGrace   time.Duration
	MaxSessions int
	// Per-principal quotas: sessions (0 = MaxSessions), concurrent
	// executions (0 = unlimited) and how long one queues for a slot.
	MaxSessionsPerPrincipal int
	MaxConcurrent           int
	QueueWait               time.Duration

	// Resource limits for isolated modes (namespace and docker).
	MemoryLimitBytes int64
	CPULimit         float64
	PidsLimit        int
	DiskLimitBytes   int64
	// CgroupParent is the cgroup path below which the namespace backend
	// makes its groups (empty: the default; see package cgroup DetectIn).
	CgroupParent string

	// Warm runners (namespace mode): ready runners per kind, the most a
	// kind grows to in bursts, idle expiry, memory cap of all ready runners.
	PoolSize        int
	PoolBurst       int
	PoolIdle        time.Duration
	PoolMemoryBytes int64
	// PoolFork is "on" (python runners forked from a fork-server) or "off".
	PoolFork string

	MaxOutputChars  int
	TruncationHead  int
	TruncationTail  int
	RetentionDays   Retention
	LogLevel        string
	ServerLogFile   string
	Interpreters    Interpreters
	AllowedCommands []string
	// AllowedCommandsSet reports whether ALLOWED_COMMANDS was given at all.
	AllowedCommandsSet bool
	AllowedCwdRoots    []string
	// WritableRoots are the host directories below which a caller's
	// working_dir or cwd is mounted writable in isolated modes (none by
	// default: read-only).
	WritableRoots []string
	// PrincipalRoots lists, per principal, more directories below which
	// that caller's working_dir or cwd is used with its owner's rights
	// (CODEXEC_PRINCIPAL_ROOTS).
	PrincipalRoots map[string][]string
	Toolsets       []string

	PipIndexURL      string
	NPMRegistry      string
	PackageBlocklist string
	// PackageBlocklistExtra extends the blocklist in effect.
	PackageBlocklistExtra string

	// HealthCheck is HealthBackground or HealthStartup.
	HealthCheck string

	// Warnings are adjustments Load made so that settings compose (see
	// compose); the server logs them at start-up.
	Warnings []string

	// Remote configures the HTTP transport, auth and shutdown (remote.go).
	Remote Remote

	// Files toolset (upload/download, kept artifacts, images).
	MaxUploadBytes   int64
	MaxDownloadBytes int64
	MaxImageBytes    int64
	ArtifactTTL      time.Duration
	ArtifactMaxBytes int64
	// Blob is where staged uploads and kept artifacts live (blobstore.go).
	Blob BlobStore
	// Replica names this server among replicas sharing a store (replica.go).
	Replica Replica
	// Console configures the web console (console.go).
	Console Console
	// Checkpoint configures session checkpoints (checkpoint.go).
	Checkpoint Checkpoint

	CodeMode CodeMode

	// Background bounds background runs (package runs).
	Background Background

	// Egress is a run's network through codexec's proxy (egress.go).
	Egress Egress

	// Approval is the approval gate (approval.go).
	Approval Approval
}

// Background holds the settings of background runs.
type Background struct {
	// MaxTimeout caps (and is the default of) a background run's timeout.
	MaxTimeout time.Duration
	// MaxRuns is how many runs of one principal are kept at once.
	MaxRuns int
	// MaxOutput is how many bytes of each output stream of a run are kept.
	MaxOutput int64
}

// CodeMode holds the settings of code mode (execute_code with TypeScript and upstream tools).
type CodeMode struct {
	// Upstreams is the mcpServers file path; empty means no upstreams.
	Upstreams string
	// ToolPolicy is CODEXEC_TOOL_POLICY, parsed by the upstream package.
	ToolPolicy     string
	TopK           int
	MaxCalls       int
	CallTimeout    time.Duration
	MaxResultBytes int64
	Timeout        time.Duration
	MemoryBytes    int64
}

// Retention holds how long each kind of log is kept, in days.
type Retention struct {
	Success, Failure, Session int
}

// Interpreters holds operator overrides for interpreter paths; empty means
// "discover at start-up".
type Interpreters struct {
	Python, Node, Bash string
}

// setting describes one variable: its environment name, default, help text and
// how it is stored into a Config and read back (kind). The flag name is
// derived from the env name.
type setting struct {
	env  string
	def  string
	help string
	kind
}

// FlagName derives the command-line flag for an environment variable:
// CODEXEC_MAX_OUTPUT_CHARS → max-output-chars, ALLOWED_COMMANDS → allowed-commands.
func FlagName(env string) string {
	s := strings.TrimPrefix(env, "CODEXEC_")
	return strings.ReplaceAll(strings.ToLower(s), "_", "-")
}

// Load builds a Config from command-line args (without the program name) and
// the environment (getenv), in that order of precedence over the defaults.
// home is the user's home directory, used to expand "~". Errors name the
// offending variable. Flag parse errors are also written to usage (may be
// io.Discard); -h and --help return flag.ErrHelp.
func Load(args []string, getenv func(string) string, home string, usage io.Writer) (Config, error) {
	c, _, err := Resolve(args, getenv, home, usage)
	return c, err
}

// Source says where a setting's value came from.
type Source string

// The sources of a setting's value, in order of precedence.
const (
	SourceFlag    Source = "flag"
	SourceEnv     Source = "env"
	SourceDefault Source = "default"
)

// Effective is one setting as a loaded Config has it.
type Effective struct {
	Env string
	// Value is the value in effect, after derived defaults and the
	// adjustments in Config.Warnings, with credentials masked (MaskSecrets).
	Value  string
	Source Source
}

// Resolve is Load that also lists every setting, in documentation order,
// with its effective value and where that value came from. Two settings
// writing the same field (CODEXEC_DOCKER_MEMORY and CODEXEC_MEMORY_LIMIT)
// both report the source of the one that gave the value.
func Resolve(args []string, getenv func(string) string, home string, usage io.Writer) (Config, []Effective, error) {
	fs := flag.NewFlagSet("codexec", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.Usage = func() {} // main prints the help; a parse error should not bury itself in 150 lines
	vals := make(map[string]*string, len(settings))
	for _, s := range settings {
		vals[s.env] = fs.String(FlagName(s.env), "", s.help+" (env "+s.env+", default "+quoteDefault(s.def)+")")
	}
	fs.StringVar(vals["CODEXEC_HTTP_ADDR"], httpAlias, "", "serve MCP Streamable HTTP on host:port (alias of --http-addr)")
	if err := fs.Parse(args); err != nil {
		return Config{}, nil, err
	}
	if fs.NArg() > 0 {
		return Config{}, nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var c Config
	sources := make(map[string]Source, len(settings))
	for _, s := range settings {
		v, src := pick(s, *vals[s.env], getenv, home, fs)
		sources[s.env] = src
		if err := s.set(&c, v); err != nil {
			return Config{}, nil, fmt.Errorf("%s (flag --%s): %w", s.env, FlagName(s.env), err)
		}
	}
	c.fillDerived()
	c.compose()
	if err := c.validate(); err != nil {
		return Config{}, nil, err
	}
	return c, effective(&c, sources), nil
}

// effective lists every setting's value in c with its source.
func effective(c *Config, sources map[string]Source) []Effective {
	for _, s := range settings {
		if s.alias == "" {
			continue
		}
		if sources[s.env] == SourceDefault {
			sources[s.env] = sources[s.alias]
		} else {
			sources[s.alias] = sources[s.env]
		}
	}
	out := make([]Effective, 0, len(settings))
	for _, s := range settings {
		v := MaskSecrets(s.get(c))
		if s.secret && v != "" {
			v = masked
		}
		out = append(out, Effective{Env: s.env, Value: v, Source: sources[s.env]})
	}
	return out
}

func quoteDefault(d string) string {
	if d == "" {
		return "unset"
	}
	return d
}

// pick chooses flag > env > default for one setting, expands "~" and says
// which one it took.
func pick(s setting, flagVal string, getenv func(string) string, home string, fs *flag.FlagSet) (string, Source) {
	v, src := s.def, SourceDefault
	if e := getenv(s.env); e != "" {
		v, src = e, SourceEnv
	} else if s.fallback != "" && getenv(s.fallback) != "" {
		v, src = getenv(s.fallback), SourceEnv
	}
	visited := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { visited[f.Name] = true })
	if flagSet(visited, s.env) {
		v, src = flagVal, SourceFlag
	}
	return expandHome(v, home), src
}

func expandHome(v, home string) string {
	if v == "~" {
		return home
	}
	if strings.HasPrefix(v, "~/") {
		return filepath.Join(home, v[2:])
	}
	return v
}

// fillDerived fills directories left empty from DataDir.
func (c *Config) fillDerived() {
	if c.SandboxDir == "" {
		c.SandboxDir = filepath.Join(c.DataDir, "sandbox")
	}
	if c.LogDir == "" {
		c.LogDir = filepath.Join(c.DataDir, "logs")
	}
	if c.ScriptsDir == "" {
		c.ScriptsDir = filepath.Join(c.DataDir, "scripts")
	}
	if c.PackagesDir == "" {
		c.PackagesDir = filepath.Join(c.DataDir, "packages")
	}
}

func (c *Config) validate() error {
	var errs []error
	for _, d := range []struct{ name, v string }{{"CODEXEC_DATA_DIR", c.DataDir}, {"CODEXEC_SANDBOX_DIR", c.SandboxDir}, {"CODEXEC_LOG_DIR", c.LogDir}, {"CODEXEC_SCRIPTS_DIR", c.ScriptsDir}} {
		if !filepath.IsAbs(d.v) {
			errs = append(errs, fmt.Errorf("%s must be an absolute path (or start with ~/), got %q", d.name, d.v))
		}
	}
	errs = append(errs, validateCgroupParent(c.CgroupParent), c.Remote.validate(), validateStore(c.Store), c.Blob.validate(), c.validateReplica(), c.validateCheckpoint(), c.validateEgress(), c.validateApproval())
	return errors.Join(errs...)
}

// validateCgroupParent accepts an empty or absolute, clean cgroup path
// below a hierarchy's root.
func validateCgroupParent(p string) error {
	if p == "" {
		return nil
	}
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "/" || slices.Contains(strings.Split(p, "/"), "..") {
		return fmt.Errorf("CODEXEC_CGROUP_PARENT must be an absolute, clean cgroup path below the root of the hierarchy (such as /codexec-alice, which on cgroup v1 means /sys/fs/cgroup/<controller>/codexec-alice), got %q", p)
	}
	return nil
}

// Defaults returns the configuration with every default applied and the data
// root at dataDir. It is meant for tests and tools that need a Config without
// an environment.
func Defaults(dataDir string) Config {
	c, err := Load([]string{"--data-dir", dataDir}, func(string) string { return "" }, dataDir, io.Discard)
	if err != nil {
		panic("config defaults invalid: " + err.Error())
	}
	return c
}
