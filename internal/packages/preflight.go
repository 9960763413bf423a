package packages

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Pre-flight support for run_script: a script lists the packages
// it needs; before running it, the caller runs CheckProgram through the
// engine (the sandbox, with the same environment as the script, so it sees
// exactly the global and session packages the script would) and turns the
// names ParseMissing returns into an error with InstallHint per name.

// CheckProgram returns code for language (Python or Node) that prints, as a
// JSON array on its last stdout line, the names in specs that the
// interpreter cannot find. Specs may carry versions ("pandas>=2"); only the
// name is checked. Every spec must pass ParseSpec, so the names embedded in
// the program are plain package names.
func CheckProgram(language string, specs []string) (string, error) {
	names := make([]string, 0, len(specs))
	for _, raw := range specs {
		s, err := ParseSpec(language, raw)
		if err != nil {
			return "", err
		}
		names = append(names, s.Name)
	}
	list, _ := json.Marshal(names)
	if language == Python {
		return fmt.Sprintf(`import json
from importlib import metadata
missing = []
for n in %s:
    try:
        metadata.version(n)
    except metadata.PackageNotFoundError:
        missing.append(n)
print(json.dumps(missing))
`, list), nil
	}
	return fmt.Sprintf(`const missing = [];
for (const n of %s) {
  try { require.resolve(n + '/package.json'); } catch (e) {
    try { require.resolve(n); } catch (e2) { missing.push(n); }
  }
}
console.log(JSON.stringify(missing));
`, list), nil
}

// ParseMissing reads CheckProgram's output.
func ParseMissing(stdout string) ([]string, error) {
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var missing []string
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &missing); err != nil {
		return nil, fmt.Errorf("package check printed %q: %w", stdout, err)
	}
	return missing, nil
}

// InstallHint is the install_package call that installs name, for error
// messages: install_package {"package":"pandas","language":"python"}.
func InstallHint(language, name, sessionID string) string {
	args := map[string]string{"package": name, "language": language}
	if sessionID != "" {
		args["session_id"] = sessionID
	}
	b, _ := json.Marshal(args)
	return "install_package " + string(b)
}
