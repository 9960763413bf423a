package codemode

import (
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sourcemap"
)

// codeFile names the submitted code in the stack traces code mode reports:
// "code:3:24" is line 3, column 24 of what the caller sent.
const codeFile = "code"

// frameRe splits a V8 stack frame into function name and location.
var frameRe = regexp.MustCompile(`^\s+at (?:(.*) \((.*)\)|(.*))$`)

// locRe splits a location into file, line and column.
var locRe = regexp.MustCompile(`^(.*):(\d+):(\d+)$`)

// programRe matches the file name node gives the program: [eval] (node -e
// and the warm runner), [eval1] (an ES module from -e), or main.cjs/main.mjs
// (code too long for one argument; node maps those frames to main.ts, the
// wrapped source, itself).
var programRe = regexp.MustCompile(`^(\[eval\d*\]|main\.[cm]js|main\.ts)$`)

// mapTSStack rewrites the stack of an error thrown by the wrapped TypeScript
// program src so it speaks of the submitted code (code lines long): frames
// in the user's code point at its own line and column (through the source
// map of src's compilation), and the wrapper's and node's internal frames
// are dropped. line and col are those of the first frame in the user's code
// (0 when none is).
func mapTSStack(stack, src string, codeLines int) (out string, line, col int) {
	data, err := runtime.SourceMapTS(src)
	if err != nil {
		return stack, 0, 0
	}
	sm, err := sourcemap.Parse(data)
	if err != nil {
		return stack, 0, 0
	}
	var b strings.Builder
	for _, l := range strings.Split(stack, "\n") {
		m := frameRe.FindStringSubmatch(l)
		if m == nil {
			b.WriteString(l + "\n") // the message
			continue
		}
		name, loc := m[1], m[2]
		if m[3] != "" {
			loc = m[3]
		}
		kept, ul, uc := mapFrame(sm, loc, codeLines)
		if kept == "" {
			continue
		}
		if line == 0 && ul > 0 {
			line, col = ul, uc
		}
		if name != "" && name != "<anonymous>" {
			kept = name + " (" + kept + ")"
		}
		b.WriteString("    at " + kept + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n"), line, col
}

// mapFrame returns the location a frame keeps ("" to drop it) and, for a
// frame in the user's code, its line and column there.
func mapFrame(sm *sourcemap.Map, loc string, codeLines int) (string, int, int) {
	m := locRe.FindStringSubmatch(loc)
	if m == nil {
		return loc, 0, 0 // a built-in: JSON.parse (<anonymous>), Promise.all (index 0)
	}
	file := m[1]
	if !programRe.MatchString(path.Base(file)) {
		if strings.HasPrefix(file, "node:") || strings.Contains(file, "[eval]-wrapper") {
			return "", 0, 0
		}
		return loc, 0, 0 // a module the code loaded
	}
	gl, _ := strconv.Atoi(m[2])
	gc, _ := strconv.Atoi(m[3])
	sl, sc, ok := gl-1, gc-1, true
	if path.Base(file) != "main.ts" {
		sl, sc, ok = sm.Lookup(gl-1, gc-1)
	}
	ul := sl + 1 - LineOffset
	if !ok || ul < 1 || ul > codeLines {
		return "", 0, 0 // the wrapper's own lines
	}
	return codeFile + ":" + strconv.Itoa(ul) + ":" + strconv.Itoa(sc+1), ul, sc + 1
}
