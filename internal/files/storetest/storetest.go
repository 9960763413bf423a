// Package storetest is the contract of files.Store as a test suite: one
// table of cases that every implementation — the embedded DirStore and the
// S3-compatible store — must pass the same way. A backend's own test calls
// Run with a function that opens a fresh, empty store of its kind.
//
// The cases cover put and get, byte ranges, copying into a workspace,
// keeping a hostile workspace's files, listing, owner isolation, expiry and
// sweeping, the byte budget, a second store over the same storage (a
// restart, or another replica whose evictions the first one sees) and
// streaming a file larger than any buffer a store may hold.
package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/files"
)

// Options configure the store a case opens, as DirOptions do.
type Options struct {
	TTL      time.Duration
	MaxBytes int64
	// Now is the clock the store must use for creation and expiry.
	Now func() time.Time
}

// Instance is one store under test, over its own storage.
type Instance struct {
	Store files.Store
	// Sweep removes every expired item now.
	Sweep func()
	// Holds reports whether the backing storage still holds any bytes of
	// item id (directory or objects), live or not.
	Holds func(id string) bool
	// Reopen opens another store over the same storage with the same
	// options: what a restart or a second replica sees.
	Reopen func() files.Store
	// Shared is true when stores over the same storage see each other's
	// changes while both run (replicas); false for a store that is only
	// ever reopened after the first one stopped.
	Shared bool
}

// Open opens a fresh, empty store for one test and registers its cleanup.
type Open func(t *testing.T, o Options) Instance

// harness is what each case works with.
type harness struct {
	Instance
	clock *clock
	ttl   time.Duration
}

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// ttl is the item lifetime every case uses.
const ttl = time.Hour

// testCase is one contract case with the byte budget its store gets.
type testCase struct {
	name   string
	budget int64
	run    func(t *testing.T, h *harness)
}

func cases() []testCase {
	return []testCase{
		{"put and get", 1 << 20, testPutGet},
		{"put refuses", 1 << 20, testPutRefuses},
		{"read ranges", 1 << 20, testReadRanges},
		{"copy to a workspace", 1 << 20, testCopyTo},
		{"keep skips what is not a plain file", 1 << 20, testKeepHostile},
		{"list newest first, own items only", 1 << 20, testList},
		{"owner isolation", 1 << 20, testOwners},
		{"expiry and sweep", 1 << 20, testExpiry},
		{"budget evicts the oldest", 10, testBudget},
		{"keep skips what exceeds the budget", 10, testKeepBudget},
		{"reopen sees what was kept", 1 << 20, testReopen},
		{"another replica's eviction is seen", 10, testEvictedElsewhere},
		{"large files stream", 1 << 30, testLarge},
		{"remove", 1 << 20, testRemove},
	}
}

// Run runs every case against stores opened by open.
func Run(t *testing.T, open Open) {
	for _, tc := range cases() {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
			in := open(t, Options{TTL: ttl, MaxBytes: tc.budget, Now: c.now})
			tc.run(t, &harness{Instance: in, clock: c, ttl: ttl})
		})
	}
}

// Principals the cases act as.
var (
	alice = func() context.Context { return withPrincipal("alice") }
	bob   = func() context.Context { return withPrincipal("bob") }
)
