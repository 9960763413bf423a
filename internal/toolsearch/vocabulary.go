package toolsearch

import "strings"

// stop words are dropped from intents: they would match every description.
var stop = set(`a an the of to for in on at by with from into and or is are be been was were this that
	these those it its as me my i we our you your please some any can could would should will just then than
	so if about using use via up out there here do does did want need like`)

// Verb classes of intents and tool names, for the ranking prior.
var (
	deleteVerbs = set(`delete remove erase drop destroy purge clear wipe forget discard unlink trash prune revoke uninstall`)
	writeVerbs  = set(`store save add create remember record insert put persist write make new register keep update edit
		modify change set replace rename move upload push commit post send append note memorize`)
	readVerbs = set(`read get fetch show list find search look lookup view load display dump retrieve query see
		check what which who how where when browse`)
	// verbs is every verb above (a tool's name starting with one names
	// its action there, not after its server prefix).
	verbs = union(deleteVerbs, writeVerbs, readVerbs)
)

// groups are words a person and a tool may use for the same action or
// thing: general English and software vocabulary, not any one server's.
var groups = [][]string{
	{"create", "add", "store", "save", "record", "insert", "new", "make", "put", "persist", "register"},
	{"write", "save", "store", "persist", "overwrite", "put"},
	{"delete", "remove", "erase", "drop", "destroy", "purge", "clear", "wipe", "discard", "unlink"},
	{"get", "fetch", "retrieve", "read", "show", "view", "load", "open", "display", "dump", "see", "print"},
	{"list", "enumerate", "browse", "show", "all", "contents"},
	{"search", "find", "query", "lookup", "look", "locate", "match", "discover"},
	{"update", "edit", "modify", "change", "patch", "set", "replace", "alter", "close", "reopen"},
	{"send", "post", "publish", "notify", "message", "tell", "say"},
	{"reply", "respond", "answer", "thread"},
	{"run", "execute", "trigger", "start", "launch", "invoke", "evaluate", "eval"},
	{"stop", "cancel", "halt", "abort", "kill"},
	{"toggle", "enable", "disable", "switch", "turn", "on", "off"},
	{"move", "rename", "relocate"},
	{"directory", "folder", "dir"},
	{"file", "document", "readme"},
	{"filesystem", "disk", "local", "path", "file", "files"},
	{"multiple", "several", "many", "batch", "bulk", "once"},
	{"user", "member", "account", "person", "people", "profile", "who"},
	{"issue", "ticket", "bug"},
	{"commit", "revision", "change", "history"},
	{"push", "commit", "upload"},
	{"pull", "pr", "merge"},
	{"review", "approve", "feedback"},
	{"repository", "repo", "project", "codebase"},
	{"sum", "add", "total", "plus", "calculate", "arithmetic", "numbers"},
	{"echo", "repeat", "back", "mirror"},
	{"email", "mail", "inbox"},
	{"image", "picture", "photo", "png", "jpeg", "logo", "drawing", "illustration"},
	{"media", "image", "audio", "binary", "base64"},
	{"entity", "node", "person", "thing", "concept"},
	{"relation", "relationship", "link", "edge", "connect", "between"},
	{"observation", "fact", "note", "detail"},
	{"memory", "remember", "recall", "know", "knows", "knowledge", "forget", "memorize", "keep"},
	{"graph", "knowledge", "network"},
	{"size", "bytes", "big", "large"},
	{"info", "metadata", "detail", "stat", "modified", "created", "timestamps"},
	{"think", "thought", "reason", "reflect", "step", "sequential", "plan"},
	{"navigate", "go", "visit", "url", "goto"},
	{"puppeteer", "playwright", "selenium", "browser", "chrome", "headless", "page", "website"},
	{"fill", "type", "enter", "input", "form"},
	{"click", "press", "tap", "button"},
	{"evaluate", "javascript", "script", "js"},
	{"screenshot", "capture", "snapshot"},
	{"geocode", "coordinates", "latitude", "longitude", "address", "location"},
	{"directions", "route", "drive", "driving", "walking", "walk", "travel", "navigate"},
	{"distance", "far", "long", "travel", "time"},
	{"elevation", "altitude", "height"},
	{"places", "place", "restaurant", "business", "shop", "near", "nearby", "local"},
	{"web", "internet", "online", "news"},
	{"compress", "gzip", "zip", "archive"},
	{"env", "environment", "variables"},
	{"reaction", "emoji", "react"},
	{"channel", "room"},
	{"status", "check", "checks", "ci", "passing", "build"},
	{"query", "sql", "database", "db", "select"},
	{"operation", "progress", "task", "job"},
	{"logging", "log", "logs"},
	{"fork", "copy", "clone"},
	{"branch", "ref"},
	{"retrieve", "retrieval", "passage", "rag"},
	{"generate", "draw", "render", "create"},
}

// synonymGroups indexes groups by the stem of each member.
var synonymGroups = map[string][]int{}

func init() {
	for i, g := range groups {
		for _, w := range g {
			s := stem(w)
			if n := len(synonymGroups[s]); n == 0 || synonymGroups[s][n-1] != i {
				synonymGroups[s] = append(synonymGroups[s], i)
			}
		}
	}
}

func set(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

func union(ms ...map[string]bool) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			out[k] = true
		}
	}
	return out
}
