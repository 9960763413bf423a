package shell

import "mvdan.cc/sh/v3/syntax"

// inert are bash builtins that start no program and run no code given as
// data, so a script may use them whatever ALLOWED_COMMANDS says (bash -c
// "exit 5" with only bash allowed). They only count when called by their bare
// name: /bin/echo is a program and is checked. pwd is deliberately absent:
// an operator who allows only ls expects "pwd is not allowed".
// Builtins that assign variables (read, getopts, printf -v, export …) still
// get the protected-variable checks; builtins that run code or programs
// (eval, source, exec, command, builtin, trap with code, enable …) are in
// indirection and stay refused.
var inert = map[string]bool{
	"exit": true, "return": true, "true": true, "false": true, ":": true, "cd": true, "test": true, "[": true,
	"echo": true, "printf": true, "read": true, "set": true, "shift": true, "break": true, "continue": true,
	"getopts": true, "wait": true, "local": true, "declare": true, "typeset": true, "export": true, "readonly": true,
}

// inertCall reports whether a call of name with args starts no program.
func inertCall(name string, args []*syntax.Word) bool {
	if name == "trap" {
		return trapWithoutCode(args)
	}
	return inert[name]
}

// trapWithoutCode accepts the forms of trap that install no handler code:
// listing (trap, trap -l, trap -p [sig]) and resetting (trap - SIG).
func trapWithoutCode(args []*syntax.Word) bool {
	if len(args) == 0 {
		return true
	}
	first, ok := literal(args[0])
	if first == "--" && len(args) > 1 {
		first, ok = literal(args[1])
	}
	return ok && (first == "-" || first == "-l" || first == "-p")
}
