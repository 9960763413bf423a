package s3store

import (
	"context"
)

// Remove deletes a live item of the caller now (its manifest first, then
// its data); a missing, expired or foreign item is files.NotFound. Session
// checkpoints use it to drop a checkpoint once a newer one replaces it.
func (s *Store) Remove(ctx context.Context, id string) error {
	m, err := s.load(ctx, id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.known, id)
	s.mu.Unlock()
	s.remove(ctx, m)
	return nil
}
