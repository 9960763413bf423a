package shell

import (
	"errors"
	"strings"
	"testing"
)

const testPath = "/usr/local/bin:/usr/bin:/bin"

func TestAllowed(t *testing.T) {
	cases := []struct {
		entries []string
		name    string
		want    string // "" = allowed, else a substring of the error
	}{
		{nil, "ls", "ALLOWED_COMMANDS=ls,cat"},
		{[]string{" ", ""}, "ls", "ALLOWED_COMMANDS=ls,cat"},
		{[]string{"ls", "cat"}, "ls", ""},
		{[]string{"ls", "cat"}, "pwd", `"pwd" is not allowed`},
		{[]string{"*"}, "anything", ""},
		{[]string{"*"}, "./rel", ""},
		{[]string{"ls"}, "/usr/bin/ls", ""},
		{[]string{"ls"}, "/bin/../usr/bin/ls", ""},
		{[]string{"ls"}, "/tmp/ls", "not allowed"},
		{[]string{"ls"}, "./ls", "relative path"},
		{[]string{"ls"}, "bin/ls", "relative path"},
		{[]string{"/opt/tool/x"}, "/opt/tool/x", ""},
		{[]string{"/opt/tool/x"}, "x", "not allowed"},
		{[]string{"/opt/tool/x"}, "/opt/tool/y", "not allowed"},
		{[]string{"ls"}, "LS", "not allowed"},
	}
	for _, c := range cases {
		err := NewAllowlist(c.entries, testPath).Allowed(c.name)
		if got := errString(err); (c.want == "") != (err == nil) || !strings.Contains(got, c.want) {
			t.Errorf("%v Allowed(%q) = %q, want %q", c.entries, c.name, got, c.want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestCheckScript(t *testing.T) {
	allow := NewAllowlist([]string{"ls", "cat", "bash", "grep", "export", "echo", "sh", "read", "printf"}, testPath)
	accept := []string{
		"ls", "ls -la /tmp", "ls | cat", "ls && cat x || grep y z", "ls; cat", "ls $(ls) `cat x`",
		"(ls)", "{ ls; }", "ls <(cat x)", "f() { ls; }", "for f in a b; do cat $f; done",
		"if ls; then cat x; fi", "X=1 ls", "export FOO=bar", "echo \"$HOME\" > out.txt", "cat <<EOF\nhi $(ls)\nEOF",
		"bash -c 'ls | cat'", "bash -ec \"ls\"", "sh -c 'ls' name arg", "/usr/bin/ls", "ls # rm -rf /",
		"'ls'", `"ls" x`, "[[ $x == y ]] && ls", "ls ${x:-$(cat y)}", "! ls", "time ls", "case x in y) ls;; esac",
		"read -r line <<< x", "printf '%s\\n' \"$x\"", "printf -v out %s x", "a=(x y)",
	}
	// Builtins that start no program need no listing (bash -c "exit 5").
	accept = append(accept, "bash -c \"exit 5\"", "true; false; :", "cd /tmp && ls", "test -f x || [ -d y ]",
		"set -e; shift; return 2", "local v=1", "declare -a arr", "trap - EXIT", "trap -p", "trap",
		"while true; do break; done", "wait")
	for _, s := range accept {
		if err := allow.CheckScript(s); err != nil {
			t.Errorf("CheckScript(%q) = %v, want accepted", s, err)
		}
	}
	reject := map[string]string{
		"pwd":                           `"pwd" is not allowed`,
		"ls; rm -rf x":                  `"rm"`,
		"ls $(whoami)":                  `"whoami"`,
		"ls `whoami`":                   `"whoami"`,
		"ls | python3":                  `"python3"`,
		"ls | bash":                     "literal -c script",
		"bash script.sh":                "literal -c script",
		"bash -s":                       "literal -c script",
		"bash -c \"$X\"":                "literal -c script",
		"bash -c 'rm x'":                `"rm"`,
		"bash -c 'bash -c \"rm x\"'":    `"rm"`,
		"$X":                            "computed at run time",
		"$(echo ls)":                    "computed at run time",
		"l\\s":                          "computed at run time",
		"l*":                            "computed at run time",
		"{ls,x}":                        "computed at run time",
		"~/bin/ls":                      "computed at run time",
		"eval ls":                       "runs code given as data",
		"source x":                      "runs code given as data",
		". x":                           "runs code given as data",
		"exec ls":                       "runs code given as data",
		"command ls":                    "runs code given as data",
		"trap 'rm x' EXIT":              "runs code given as data",
		"PATH=/tmp ls":                  "assignment to PATH",
		"export PATH=/tmp":              "assignment to PATH",
		"LD_PRELOAD=/x.so ls":           "assignment to LD_PRELOAD",
		"for PATH in /tmp; do ls; done": "assignment to PATH",
		"echo ${PATH:=/tmp}":            "assignment to PATH",
		"echo $((x))":                   "arithmetic",
		"((x++))":                       "arithmetic",
		"echo ${a[$i]}":                 "subscript",
		"echo ${x:$o}":                  "subscript",
		"echo ${!x}":                    "indirect",
		"[[ $x -eq 1 ]]":                "arithmetic comparison",
		"a[$(ls)]=1":                    "array subscript",
		"ls 'unterminated":              "cannot parse",
		"zsh -c ls":                     `"zsh" is not allowed`,
		"export -n PATH":                "nameref",
		"f() { ls; }; f":                `"f" is not allowed`,
		"export \"$v\"":                 "computed",
		"coproc ls":                     "coproc",
		"./ls":                          "relative path",
		"f() { rm x; }":                 `"rm"`,
		"ls > >(rm x)":                  `"rm"`,
		"/bin/true":                     `"/bin/true" is not allowed`,
		"trap -- 'rm x' EXIT":           "runs code given as data",
		"builtin echo x":                "runs code given as data",
		"enable -n echo":                "runs code given as data",
		"read PATH":                     "assignment to PATH",
		"bash -c 'pwd'":                 `"pwd" is not allowed`,
		"declare -n r=PATH":             "nameref",
	}
	for s, want := range reject {
		err := allow.CheckScript(s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckScript(%q) = %v, want error containing %q", s, err, want)
		}
	}
}

func TestCheckScriptEmptyAndWildcard(t *testing.T) {
	if err := NewAllowlist(nil, testPath).CheckScript("ls"); !errors.Is(err, ErrNoneAllowed) {
		t.Errorf("empty list: %v", err)
	}
	if err := NewAllowlist([]string{"*"}, testPath).CheckScript("eval $(rm x)"); err != nil {
		t.Errorf("* must allow everything: %v", err)
	}
}
