package shell

import (
	"fmt"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/codexec/codexec/internal/errcode"
)

// indirection are builtins that run code given as data (eval 'rm -rf x',
// source f, trap 'cmd' EXIT, hash -p /bin/sh ls, mapfile -C cb …): what they
// run cannot be known before the script runs, so they are rejected unless
// the allowlist is "*", even when listed.
var indirection = map[string]bool{
	"eval": true, "exec": true, "source": true, ".": true, "command": true, "builtin": true,
	"trap": true, "enable": true, "hash": true, "alias": true, "mapfile": true, "readarray": true,
	"fc": true, "complete": true, "compgen": true, "bind": true,
}

// shells whose "-c script" argument is parsed and checked like the outer
// script, with the parser variant matching the shell.
var shells = map[string]syntax.LangVariant{
	"bash": syntax.LangBash, "sh": syntax.LangPOSIX, "dash": syntax.LangPOSIX, "ash": syntax.LangPOSIX,
}

// commandName is what a statically known command name may look like: no
// globs, braces, tildes, backslashes or quotes left to interpret.
var commandName = regexp.MustCompile(`^(\[|[A-Za-z0-9._+@/-]+)$`)

// CheckScript parses script as bash and checks every command it could run
// (pipelines, lists, $(…), backticks, subshells, process substitution,
// function bodies, bash -c strings) against the allowlist. It rejects what
// cannot be checked statically: command names built from expansions,
// indirection builtins, arithmetic evaluation (bash evaluates variables
// inside arithmetic and can run command substitutions hidden in them), and
// assignments to variables that change what a command name runs (PATH, LD_*,
// BASH_ENV …). Nil means every command is allowed.
func (a *Allowlist) CheckScript(script string) error {
	if a.Empty() {
		return ErrNoneAllowed
	}
	if a.all {
		return nil
	}
	return a.check(script, syntax.LangBash, 0)
}

func (a *Allowlist) check(script string, lang syntax.LangVariant, depth int) error {
	if depth > 8 {
		return &UncheckableError{What: "the command", Why: "shells nested too deeply"}
	}
	f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(script), "")
	if err != nil {
		return errcode.New(errcode.InvalidParams, "cannot parse the command: %v", err)
	}
	var first error
	syntax.Walk(f, func(n syntax.Node) bool {
		if first == nil {
			first = a.node(n, depth)
		}
		return first == nil
	})
	return first
}

// node checks one syntax node; children are visited by the walk.
func (a *Allowlist) node(n syntax.Node, depth int) error {
	switch n := n.(type) {
	case *syntax.CallExpr:
		return a.call(n, depth)
	case *syntax.DeclClause:
		return a.decl(n)
	case *syntax.Assign:
		return checkAssign(n)
	case *syntax.ForClause:
		if wi, ok := n.Loop.(*syntax.WordIter); ok {
			return checkVarName(wi.Name.Value)
		}
		return &UncheckableError{What: "C-style for loop", Why: "arithmetic evaluation"}
	case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause:
		return &UncheckableError{What: "arithmetic", Why: "bash evaluates variables inside arithmetic and can run command substitutions hidden in them"}
	case *syntax.ParamExp:
		return checkParam(n)
	case *syntax.BinaryTest:
		if n.Op >= syntax.TsEql && n.Op <= syntax.TsGtr {
			return &UncheckableError{What: "arithmetic comparison in [[ ]]", Why: "its operands are evaluated arithmetically"}
		}
	case *syntax.UnaryTest:
		if n.Op == syntax.TsVarSet || n.Op == syntax.TsRefVar {
			return &UncheckableError{What: "[[ -v ]]", Why: "array subscripts are evaluated arithmetically"}
		}
	case *syntax.ArrayElem:
		if n.Index != nil {
			return &UncheckableError{What: "array element subscript", Why: "subscripts are evaluated arithmetically"}
		}
	case *syntax.CoprocClause:
		return &UncheckableError{What: "coproc", Why: "not supported by the command check"}
	}
	return nil
}

func (a *Allowlist) call(c *syntax.CallExpr, depth int) error {
	if len(c.Args) == 0 {
		return nil // plain assignments; visited as *syntax.Assign
	}
	name, ok := literal(c.Args[0])
	if ok && inertCall(name, c.Args[1:]) {
		return assigningBuiltin(name, c.Args[1:])
	}
	if !ok || !commandName.MatchString(name) {
		return &UncheckableError{What: fmt.Sprintf("command name %q", printWord(c.Args[0])), Why: "the command name is computed at run time (expansion, glob or quoting)"}
	}
	if indirection[name] {
		return &UncheckableError{What: fmt.Sprintf("%q", name), Why: "it runs code given as data"}
	}
	if err := a.Allowed(name); err != nil {
		return err
	}
	base := name[strings.LastIndex(name, "/")+1:]
	if err := assigningBuiltin(base, c.Args[1:]); err != nil {
		return err
	}
	if _, isShell := shells[base]; isShell {
		return a.shellArgs(base, c.Args[1:], depth)
	}
	if _, other := otherShells[base]; other {
		return &UncheckableError{What: fmt.Sprintf("%q", name), Why: "this shell's scripts cannot be parsed by the command check"}
	}
	return nil
}

var otherShells = map[string]bool{"zsh": true, "ksh": true, "mksh": true, "fish": true, "csh": true, "tcsh": true, "busybox": true}

// shellArgs accepts `sh [options] -c 'script' [name args…]` with a literal
// script, and checks that script. A shell reading a file or standard input
// (ls | bash) cannot be checked and is rejected.
func (a *Allowlist) shellArgs(shell string, args []*syntax.Word, depth int) error {
	reject := &UncheckableError{What: fmt.Sprintf("%q without a literal -c script", shell), Why: "a shell reading a script file or standard input runs commands that cannot be checked"}
	hasC := false
	for i := 0; i < len(args); i++ {
		arg, ok := literal(args[i])
		if !ok {
			return reject
		}
		switch {
		case arg == "-o" || arg == "+o" || arg == "-O" || arg == "+O":
			i++
		case arg == "--noprofile" || arg == "--norc" || arg == "--posix":
		case len(arg) > 1 && (arg[0] == '-' || arg[0] == '+') && arg[1] != '-':
			if strings.ContainsAny(arg[1:], "s") {
				return reject
			}
			hasC = hasC || (arg[0] == '-' && strings.Contains(arg, "c"))
		default:
			if !hasC || strings.HasPrefix(arg, "-") || strings.HasPrefix(arg, "+") {
				return reject
			}
			return a.check(arg, shells[shell], depth+1)
		}
	}
	return reject
}

// assigningBuiltin checks the variables that read, getopts and printf -v
// would assign (when the operator has listed them): they must be literal
// names outside protectedVars, or a later bare command name could run
// something else (read PATH <<< /tmp; ls).
func assigningBuiltin(name string, args []*syntax.Word) error {
	var names []*syntax.Word
	switch name {
	case "read", "getopts":
		names = args
	case "printf":
		var err error
		if names, err = printfTarget(args); err != nil {
			return err
		}
	default:
		return nil
	}
	for _, w := range names {
		v, ok := literal(w)
		if !ok {
			return &UncheckableError{What: name + " with a computed argument", Why: "it may assign any variable"}
		}
		if err := checkVarName(v); err != nil {
			return err
		}
	}
	return nil
}

// printfTarget returns the variable printf -v would assign. Options come
// first, so a computed first argument might itself be -v and is rejected.
func printfTarget(args []*syntax.Word) ([]*syntax.Word, error) {
	if len(args) == 0 {
		return nil, nil
	}
	first, ok := literal(args[0])
	switch {
	case !ok:
		return nil, &UncheckableError{What: "printf with a computed first argument", Why: "it may be -v and assign any variable"}
	case first == "-v" && len(args) > 1:
		return args[1:2], nil
	case strings.HasPrefix(first, "-v"):
		return []*syntax.Word{{Parts: []syntax.WordPart{&syntax.Lit{Value: first[2:]}}}}, nil
	}
	return nil, nil
}

func (a *Allowlist) decl(d *syntax.DeclClause) error {
	if !inert[d.Variant.Value] {
		if err := a.Allowed(d.Variant.Value); err != nil {
			return err
		}
	}
	for _, as := range d.Args {
		if as.Name == nil {
			if v, ok := literal(as.Value); !ok || strings.Contains(v, "=") || strings.HasPrefix(v, "-") && strings.ContainsAny(v, "ni") {
				return &UncheckableError{What: d.Variant.Value + " with a computed, nameref (-n) or integer (-i) argument", Why: "it may assign any variable or evaluate values arithmetically"}
			}
		}
	}
	return nil
}

func checkAssign(as *syntax.Assign) error {
	if as.Index != nil {
		return &UncheckableError{What: "array subscript assignment", Why: "subscripts are evaluated arithmetically"}
	}
	if as.Name == nil {
		return nil
	}
	return checkVarName(as.Name.Value)
}

func checkParam(p *syntax.ParamExp) error {
	switch {
	case p.Excl:
		return &UncheckableError{What: "indirect expansion ${!…}", Why: "the expanded name may carry an arithmetic subscript"}
	case p.Index != nil, p.Slice != nil:
		return &UncheckableError{What: "subscript or slice expansion", Why: "it is evaluated arithmetically"}
	case p.Exp != nil && (p.Exp.Op == syntax.AssignUnset || p.Exp.Op == syntax.AssignUnsetOrNull) && p.Param != nil:
		return checkVarName(p.Param.Value)
	}
	return nil
}

// checkVarName rejects assignments to variables that change which program a
// command name runs or inject code into every program.
func checkVarName(name string) error {
	switch {
	case protectedVars[name], strings.HasPrefix(name, "LD_"), strings.HasPrefix(name, "BASH_"):
		return &UncheckableError{What: fmt.Sprintf("assignment to %s", name), Why: "it changes which programs run"}
	}
	return nil
}

var protectedVars = map[string]bool{
	"PATH": true, "ENV": true, "SHELLOPTS": true, "BASHOPTS": true, "PROMPT_COMMAND": true, "PS0": true,
	"PS1": true, "PS2": true, "PS3": true, "PS4": true, "IFS": true, "GCONV_PATH": true, "CDPATH": true,
	"GLOBIGNORE": true, "EXECIGNORE": true, "HOSTALIASES": true,
}

// literal returns the value of a word made only of literal text and simple
// quotes (no expansions, no backslash escapes, no $'…').
func literal(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.Contains(p.Value, `\`) {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok || strings.Contains(lit.Value, `\`) {
					return "", false
				}
				b.WriteString(lit.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

func printWord(w *syntax.Word) string {
	var b strings.Builder
	_ = syntax.NewPrinter().Print(&b, w)
	return b.String()
}
