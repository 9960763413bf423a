package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// settings is the table of every variable, in the order they are documented.
// Directory defaults that depend on DataDir are left empty and derived later.
var settings = []setting{
	{"CODEXEC_DATA_DIR", "~/.codexec", "data root; sandbox/, logs/, scripts/, packages/ live below it", str(func(c *Config) *string { return &c.DataDir })},
	{"CODEXEC_SANDBOX_DIR", "", "working directories of executions (default DATA_DIR/sandbox)", str(func(c *Config) *string { return &c.SandboxDir })},
	{"CODEXEC_LOG_DIR", "", "JSONL execution logs (default DATA_DIR/logs)", str(func(c *Config) *string { return &c.LogDir })},
	{"CODEXEC_SCRIPTS_DIR", "", "saved script library (default DATA_DIR/scripts)", str(func(c *Config) *string { return &c.ScriptsDir })},
	{"CODEXEC_PACKAGES_DIR", "", "globally installed packages (default DATA_DIR/packages)", str(func(c *Config) *string { return &c.PackagesDir })},
	{"CODEXEC_STORE", StoreEmbedded, "where scripts, execution history and the session registry live: embedded (files and SQLite under the data directory, one server) | postgres://user:password@host:5432/db (PostgreSQL shared by replicas)", str(func(c *Config) *string { return &c.Store })},
	{"CODEXEC_SANDBOX_MODE", ModeAuto, "auto | subprocess | namespace | docker", oneOf(func(c *Config) *string { return &c.SandboxMode }, ModeAuto, ModeSubprocess, ModeNamespace, ModeDocker)},
	{"CODEXEC_DOCKER_IMAGE", "annabelle-sandbox", "container image for docker mode", str(func(c *Config) *string { return &c.DockerImage })},
	{"CODEXEC_DOCKER_CLI", "docker", "docker-compatible CLI for docker mode (docker, podman)", str(func(c *Config) *string { return &c.DockerCLI })},
	{"CODEXEC_DOCKER_NETWORK", "none", "container network mode (none = isolated)", str(func(c *Config) *string { return &c.DockerNetwork })},
	{"CODEXEC_DEFAULT_TIMEOUT_MS", "30000", "default execution timeout in milliseconds", millis(func(c *Config) *time.Duration { return &c.DefaultTimeout })},
	{"CODEXEC_MAX_TIMEOUT_MS", "300000", "largest timeout a caller may ask for, in milliseconds", millis(func(c *Config) *time.Duration { return &c.MaxTimeout })},
	{"CODEXEC_BACKGROUND_MAX_TIMEOUT_MS", "3600000", "largest timeout of a background run (background: true), in milliseconds; also its default", millis(func(c *Config) *time.Duration { return &c.Background.MaxTimeout })},
	{"CODEXEC_BACKGROUND_MAX_RUNS", "32", "background runs of one principal kept at once, running or ended; past it the oldest ended one is dropped from list_runs (get_run still reads it) or, all running, the start is refused", positive(func(c *Config) *int { return &c.Background.MaxRuns })},
	{"CODEXEC_BACKGROUND_MAX_OUTPUT", "1m", "bytes of each output stream of a background run kept for get_run; the rest is counted, not kept (the result still ends with its tail)", bytesize(func(c *Config) *int64 { return &c.Background.MaxOutput })},
	{"CODEXEC_SESSION_IDLE_TIMEOUT_MS", "900000", "idle time after which a session is closed, in milliseconds", millis(func(c *Config) *time.Duration { return &c.SessionIdleTimeout })},
	{"CODEXEC_KILL_GRACE_MS", "5000", "time between SIGTERM and SIGKILL when a run times out, in milliseconds", millis(func(c *Config) *time.Duration { return &c.KillGrace })},
	{"CODEXEC_MAX_SESSIONS", "5", "maximum concurrent sessions/contexts", positive(func(c *Config) *int { return &c.MaxSessions })},
	{"CODEXEC_MAX_SESSIONS_PER_PRINCIPAL", "0", "maximum sessions/contexts of one principal (0 = CODEXEC_MAX_SESSIONS)", nonNegative(func(c *Config) *int { return &c.MaxSessionsPerPrincipal })},
	{"CODEXEC_MAX_CONCURRENT", "8", "maximum concurrent executions of one principal (0 = unlimited)", nonNegative(func(c *Config) *int { return &c.MaxConcurrent })},
	{"CODEXEC_QUEUE_WAIT_MS", "10000", "how long an execution over CODEXEC_MAX_CONCURRENT queues before a busy error, in milliseconds", millis(func(c *Config) *time.Duration { return &c.QueueWait })},
	{"CODEXEC_DOCKER_MEMORY", "512m", "memory limit (docker mode; alias of CODEXEC_MEMORY_LIMIT)", bytesize(func(c *Config) *int64 { return &c.MemoryLimitBytes })},
	{"CODEXEC_DOCKER_CPU", "1.0", "CPU limit in cores (docker mode; alias of CODEXEC_CPU_LIMIT)", cpus(func(c *Config) *float64 { return &c.CPULimit })},
	{"CODEXEC_MEMORY_LIMIT", "", "memory limit per run/session in isolated modes (default 512m)", optional("CODEXEC_DOCKER_MEMORY", bytesize(func(c *Config) *int64 { return &c.MemoryLimitBytes }))},
	{"CODEXEC_CPU_LIMIT", "", "CPU limit in cores per run/session in isolated modes (default 1.0)", optional("CODEXEC_DOCKER_CPU", cpus(func(c *Config) *float64 { return &c.CPULimit }))},
	{"CODEXEC_PIDS_LIMIT", "256", "maximum processes per run/session in isolated modes", positive(func(c *Config) *int { return &c.PidsLimit })},
	{"CODEXEC_CGROUP_PARENT", "", "namespace mode: the cgroup below which codexec makes its run groups, for a codexec run as a user: on cgroup v2 a path below /sys/fs/cgroup (e.g. /user.slice/user-1000.slice/user@1000.service/codexec), on v1 a path below each of the memory, pids, cpu and freezer hierarchies (e.g. /codexec-alice), and of cpuacct where it is mounted apart from cpu if run CPU time is wanted; it must be delegated to codexec's user (unset = as root: /sys/fs/cgroup/codexec; as a user: on v2 a child of the user's systemd manager, user@UID.service)", str(func(c *Config) *string { return &c.CgroupParent })},
	{"CODEXEC_DISK_LIMIT", "256m", "bytes a run or session may write, workspace and /tmp together (namespace/docker; subprocess: max file size)", bytesize(func(c *Config) *int64 { return &c.DiskLimitBytes })},
	{"CODEXEC_POOL_SIZE", "2", "warm runners kept ready per language (python, node; bash outside docker mode) in every mode (0 = off)", nonNegative(func(c *Config) *int { return &c.PoolSize })},
	{"CODEXEC_POOL_BURST", "10", "most warm runners a language grows to while runs come faster than CODEXEC_POOL_SIZE runners are refilled; the extra ones stop after CODEXEC_POOL_IDLE_MS without such a burst", nonNegative(func(c *Config) *int { return &c.PoolBurst })},
	{"CODEXEC_POOL_IDLE_MS", "60000", "stop a language's warm runners after this long without a run, in milliseconds", millis(func(c *Config) *time.Duration { return &c.PoolIdle })},
	{"CODEXEC_POOL_MEMORY", "256m", "memory cap of all ready warm runners together", bytesize(func(c *Config) *int64 { return &c.PoolMemoryBytes })},
	{"CODEXEC_POOL_FORK", "on", "on: python runs are forked from a sandboxed python fork-server, each in fresh namespaces, where the kernel has Landlock ABI 6 (else as off); a fraction of the CPU of a new interpreter | off: each runner starts its own sandbox and interpreter", oneOf(func(c *Config) *string { return &c.PoolFork }, "on", "off")},
	{"CODEXEC_MAX_OUTPUT_CHARS", "10000", "truncate stdout/stderr beyond this many characters", positive(func(c *Config) *int { return &c.MaxOutputChars })},
	{"CODEXEC_TRUNCATION_HEAD", "4000", "characters kept from the start when truncating", nonNegative(func(c *Config) *int { return &c.TruncationHead })},
	{"CODEXEC_TRUNCATION_TAIL", "4000", "characters kept from the end when truncating", nonNegative(func(c *Config) *int { return &c.TruncationTail })},
	{"CODEXEC_LOG_RETENTION_DAYS_SUCCESS", "30", "days to keep successful execution logs", positive(func(c *Config) *int { return &c.RetentionDays.Success })},
	{"CODEXEC_LOG_RETENTION_DAYS_FAILURE", "90", "days to keep failed execution logs", positive(func(c *Config) *int { return &c.RetentionDays.Failure })},
	{"CODEXEC_LOG_RETENTION_DAYS_SESSION", "90", "days to keep session logs", positive(func(c *Config) *int { return &c.RetentionDays.Session })},
	{"LOG_LEVEL", "info", "server log level: debug | info | warn | error", oneOf(func(c *Config) *string { return &c.LogLevel }, "debug", "info", "warn", "error")},
	{"CODEXEC_SERVER_LOG_FILE", "", "write the server's own log here instead of stderr", str(func(c *Config) *string { return &c.ServerLogFile })},
	{"CODEXEC_PYTHON", "", "python interpreter path (default: discovered at start-up)", str(func(c *Config) *string { return &c.Interpreters.Python })},
	{"CODEXEC_NODE", "", "node interpreter path (default: discovered at start-up)", str(func(c *Config) *string { return &c.Interpreters.Node })},
	{"CODEXEC_BASH", "", "bash path (default: discovered at start-up)", str(func(c *Config) *string { return &c.Interpreters.Bash })},
	{"ALLOWED_COMMANDS", "", "commands execute_command/execute_process may run: comma-separated names or *", commands},
	{"ALLOWED_CWD_ROOTS", "", "comma-separated roots a cwd must lie within (unset = unrestricted)", list(func(c *Config) *[]string { return &c.AllowedCwdRoots })},
	{"CODEXEC_PRINCIPAL_ROOTS", "", "per principal, directories below which that caller's working_dir or cwd is used by code with the rights of the directory's owner: PRINCIPAL=DIR[,DIR…] entries separated by ';' (ALLOWED_CWD_ROOTS and CODEXEC_WRITABLE_ROOTS count for every principal; see SECURITY.md)", principalRoots},
	{"CODEXEC_WRITABLE_ROOTS", "", "comma-separated host directories below which a working_dir or cwd is writable by sandboxed code; elsewhere it is read-only (unset = none)", list(func(c *Config) *[]string { return &c.WritableRoots })},
	{"CODEXEC_TOOLSETS", "all", "comma-separated toolsets to expose: all, or some of " + strings.Join(Toolsets, ","), toolsets},
	{"CODEXEC_MAX_UPLOAD_BYTES", "32m", "largest file upload_file accepts", bytesize(func(c *Config) *int64 { return &c.MaxUploadBytes })},
	{"CODEXEC_MAX_DOWNLOAD_BYTES", "8m", "most bytes one download_file or resources/read returns (read larger files in ranges)", bytesize(func(c *Config) *int64 { return &c.MaxDownloadBytes })},
	{"CODEXEC_MAX_IMAGE_BYTES", "1m", "largest image returned inline; bigger ones are downscaled or linked", bytesize(func(c *Config) *int64 { return &c.MaxImageBytes })},
	{"CODEXEC_ARTIFACT_TTL", "1h", "how long one-shot artifacts and staged uploads are kept (e.g. 1h, 90s)", duration(func(c *Config) *time.Duration { return &c.ArtifactTTL })},
	{"CODEXEC_ARTIFACT_MAX_BYTES", "512m", "total size of kept artifacts and staged uploads; the oldest are evicted beyond it", bytesize(func(c *Config) *int64 { return &c.ArtifactMaxBytes })},
	{"CODEXEC_PIP_INDEX_URL", "", "package index for install_package (python); unset = pip's own configuration", str(func(c *Config) *string { return &c.PipIndexURL })},
	{"CODEXEC_NPM_REGISTRY", "", "registry for install_package (node); unset = npm's own configuration", str(func(c *Config) *string { return &c.NPMRegistry })},
	{"CODEXEC_HEALTH_CHECK", HealthBackground, "background: serve at once, check 1 s later (a failed run waits for its language's check) | startup: check before serving", oneOf(func(c *Config) *string { return &c.HealthCheck }, HealthBackground, HealthStartup)},
	{"CODEXEC_PACKAGE_BLOCKLIST", "", "replaces the shipped list of known-malicious packages: a file path or a comma-separated list (name, name@ver, name==ver; none = no list)", str(func(c *Config) *string { return &c.PackageBlocklist })},
	{"CODEXEC_PACKAGE_BLOCKLIST_EXTRA", "", "packages blocked in addition to the list in effect (same forms)", str(func(c *Config) *string { return &c.PackageBlocklistExtra })},
	{"CODEXEC_UPSTREAMS", "", "code mode: mcpServers JSON file of upstream MCP servers whose tools code may call", str(func(c *Config) *string { return &c.CodeMode.Upstreams })},
	{"CODEXEC_TOOL_POLICY", "", "code mode: allowed server.tool globs, comma-separated; !glob denies (deny wins)", str(func(c *Config) *string { return &c.CodeMode.ToolPolicy })},
	{"CODEXEC_CODEMODE_TOP_K", "5", "code mode: tools injected for an intent", positive(func(c *Config) *int { return &c.CodeMode.TopK })},
	{"CODEXEC_CODEMODE_MAX_CALLS", "100", "code mode: upstream tool calls allowed per execution", positive(func(c *Config) *int { return &c.CodeMode.MaxCalls })},
	{"CODEXEC_CODEMODE_CALL_TIMEOUT_MS", "60000", "code mode: timeout of one upstream tool call, in milliseconds", millis(func(c *Config) *time.Duration { return &c.CodeMode.CallTimeout })},
	{"CODEXEC_CODEMODE_MAX_RESULT", "8m", "code mode: largest result of one upstream tool call", bytesize(func(c *Config) *int64 { return &c.CodeMode.MaxResultBytes })},
	{"CODEXEC_CODEMODE_TIMEOUT_MS", "30000", "code mode: default execution timeout, in milliseconds", millis(func(c *Config) *time.Duration { return &c.CodeMode.Timeout })},
	{"CODEXEC_CODEMODE_MEMORY", "512m", "code mode: memory limit per execution in isolated modes", bytesize(func(c *Config) *int64 { return &c.CodeMode.MemoryBytes })},
}

// SplitList splits a comma-separated list, trimming blanks and dropping empty
// items. An empty string gives nil.
func SplitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ParseSize parses a docker-style size: a number with an optional unit
// b, k, m, g (powers of 1024; "kb", "mib" and friends accepted too).
func ParseSize(v string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	s = strings.TrimSuffix(strings.TrimSuffix(s, "ib"), "b")
	mult := int64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k':
			mult, s = 1<<10, s[:n-1]
		case 'm':
			mult, s = 1<<20, s[:n-1]
		case 'g':
			mult, s = 1<<30, s[:n-1]
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("must be a size like 512m or 1g, got %q", v)
	}
	return int64(f * float64(mult)), nil
}
