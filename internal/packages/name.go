// Package packages installs third-party packages for sandboxed code: pip
// packages for python and npm packages for node. Installation runs on the
// host, outside any sandbox, with the real installers and the operator's own
// installer configuration (CA bundle, proxy, npmrc); the target directory is
// then mounted read-only into sandboxes, which keep no network.
//
// Because the installer runs with network and host access, everything an
// agent supplies is validated first against the ecosystem's own name rules
// (ParseSpec) and the operator's blocklist; the package string never reaches
// a shell, is never an option, URL or path, and registry/index URLs come only
// from the operator. Install scripts never run: npm gets --ignore-scripts and
// pip accepts only wheels (--only-binary=:all:), so no package code executes
// on the host during installation.
package packages

import (
	"fmt"
	"regexp"
	"strings"
)

// Ecosystems.
const (
	Python = "python"
	Node   = "node"
)

// Spec is a validated package request.
type Spec struct {
	// Language is Python or Node.
	Language string
	// Name is the package name as given (without extras or version).
	Name string
	// Normalized is the name used for comparisons: PEP 503 for python
	// (lowercase, runs of -_. become -), lowercase for npm.
	Normalized string
	// Extras are python extras ("pandas[excel]"); nil for node.
	Extras []string
	// Version is the version specifier as given: "==2.2.1", ">=1.26,<2"
	// for python; "4", "^4.17.0", "latest" for npm. Empty means any.
	Version string
}

// Arg is the installer argument for s, rebuilt from its validated parts.
func (s Spec) Arg() string {
	if s.Language == Node {
		if s.Version == "" {
			return s.Name
		}
		return s.Name + "@" + s.Version
	}
	arg := s.Name
	if len(s.Extras) > 0 {
		arg += "[" + strings.Join(s.Extras, ",") + "]"
	}
	return arg + s.Version
}

// maxSpecLen bounds a package argument; real names are far shorter.
const maxSpecLen = 214

var (
	// PEP 508 name (also used for extras), ASCII letters and digits at both ends.
	pyName = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$`)
	// One PEP 440 clause: operator then a version; "==" and "!=" may end in ".*".
	pyClause = regexp.MustCompile(`^(?:~=|===|==|!=|<=|>=|<|>)[0-9][0-9A-Za-z.+!_-]*(?:\.\*)?$`)
	// npm name part: URL-safe characters without the legacy specials ~'!()*.
	npmPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	// npm version, range or dist-tag, with no whitespace ("^4", "4.x", ">=1.2", "1||2", "latest").
	npmVersion = regexp.MustCompile(`^[0-9A-Za-z.^~<>=|*+_-]+$`)
	pyNormRun  = regexp.MustCompile(`[-_.]+`)
	// Names that installers would read as archive files rather than registry names.
	archiveSuffix = regexp.MustCompile(`(?i)\.(?:whl|zip|tgz|tar|tar\.gz|tar\.bz2|tar\.xz|tbz|txz|egg)$`)
)

// ParseSpec validates a package request for language (Python or Node) and
// returns its parts. Anything that is not a plain registry name with an
// optional version specifier is rejected: whitespace, options, URLs, paths,
// VCS specs, environment markers, shell syntax.
func ParseSpec(language, raw string) (Spec, error) {
	if raw == "" {
		return Spec{}, fmt.Errorf("package is empty")
	}
	if len(raw) > maxSpecLen {
		return Spec{}, fmt.Errorf("package %.40q… is longer than %d characters", raw, maxSpecLen)
	}
	if strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
		return Spec{}, fmt.Errorf("package %q contains whitespace, control or non-ASCII characters", raw)
	}
	switch language {
	case Python:
		return parsePython(raw)
	case Node:
		return parseNode(raw)
	}
	return Spec{}, fmt.Errorf("unsupported package language %q: use python or node", language)
}

func parsePython(raw string) (Spec, error) {
	i := strings.IndexAny(raw, "[~=!<>")
	if i < 0 {
		i = len(raw)
	}
	s := Spec{Language: Python, Name: raw[:i]}
	if err := checkPyName(s.Name, raw); err != nil {
		return Spec{}, err
	}
	rest := raw[i:]
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return Spec{}, fmt.Errorf("package %q: unclosed extras bracket", raw)
		}
		for _, e := range strings.Split(rest[1:end], ",") {
			if !pyName.MatchString(e) {
				return Spec{}, fmt.Errorf("package %q: invalid extra %q", raw, e)
			}
			s.Extras = append(s.Extras, e)
		}
		rest = rest[end+1:]
	}
	if rest != "" {
		for _, c := range strings.Split(rest, ",") {
			if !pyClause.MatchString(c) {
				return Spec{}, fmt.Errorf("package %q: invalid version specifier %q (use e.g. pandas==2.2.1 or numpy>=1.26,<2)", raw, c)
			}
		}
	}
	s.Version = rest
	s.Normalized = NormalizePython(s.Name)
	return s, nil
}

func checkPyName(name, raw string) error {
	if !pyName.MatchString(name) {
		return fmt.Errorf("package %q is not a valid python package name (PEP 508: letters, digits, '.', '_', '-'; "+
			"optionally [extras] and a version specifier such as ==2.2.1; URLs, paths and options are not accepted)", raw)
	}
	if archiveSuffix.MatchString(name) {
		return fmt.Errorf("package %q looks like an archive file name, not a package name", raw)
	}
	return nil
}

func parseNode(raw string) (Spec, error) {
	name, version := raw, ""
	at := strings.LastIndexByte(raw, '@')
	if at > 0 {
		name, version = raw[:at], raw[at+1:]
		if version == "" || !npmVersion.MatchString(version) {
			return Spec{}, fmt.Errorf("package %q: invalid npm version or range %q (use e.g. lodash@4, lodash@^4.17.0 or lodash@latest; no spaces, URLs, aliases or git specs)", raw, version)
		}
	}
	if err := checkNPMName(name, raw); err != nil {
		return Spec{}, err
	}
	return Spec{Language: Node, Name: name, Normalized: strings.ToLower(name), Version: version}, nil
}

func checkNPMName(name, raw string) error {
	bad := fmt.Errorf("package %q is not a valid npm package name (name or @scope/name of letters, digits, '-', '.', '_', "+
		"optionally @version; URLs, paths, git specs and options are not accepted)", raw)
	local := name
	if strings.HasPrefix(name, "@") {
		scope, rest, ok := strings.Cut(name[1:], "/")
		if !ok || !npmPart.MatchString(scope) {
			return bad
		}
		local = rest
	}
	if !npmPart.MatchString(local) || len(name) > maxSpecLen {
		return bad
	}
	switch strings.ToLower(local) {
	case "node_modules", "favicon.ico":
		return bad
	}
	if archiveSuffix.MatchString(name) {
		return fmt.Errorf("package %q looks like an archive file name, not a package name", raw)
	}
	return nil
}

// NormalizePython is PEP 503 name normalization.
func NormalizePython(name string) string {
	return pyNormRun.ReplaceAllString(strings.ToLower(name), "-")
}
