package config

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// kind is how one setting's text becomes a Config field and back: set
// parses and stores, get renders the field as it ended up (after derived
// defaults and compose), in a form set accepts. typ names the value's type
// in help.
type kind struct {
	typ string
	set func(c *Config, v string) error
	get func(c *Config) string
	// alias names an earlier setting writing the same field; the two share
	// the source of whichever one gave the value (see Resolve).
	alias string
	// fallback names another environment variable read when the
	// setting's own is unset (AWS_SECRET_ACCESS_KEY for
	// CODEXEC_S3_SECRET_KEY).
	fallback string
	// secret values are shown masked.
	secret bool
}

// Toolsets are the toolset names CODEXEC_TOOLSETS accepts besides "all",
// which means every one of them.
var Toolsets = []string{"exec", "sessions", "contexts", "scripts", "logs", "packages", "commands", "files", "codemode", "runs"}

func str(field func(*Config) *string) kind {
	return kind{typ: "string",
		set: func(c *Config, v string) error { *field(c) = strings.TrimSpace(v); return nil },
		get: func(c *Config) string { return *field(c) }}
}

func oneOf(field func(*Config) *string, allowed ...string) kind {
	set := func(c *Config, v string) error {
		v = strings.ToLower(strings.TrimSpace(v))
		for _, a := range allowed {
			if v == a {
				*field(c) = v
				return nil
			}
		}
		return fmt.Errorf("must be one of %s, got %q", strings.Join(allowed, ", "), v)
	}
	return kind{typ: strings.Join(allowed, "|"), set: set, get: func(c *Config) string { return *field(c) }}
}

func parseInt(v string, min int) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < min {
		return 0, fmt.Errorf("must be an integer ≥ %d, got %q", min, v)
	}
	return n, nil
}

func integer(field func(*Config) *int, min int) kind {
	return kind{typ: "int",
		set: func(c *Config, v string) (err error) { *field(c), err = parseInt(v, min); return err },
		get: func(c *Config) string { return strconv.Itoa(*field(c)) }}
}

func positive(field func(*Config) *int) kind { return integer(field, 1) }

func nonNegative(field func(*Config) *int) kind { return integer(field, 0) }

// maxMillis is the largest millisecond count a time.Duration holds (~292
// years); a larger one would overflow into a negative or tiny duration.
const maxMillis = math.MaxInt64 / int64(time.Millisecond)

func millis(field func(*Config) *time.Duration) kind {
	set := func(c *Config, v string) error {
		n, err := parseInt(v, 1)
		if err == nil && int64(n) > maxMillis {
			err = fmt.Errorf("must be between 1 and %d milliseconds, got %q", maxMillis, v)
		}
		*field(c) = time.Duration(n) * time.Millisecond
		return err
	}
	return kind{typ: "ms", set: set, get: func(c *Config) string { return strconv.FormatInt(field(c).Milliseconds(), 10) }}
}

// duration parses a Go duration ("90s", "1h"); a bare number is seconds.
func duration(field func(*Config) *time.Duration) kind {
	set := func(c *Config, v string) error {
		v = strings.TrimSpace(v)
		if n, err := strconv.Atoi(v); err == nil && n > 0 && int64(n) <= math.MaxInt64/int64(time.Second) {
			*field(c) = time.Duration(n) * time.Second
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("must be a duration like 1h or 90s, got %q", v)
		}
		*field(c) = d
		return nil
	}
	return kind{typ: "duration", set: set, get: func(c *Config) string { return formatDuration(*field(c)) }}
}

// formatDuration drops the zero units time.Duration.String keeps: 1h, not 1h0m0s.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func cpus(field func(*Config) *float64) kind {
	set := func(c *Config, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f <= 0 || f > 1024 {
			return fmt.Errorf("must be a number of cores > 0, got %q", v)
		}
		*field(c) = f
		return nil
	}
	return kind{typ: "cores", set: set, get: func(c *Config) string { return strconv.FormatFloat(*field(c), 'f', -1, 64) }}
}

func bytesize(field func(*Config) *int64) kind {
	set := func(c *Config, v string) error {
		n, err := ParseSize(v)
		*field(c) = n
		return err
	}
	return kind{typ: "size", set: set, get: func(c *Config) string { return FormatSize(*field(c)) }}
}

// optional applies k only when a value is present, so that, left unset, it
// keeps what the earlier setting alias (same field) stored.
func optional(alias string, k kind) kind {
	set := k.set
	k.set = func(c *Config, v string) error {
		if strings.TrimSpace(v) == "" {
			return nil
		}
		return set(c, v)
	}
	k.alias = alias
	return k
}

func list(field func(*Config) *[]string) kind {
	return kind{typ: "list",
		set: func(c *Config, v string) error { *field(c) = SplitList(v); return nil },
		get: func(c *Config) string { return strings.Join(*field(c), ",") }}
}

var commands = kind{typ: "list",
	set: func(c *Config, v string) error {
		c.AllowedCommandsSet = strings.TrimSpace(v) != ""
		c.AllowedCommands = SplitList(v)
		return nil
	},
	get: func(c *Config) string { return strings.Join(c.AllowedCommands, ",") }}

// toolsets parses CODEXEC_TOOLSETS: "all" (alone or in the list) means
// every toolset. Other names are checked by the server that registers them.
var toolsets = kind{typ: "list",
	set: func(c *Config, v string) error {
		c.Toolsets = nil
		for _, name := range SplitList(v) {
			if strings.EqualFold(name, "all") {
				c.Toolsets = append([]string(nil), Toolsets...)
				return nil
			}
			c.Toolsets = append(c.Toolsets, name)
		}
		return nil
	},
	get: func(c *Config) string { return strings.Join(c.Toolsets, ",") }}

// FormatSize renders a byte count in the largest unit ParseSize reads back
// exactly: 512m, 1g, 1536k, 100.
func FormatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// principalRoots parses "PRINCIPAL=DIR[,DIR…];…" into Config.PrincipalRoots.
var principalRoots = kind{typ: "list",
	set: func(c *Config, v string) error {
		m := map[string][]string{}
		for _, e := range strings.Split(v, ";") {
			if e = strings.TrimSpace(e); e == "" {
				continue
			}
			p, dirs, ok := strings.Cut(e, "=")
			p = strings.TrimSpace(p)
			if !ok || p == "" || len(SplitList(dirs)) == 0 {
				return fmt.Errorf("entry %q: want PRINCIPAL=DIR[,DIR…]", e)
			}
			for _, d := range SplitList(dirs) {
				if !filepath.IsAbs(d) {
					return fmt.Errorf("entry %q: %s is not an absolute path", e, d)
				}
			}
			m[p] = append(m[p], SplitList(dirs)...)
		}
		c.PrincipalRoots = m
		return nil
	},
	get: func(c *Config) string {
		var out []string
		for _, p := range slices.Sorted(maps.Keys(c.PrincipalRoots)) {
			out = append(out, p+"="+strings.Join(c.PrincipalRoots[p], ","))
		}
		return strings.Join(out, ";")
	}}
