package main

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goFileInComment finds a Go file's name, with or without a directory, in
// a comment.
var goFileInComment = regexp.MustCompile(`[A-Za-z0-9_./-]*[A-Za-z0-9_]\.go\b`)

// TestCommentsNameExistingFiles: a comment that names a Go file ("see
// life.go", "(container/warm_node_linux.go)") names one that exists, so a reader
// sent there finds it after files are renamed or split.
func TestCommentsNameExistingFiles(t *testing.T) {
	root := "../.."
	var files []string
	have := map[string]bool{} // every Go file by base name and by path
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			files = append(files, p)
			rel, _ := filepath.Rel(root, p)
			have[d.Name()], have[rel] = true, true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		for line, names := range commentedGoFiles(t, f) {
			for _, name := range names {
				if !named(have, name) {
					t.Errorf("%s:%d: a comment names %s, which does not exist", f, line, name)
				}
			}
		}
	}
}

// commentedGoFiles maps line numbers of f to the Go files a comment there
// names.
func commentedGoFiles(t *testing.T, f string) map[int][]string {
	t.Helper()
	fh, err := os.Open(f)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	out := map[int][]string{}
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		_, comment, ok := strings.Cut(sc.Text(), "// ")
		if !ok {
			continue
		}
		if m := goFileInComment.FindAllString(comment, -1); m != nil {
			out[n] = m
		}
	}
	return out
}

// named reports whether name is a file of the repository: a base name
// anywhere, or a path ending in an existing file's path (package dirs named
// from internal/ or from a sibling package).
func named(have map[string]bool, name string) bool {
	name = strings.TrimPrefix(strings.TrimLeft(name, "./"), "internal/")
	if !strings.Contains(name, "/") {
		return have[name]
	}
	for p := range have {
		if strings.HasSuffix(p, "/"+name) || p == name {
			return true
		}
	}
	return false
}
