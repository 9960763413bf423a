package packages

import (
	_ "embed"
	"fmt"
	"strings"
)

// defaultBlocklist is the maintained list of known-malicious packages shipped
// with codexec (blocklist_default.txt).
//
//go:embed blocklist_default.txt
var defaultBlocklist string

// NoBlocklist is the CODEXEC_PACKAGE_BLOCKLIST value that turns the default
// list off.
const NoBlocklist = "none"

// DefaultBlocklist parses the shipped list. It panics if the embedded file is
// malformed (a build defect, caught by the tests).
func DefaultBlocklist() *Blocklist {
	var lines []string
	for _, l := range strings.Split(defaultBlocklist, "\n") {
		line, _, _ := strings.Cut(l, "#")
		lines = append(lines, line)
	}
	bl, err := ParseBlocklist(lines)
	if err != nil {
		panic("default package blocklist: " + err.Error())
	}
	return bl
}

// ResolveBlocklist is the blocklist install_package applies: the shipped
// default, or what setting (CODEXEC_PACKAGE_BLOCKLIST: a file or a
// comma-separated list, "none" for nothing) replaces it with, plus extra
// (CODEXEC_PACKAGE_BLOCKLIST_EXTRA, same forms) on top.
func ResolveBlocklist(setting, extra, home string) (*Blocklist, error) {
	bl := DefaultBlocklist()
	switch s := strings.TrimSpace(setting); {
	case strings.EqualFold(s, NoBlocklist):
		bl = &Blocklist{}
	case s != "":
		var err error
		if bl, err = LoadBlocklist(s, home); err != nil {
			return nil, err
		}
	}
	if strings.TrimSpace(extra) == "" {
		return bl, nil
	}
	more, err := LoadBlocklist(extra, home)
	if err != nil {
		return nil, fmt.Errorf("CODEXEC_PACKAGE_BLOCKLIST_EXTRA: %w", err)
	}
	bl.merge(more)
	return bl, nil
}
