package runtime

import (
	"fmt"
	"strings"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/codexec/codexec/internal/errcode"
	"github.com/codexec/codexec/internal/sandbox"
)

// argLimit is the largest code passed inline as one argv string; Linux caps a
// single argument at 128 KiB (MAX_ARG_STRLEN). Larger code goes through a
// file in the sandbox's program directory.
const argLimit = 120 << 10

// nodeArgvFix makes process.argv look like a script's ([node, script, args…])
// for code run with -e, so process.argv.slice(2) gives the arguments. It is
// prepended on the first line so line numbers in stack traces are unchanged.
const nodeArgvFix = `process.argv.splice(1,0,"[eval]");`

// Program is what to start for one run: argv (argv[0] absolute) and files to
// place in the program directory (exposed at sandbox.ProgramPath).
type Program struct {
	Argv  []string
	Files map[string][]byte
}

// CompileError is a TypeScript syntax error found before anything ran.
type CompileError struct {
	Line, Column int // 1-based
	Text         string
	LineText     string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("TypeScript compile error at line %d, column %d: %s", e.Line, e.Column, e.Text)
}

// Build returns the program for code in a canonical language with args.
// TypeScript compile errors are returned as *CompileError.
func (s *Set) Build(lang, code string, args []string) (Program, error) {
	in := s.Get(lang)
	if in.Err != nil {
		return Program{}, fmt.Errorf("%s is unavailable on this server: %w", lang, in.Err)
	}
	switch lang {
	case Python:
		return inlineOrFile(in.Path, "-c", code, "main.py", nil, args), nil
	case Bash:
		return inlineOrFile(in.Path, "-c", code, "main.sh", []string{"bash"}, args), nil
	case Node:
		return nodeProgram(in.Path, code, false, nil, args), nil
	case TypeScript:
		js, esm, err := CompileTS(code)
		if err != nil {
			return Program{}, err
		}
		return nodeProgram(in.Path, js, esm, []string{"--enable-source-maps"}, args), nil
	}
	return Program{}, errcode.New(errcode.InvalidLanguage, "unsupported language %q", lang)
}

// inlineOrFile passes code after flag when it fits in one argument, else
// writes it to file in the program directory. inlineExtra comes between the
// inline code and args (bash's $0).
func inlineOrFile(interp, flag, code, file string, inlineExtra, args []string) Program {
	if len(code) <= argLimit {
		argv := append([]string{interp, flag, code}, inlineExtra...)
		return Program{Argv: append(argv, args...)}
	}
	argv := []string{interp, sandbox.ProgramPath + "/" + file}
	return Program{Argv: append(argv, args...), Files: map[string][]byte{file: []byte(code)}}
}

func nodeProgram(node, js string, esm bool, flags, args []string) Program {
	argv := append([]string{node}, flags...)
	if len(js) <= argLimit {
		if esm {
			argv = append(argv, "--input-type=module")
		}
		argv = append(argv, "-e", nodeArgvFix+js)
		return Program{Argv: append(argv, args...)}
	}
	file := "main.cjs"
	if esm {
		file = "main.mjs"
	}
	argv = append(argv, sandbox.ProgramPath+"/"+file)
	return Program{Argv: append(argv, args...), Files: map[string][]byte{file: []byte(js)}}
}

// CompileTS strips TypeScript to JavaScript with esbuild. It emits CommonJS
// (so both import and require work) unless the code uses top-level await,
// which only ES modules allow; esm reports which was produced.
func CompileTS(code string) (js string, esm bool, err error) {
	res, esm, err := transformTS(code, api.SourceMapInline)
	if err != nil {
		return "", false, err
	}
	return string(res.Code), esm, nil
}

// SourceMapTS is the source map (version 3 JSON) of CompileTS(code)'s
// JavaScript back to code: compiling is deterministic, so a caller can map
// the positions of a stack trace after the run.
func SourceMapTS(code string) ([]byte, error) {
	res, _, err := transformTS(code, api.SourceMapExternal)
	return res.Map, err
}

func transformTS(code string, sm api.SourceMap) (api.TransformResult, bool, error) {
	opts := api.TransformOptions{
		Loader: api.LoaderTS, Format: api.FormatCommonJS, Target: api.ES2022,
		Platform: api.PlatformNode, Sourcemap: sm, Sourcefile: "main.ts",
	}
	res := api.Transform(code, opts)
	esm := false
	if len(res.Errors) > 0 && strings.Contains(res.Errors[0].Text, "Top-level await") {
		opts.Format = api.FormatESModule
		res = api.Transform(code, opts)
		esm = true
	}
	if len(res.Errors) > 0 {
		return res, false, compileError(res.Errors[0])
	}
	return res, esm, nil
}

func compileError(m api.Message) *CompileError {
	ce := &CompileError{Text: m.Text}
	if m.Location != nil {
		ce.Line, ce.Column, ce.LineText = m.Location.Line, m.Location.Column+1, m.Location.LineText
	}
	return ce
}
