package quota

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestLocalBusy(t *testing.T) {
	l := NewLocal(2, 50*time.Millisecond)
	ctx := context.Background()
	r1, err1 := l.Acquire(ctx, "alice")
	r2, err2 := l.Acquire(ctx, "alice")
	if err1 != nil || err2 != nil {
		t.Fatalf("first two slots: %v %v", err1, err2)
	}
	if _, err := l.Acquire(ctx, "alice"); !errors.Is(err, ErrBusy) {
		t.Fatalf("third slot of alice: err = %v, want ErrBusy", err)
	}
	// Another principal is not affected by alice's full quota.
	rb, err := l.Acquire(ctx, "bob")
	if err != nil {
		t.Fatalf("bob: %v", err)
	}
	rb()
	r1()
	r1() // a second release is a no-op
	if n := l.Running("alice"); n != 1 {
		t.Errorf("alice holds %d slots, want 1", n)
	}
	r2()
	if len(l.per) != 0 {
		t.Errorf("entries left after every release: %v", l.per)
	}
}

func TestLocalQueues(t *testing.T) {
	l := NewLocal(1, time.Minute)
	r1, err := l.Acquire(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(10 * time.Millisecond); r1() }()
	r2, err := l.Acquire(context.Background(), "alice")
	if err != nil {
		t.Fatalf("queued acquire: %v", err)
	}
	r2()
}

func TestLocalCancelledWait(t *testing.T) {
	l := NewLocal(1, time.Minute)
	rel, err := l.Acquire(context.Background(), "p")
	if err != nil {
		t.Fatal(err)
	}
	defer rel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Acquire(ctx, "p"); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestUnlimited(t *testing.T) {
	if NewLocal(0, time.Second) != nil {
		t.Error("max 0 must mean no limiter")
	}
}

// TestKeep: a call's slot is freed when the call returns unless a
// background run took it over, which then frees it once.
func TestKeep(t *testing.T) {
	l := NewLocal(1, 10*time.Millisecond)
	acquire := func() (context.Context, func()) {
		release, err := l.Acquire(context.Background(), "alice")
		if err != nil {
			t.Fatal(err)
		}
		return WithSlot(context.Background(), release)
	}
	_, done := acquire()
	done()
	if n := l.Running("alice"); n != 0 {
		t.Fatalf("a call that returned holds %d slots", n)
	}
	ctx, done := acquire()
	kept := Keep(ctx)
	if again := Keep(ctx); again == nil {
		t.Fatal("a second Keep returned nil")
	}
	done()
	if n := l.Running("alice"); n != 1 {
		t.Fatalf("the kept slot: %d held after the call returned, want 1", n)
	}
	kept()
	kept()
	if n := l.Running("alice"); n != 0 {
		t.Fatalf("after the run ended: %d held", n)
	}
	Keep(context.Background())() // no slot: frees nothing
}
