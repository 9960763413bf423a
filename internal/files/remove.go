package files

import (
	"context"
	"os"
	"path/filepath"
)

// Remove deletes a live item of the caller now; a missing, expired or
// foreign item is ErrNotFound (NotFound). Session checkpoints use it to
// drop a checkpoint once a newer one replaces it.
func (s *DirStore) Remove(ctx context.Context, id string) error {
	if _, err := s.Get(ctx, id); err != nil {
		return err
	}
	s.mu.Lock()
	s.forget(id)
	s.mu.Unlock()
	return os.RemoveAll(filepath.Join(s.root, id))
}
