// Package scripts is the saved-script library (save_script,
// get_script, list_scripts, search_scripts, run_script). Scripts live as
// plain, human-editable directories under one root:
//
//	<root>/index.json                cache of every script's metadata
//	<root>/<name>/script.<py|js|ts|sh>
//	<root>/<name>/metadata.json
//	<root>/<name>/versions/<n>/…     earlier versions (same two files)
//
// The directories are the source of truth; index.json is a cache rebuilt
// whenever it disagrees with them, so scripts edited, added or deleted by hand
// are picked up on the next call. Every write is crash-safe (temp file,
// fsync, rename, fsync dir). A Store is safe for concurrent use within one
// process.
//
// Each principal has its own library (Store.For): the local principal uses
// the root itself, so libraries from before tenants keep working; any other
// principal gets <root>/.tenants/<tenant.Tag>/ with the same layout (a name
// starting with "." is never a script, so the libraries cannot overlap).
package scripts

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/atomicfile"
	"github.com/codexec/codexec/internal/errcode"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/tenant"
)

const (
	indexFile    = "index.json"
	metaFile     = "metadata.json"
	versionsDir  = "versions"
	scriptPrefix = "script."
)

// ErrNotFound is returned (wrapped) for an unknown script or version.
var ErrNotFound = errcode.New(errcode.ScriptNotFound, "script not found")

// Meta is a script's metadata.json. Pointer fields are null until the
// script first runs.
type Meta struct {
	ScriptID          string     `json:"script_id"`
	Name              string     `json:"name"`
	Description       string     `json:"description"`
	Language          string     `json:"language"`
	Tags              []string   `json:"tags"`
	Packages          []string   `json:"packages"`
	SourceExecutionID string     `json:"source_execution_id,omitempty"`
	Version           int        `json:"version"`
	CreatedAt         time.Time  `json:"created_at"`
	UpdatedAt         time.Time  `json:"updated_at"`
	LastRunAt         *time.Time `json:"last_run_at"`
	RunCount          int        `json:"run_count"`
	LastRunSuccess    *bool      `json:"last_run_success"`
}

// Script is one version of a script with its code.
type Script struct {
	Meta
	Code string
	// Path is the absolute path of the code file.
	Path string
	// Versions lists every stored version number, oldest first.
	Versions []int
}

// SaveInput is what save_script receives. Language may be an alias.
type SaveInput struct {
	Name, Description, Language, Code string
	Tags, Packages                    []string
	SourceExecutionID                 string
}

// Store is the script library rooted at one directory.
type Store struct {
	root string
	mu   sync.Mutex

	tmu     sync.Mutex
	tenants map[string]*Store
}

// tenantsDir holds the libraries of principals other than tenant.Local.
const tenantsDir = ".tenants"

// For returns the library of ctx's principal: s itself for tenant.Local,
// otherwise the principal's own library below s (created on first use, with
// an "owner" file naming the principal for operators). Call it on the
// library returned by Open.
func (s *Store) For(ctx context.Context) (*Store, error) {
	p := tenant.From(ctx)
	tag := tenant.Tag(p)
	if tag == "" {
		return s, nil
	}
	s.tmu.Lock()
	defer s.tmu.Unlock()
	if t := s.tenants[tag]; t != nil {
		return t, nil
	}
	t, err := Open(filepath.Join(s.root, tenantsDir, tag))
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(filepath.Join(t.root, "owner"), []byte(p+"\n")); err != nil {
		return nil, fmt.Errorf("scripts: %w", err)
	}
	if s.tenants == nil {
		s.tenants = map[string]*Store{}
	}
	s.tenants[tag] = t
	return t, nil
}

// Open returns the library at root, creating the directory if needed.
func Open(root string) (*Store, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("scripts: %w", err)
	}
	return &Store{root: root}, nil
}

// Root is the library directory.
func (s *Store) Root() string { return s.root }

// Ext returns the code file extension for a canonical language.
func Ext(lang string) string {
	switch lang {
	case runtime.Python:
		return "py"
	case runtime.Node:
		return "js"
	case runtime.TypeScript:
		return "ts"
	case runtime.Bash:
		return "sh"
	}
	return ""
}

func langOfExt(ext string) string {
	for _, l := range []string{runtime.Python, runtime.Node, runtime.TypeScript, runtime.Bash} {
		if Ext(l) == ext {
			return l
		}
	}
	return ""
}

// Save stores in as the current version of its name. An existing script's
// current files are first copied to versions/<n>/, so nothing is lost; its
// created_at and run statistics carry over. Invalid input writes nothing.
func (s *Store) Save(in SaveInput) (Script, error) {
	in, err := Prepare(in)
	if err != nil {
		return Script{}, err
	}
	lang := in.Language
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UTC()
	m := Meta{ScriptID: execlog.NewID("script_"), Name: in.Name, Description: in.Description, Language: lang,
		Tags: in.Tags, Packages: in.Packages, SourceExecutionID: in.SourceExecutionID,
		Version: 1, CreatedAt: now, UpdatedAt: now}
	dir := filepath.Join(s.root, in.Name)
	if old, err := readScript(dir, in.Name); err == nil {
		if err := archive(dir, old); err != nil {
			return Script{}, fmt.Errorf("keep previous version: %w", err)
		}
		m.ScriptID, m.CreatedAt, m.Version = old.ScriptID, old.CreatedAt, old.Version+1
		m.LastRunAt, m.RunCount, m.LastRunSuccess = old.LastRunAt, old.RunCount, old.LastRunSuccess
		if Ext(old.Language) != Ext(lang) {
			defer os.Remove(old.Path) // after the new files are in place
		}
	}
	if err := writeVersion(dir, m, in.Code); err != nil {
		return Script{}, err
	}
	if _, err := s.scanLocked(); err != nil {
		return Script{}, err
	}
	return readScriptVersion(dir, in.Name, 0)
}

// archive copies the current files of a script to versions/<n>/.
func archive(dir string, old Script) error {
	vdir := filepath.Join(dir, versionsDir, fmt.Sprint(max(old.Version, 1)))
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	return writeVersion(vdir, old.Meta, old.Code)
}

// writeVersion writes code then metadata into dir, each atomically.
func writeVersion(dir string, m Meta, code string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := atomicfile.SyncDir(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, scriptPrefix+Ext(m.Language)), []byte(code)); err != nil {
		return err
	}
	return writeMeta(dir, m)
}

func writeMeta(dir string, m Meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, metaFile), append(b, '\n'))
}

// Get returns the current version of name (version 0) or an earlier one.
func (s *Store) Get(name string, version int) (Script, error) {
	if err := ValidateName(name); err != nil {
		return Script{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return readScriptVersion(filepath.Join(s.root, name), name, version)
}

// RecordRun updates run_count, last_run_at and last_run_success.
func (s *Store) RecordRun(name string, at time.Time, success bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := filepath.Join(s.root, name)
	cur, err := readScript(dir, name)
	if err != nil {
		return err
	}
	at = at.UTC()
	cur.RunCount++
	cur.LastRunAt, cur.LastRunSuccess = &at, &success
	if err := writeMeta(dir, cur.Meta); err != nil {
		return err
	}
	_, err = s.scanLocked()
	return err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
