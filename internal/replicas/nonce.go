package replicas

import (
	"errors"
	"net/http"
	"sync"
	"time"
)

// nonceCache remembers the nonces of accepted hop requests for nonceTTL,
// at most max of them (MaxNonces). Entries are kept in a queue in the
// order they were added, which is the order they expire in (each expires
// nonceTTL after it was added); expired ones are dropped from its head
// when a nonce is added. Safe for concurrent use.
type nonceCache struct {
	mu    sync.Mutex
	max   int
	until map[string]time.Time
	queue []nonceEntry // queue[head:] are live, oldest first
	head  int
}

type nonceEntry struct {
	nonce string
	until time.Time
}

// errReplayed is a hop request whose nonce was accepted before.
var errReplayed = errors.New("request already received (replayed)")

// add records nonce, seen at now; it refuses a nonce seen within nonceTTL
// (403) and, when max unexpired nonces are held, any new one (503).
func (c *nonceCache) add(nonce string, now time.Time) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.until == nil {
		c.until = map[string]time.Time{}
	}
	c.expire(now)
	if until, ok := c.until[nonce]; ok && now.Before(until) {
		return http.StatusForbidden, errReplayed
	}
	if len(c.until) >= c.max {
		return http.StatusServiceUnavailable, errors.New("too many forwarded requests in the replay window; retry")
	}
	e := nonceEntry{nonce: nonce, until: now.Add(nonceTTL)}
	c.until[nonce] = e.until
	c.queue = append(c.queue, e)
	return 0, nil
}

// expire drops the entries at the head of the queue that expired by now,
// and compacts the queue once most of it is dropped.
func (c *nonceCache) expire(now time.Time) {
	for c.head < len(c.queue) && !now.Before(c.queue[c.head].until) {
		e := c.queue[c.head]
		if c.until[e.nonce] == e.until {
			delete(c.until, e.nonce)
		}
		c.queue[c.head] = nonceEntry{}
		c.head++
	}
	if c.head > len(c.queue)/2 {
		c.queue = append(c.queue[:0], c.queue[c.head:]...)
		c.head = 0
	}
}
