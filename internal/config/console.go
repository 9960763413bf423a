package config

// Console values of CODEXEC_CONSOLE.
const (
	ConsoleOn  = "on"
	ConsoleOff = "off"
)

// Console holds the settings of the web console (/console on the HTTP
// listener, and codexec console).
type Console struct {
	// Mode is ConsoleOn or ConsoleOff.
	Mode string
	// Operators are principals that see every principal's history,
	// sessions, runs and files in the console.
	Operators []string
	// KeyFile holds the key login cookies are signed with, for replicas
	// behind one address that must accept each other's logins; empty: a
	// random key per process.
	KeyFile string
}

// Enabled reports whether the console is served.
func (c Console) Enabled() bool { return c.Mode != ConsoleOff }

func init() {
	settings = append(settings, consoleSettings...)
}

var consoleSettings = []setting{
	{"CODEXEC_CONSOLE", ConsoleOn, "the web console at /console on the HTTP listener (history, runs, sessions, overview; same tokens as /mcp): on | off", oneOf(func(c *Config) *string { return &c.Console.Mode }, ConsoleOn, ConsoleOff)},
	{"CODEXEC_CONSOLE_OPERATORS", "", "comma-separated principals that see every principal's history, sessions, runs and files in the console (others see only their own)", list(func(c *Config) *[]string { return &c.Console.Operators })},
	{"CODEXEC_CONSOLE_KEY_FILE", "", "file holding the key (32 bytes or more) that signs console logins, shared by replicas behind one address so that a login works on each; unset: a random key per process (logins end at restart)", str(func(c *Config) *string { return &c.Console.KeyFile })},
}
