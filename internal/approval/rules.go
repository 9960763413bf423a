package approval

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"

	"go.yaml.in/yaml/v3"
)

// Rules is the operator's rules file (CODEXEC_APPROVAL_RULES, YAML or
// JSON) for the risky mode. Each field left out keeps the safe default.
type Rules struct {
	// Commands are the programs execute_command and execute_process may
	// run without approval, in ALLOWED_COMMANDS' form (bare names or
	// absolute paths). A command line running any other program is risky;
	// absent or empty, every command is.
	Commands []string `yaml:"commands" json:"commands"`
	// InstallPackage says whether install_package is risky (default true).
	InstallPackage *bool `yaml:"install_package" json:"install_package"`
	// Network says whether a call that asks for network (network.allow) is
	// risky (default true).
	Network *bool `yaml:"network" json:"network"`
	// CodePatterns are regular expressions (Go syntax); code matching one
	// of them is risky.
	CodePatterns []string `yaml:"code_patterns" json:"code_patterns"`
	// Tools overrides the rules per tool: "always" (every call of it is
	// asked about) or "never" (none is).
	Tools map[string]string `yaml:"tools" json:"tools"`
}

// maxRulesFile bounds the rules file read at start.
const maxRulesFile = 1 << 20

// LoadRules reads and checks a rules file. The error names the file and
// what is wrong in it.
func LoadRules(path string) (Rules, error) {
	f, err := os.Open(path)
	if err != nil {
		return Rules{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRulesFile+1))
	if err != nil {
		return Rules{}, err
	}
	if len(data) > maxRulesFile {
		return Rules{}, fmt.Errorf("%s: larger than %d bytes", path, maxRulesFile)
	}
	r, err := ParseRules(data)
	if err != nil {
		return Rules{}, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// ParseRules decodes rules (YAML, of which JSON is a subset) and checks
// them: unknown fields, patterns that do not compile and unknown tool
// overrides are errors.
func ParseRules(data []byte) (Rules, error) {
	var r Rules
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&r); err != nil && !errors.Is(err, io.EOF) {
		return Rules{}, fmt.Errorf("not valid rules (fields: commands, install_package, network, code_patterns, tools): %w", err)
	}
	if _, err := compilePatterns(r.CodePatterns); err != nil {
		return Rules{}, err
	}
	for _, name := range sortedKeys(r.Tools) {
		if !Gated(name) {
			return Rules{}, fmt.Errorf("tools: %q is not a tool that runs code or programs (those are %v)", name, gatedNames())
		}
		if v := r.Tools[name]; v != "always" && v != "never" {
			return Rules{}, fmt.Errorf("tools: %s: want always or never, got %q", name, v)
		}
	}
	return r, nil
}

func compilePatterns(ps []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(ps))
	for i, p := range ps {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("code_patterns[%d] %q: %w", i, p, err)
		}
		out = append(out, re)
	}
	return out, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
