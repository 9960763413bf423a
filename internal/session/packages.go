package session

import (
	"context"
	"fmt"
	"time"

	"github.com/codexec/codexec/internal/errcode"
	"github.com/codexec/codexec/internal/execlog"
)

// PackageTarget returns the directory install_package should install into
// for a session and language ("python" → a pip --target dir on sys.path,
// "node" → an npm --prefix dir whose node_modules is on NODE_PATH). The
// directories exist from session start, so the running interpreter sees
// new packages without a restart.
func (m *Manager) PackageTarget(ctx context.Context, idOrName, lang string) (string, error) {
	s, err := m.Get(ctx, idOrName)
	if err != nil {
		return "", err
	}
	if s.isDead() {
		return "", errcode.New(errcode.InvalidParams, "session %s is dead (%s)", s.ID, s.deathReason())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	dir, ok := s.pkgDirs[lang]
	if !ok {
		return "", fmt.Errorf("no %s package directory for session %s", lang, s.ID)
	}
	return dir, nil
}

// RecordPackage notes an installed package (shown in list_sessions) and
// logs a package_install entry to the session log.
func (m *Manager) RecordPackage(ctx context.Context, idOrName, lang, name, version string, success bool) error {
	s, err := m.Get(ctx, idOrName)
	if err != nil {
		return err
	}
	if success {
		s.mu.Lock()
		s.packages = append(s.packages, Package{Language: lang, Name: name, Version: version})
		s.mu.Unlock()
	}
	if log := m.deps.Log; log != nil {
		return log.Append(execlog.SessionFile(s.storage), map[string]any{"type": "package_install", "session_id": s.ID, "owner": s.Owner,
			"language": lang, "package": name, "version": version, "success": success, "at": time.Now().UTC()})
	}
	return nil
}
