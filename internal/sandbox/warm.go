package sandbox

import (
	_ "embed"
	"fmt"
	"github.com/codexec/codexec/internal/proc"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Warm runners. Starting an isolated interpreter costs a sandbox (namespaces,
// mounts, cgroup, Landlock) plus the interpreter's own start-up, ~25 ms on the
// request path. A warm runner is that whole thing done ahead of time: a
// sandboxed python or node that has finished starting and waits on a control
// socket (fd 3) for exactly one run. A run takes a runner, binds its
// workspace into it, hands it cwd, environment, code and arguments, and the
// runner executes the code as `python -c` / `node -e` would. When the run
// ends the runner is destroyed like any other run (group kill, cgroup and
// mounts removed); nothing is ever reused, so a run's isolation is the same
// as a cold start's by construction: its own namespaces, /tmp, cgroup,
// seccomp filter, Landlock domain and interpreter process.
//
// Runners are started in the background, one kind (interpreter, flags,
// environment minus HOME, mounts, limits) at a time, with a low CPU weight
// until taken, so refills never take CPU from running code.

// Runner kinds a Spec may ask for (Spec.Warm).
const (
	WarmPython = "python"
	WarmNode   = "node"
)

// The python stubs share python_run.py, which runs the code once its
// cwd and environment are the run's.
var (
	//go:embed python_run.py
	pythonRun string
	//go:embed runner_python.py
	runnerPython string
	// pythonStub is a python warm runner's -c program.
	pythonStub = pythonRun + "\n" + runnerPython
)

//go:embed runner_node.js
var nodeStub string

// PoolOptions configure warm runners (CODEXEC_POOL_*).
type PoolOptions struct {
	// Size is the most ready runners kept per kind; 0 disables warm runners.
	Size int
	// Idle stops a kind's runners when no run asked for that kind for this
	// long (0: one minute).
	Idle time.Duration
	// MemoryBytes caps the memory of all ready runners together (0: 256 MiB).
	MemoryBytes int64
	// Fills bounds concurrent runner start-ups (0: 2).
	Fills int
	// Fork serves python runs from runners forked by a fork-server (see
	// zygote.go) where the kernel has Landlock ABI ≥ 6; false: every runner
	// starts its own interpreter.
	Fork bool
}

func (o PoolOptions) withDefaults() PoolOptions {
	if o.Idle <= 0 {
		o.Idle = time.Minute
	}
	if o.MemoryBytes <= 0 {
		o.MemoryBytes = 256 << 20
	}
	if o.Fills <= 0 {
		o.Fills = 2
	}
	return o
}

// PoolStat is the state of the warm runners of one kind.
type PoolStat struct {
	// Kind is "python" or "node"; Key distinguishes kinds started with
	// different flags, environment, mounts or limits.
	Kind string
	Key  string
	// Ready runners wait for a run; Starting are being started; Target is
	// how many the pool currently aims to keep (grows on misses, drops to 0
	// after the idle expiry).
	Ready, Starting, Target int
	// Hits are runs served warm; Misses runs that found no ready runner.
	Hits, Misses uint64
	// MemoryBytes is what the ready runners hold.
	MemoryBytes int64
}

// Pooled is implemented by backends that keep warm runners.
type Pooled interface {
	// PoolStats returns the state of every kind, sorted by kind.
	PoolStats() []PoolStat
	// PoolTallies returns how many runs of each language kind were served
	// warm and cold since the backend started.
	PoolTallies() []PoolTally
}

// warmRequest is a Spec split into what its runner is started with (key,
// base) and what a run applies at take time (the rest of the Spec).
type warmRequest struct {
	kind string
	key  string
	// base starts the runner: Argv is interpreter, flags, -c|-e, stub;
	// Env is the run's without HOME; no Dir.
	base Spec
	code string
	args []string
	// fork: served by runners forked from a python zygote (zygote.go).
	fork bool
}

// parseWarm reports whether spec can be served by a warm runner: a
// python `-c` or node `-e` program without a program directory.
func parseWarm(spec Spec) (warmRequest, bool) {
	flag, stub := "-c", pythonStub
	switch spec.Warm {
	case WarmPython:
	case WarmNode:
		flag, stub = "-e", nodeStub
	default:
		return warmRequest{}, false
	}
	i := slices.Index(spec.Argv, flag)
	// spec.TmpDir (a bounded disk's /tmp) is not given to a runner: mounted
	// over the runner's /tmp it would fall outside its Landlock rule
	// (Landlock's path walk skips mount points). A warm run keeps the
	// runner's own size-limited tmpfs /tmp; see SECURITY.md (disk).
	if spec.ProgramDir != "" || spec.Network || i < 1 || i+1 >= len(spec.Argv) {
		return warmRequest{}, false
	}
	flags := spec.Argv[1:i]
	for _, f := range flags {
		if strings.HasPrefix(f, "--input-type") { // ES modules: not an -e script
			return warmRequest{}, false
		}
	}
	env := []string{"HOME=/nonexistent"}
	for _, kv := range spec.Env {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "PWD=") {
			env = append(env, kv)
		}
	}
	argv := append(append([]string{spec.Argv[0]}, flags...), flag, stub)
	base := Spec{ID: "warm", Argv: argv, Env: env, Mounts: spec.Mounts, Limits: spec.Limits}
	key := fmt.Sprintf("%s %q %q %v %+v", spec.Warm, argv[:len(argv)-1], env, spec.Mounts, spec.Limits)
	return warmRequest{kind: spec.Warm, key: key, base: base, code: spec.Argv[i+1], args: spec.Argv[i+2:]}, true
}

// refillDefer bounds how long a refill waits for the runs in flight to end
// (see quietGate): long enough for a short run to finish, short enough that
// steady load still gets runners.
const refillDefer = 100 * time.Millisecond

// runnerStarter starts one runner for a request; backends implement it.
type runnerStarter func(req warmRequest) (warmRunner, error)

// warmKind is the pool's state for one key.
type warmKind struct {
	req      warmRequest
	ready    []warmRunner
	starting int
	// launching counts the starting runners past the refill gate (in
	// start); waiters are runs waiting for them, at most one each.
	launching    int
	waiters      []chan warmRunner
	target       int
	lastUse      time.Time
	hits, misses uint64
	memEstimate  int64
}

// warmPool keeps ready runners per kind. It is safe for concurrent use.
type warmPool struct {
	opts  PoolOptions
	start runnerStarter
	fills chan struct{}
	// quiet holds refills back while one-shot runs are in flight.
	quiet *quietGate

	mu     sync.Mutex
	kinds  map[string]*warmKind
	tally  map[string]*PoolTally // by kind name, for the life of the pool
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup
}

func newWarmPool(opts PoolOptions, start runnerStarter) *warmPool {
	opts = opts.withDefaults()
	p := &warmPool{opts: opts, start: start, fills: make(chan struct{}, opts.Fills), quiet: newQuietGate(),
		tally: map[string]*PoolTally{},
		kinds: map[string]*warmKind{}, done: make(chan struct{})}
	if opts.Size > 0 {
		p.wg.Add(1)
		go p.expireLoop()
	}
	return p
}

// take returns a ready runner for req, or nil (a miss: the caller starts
// the run cold). Either way it records the demand and starts refills. With
// none ready but one already launching that no other run waits for, it
// waits for that one (at most missWait): cheaper in CPU than a cold start
// beside it, and on a small machine about as fast.
func (p *warmPool) take(req warmRequest) warmRunner {
	if p == nil || p.opts.Size == 0 {
		return nil
	}
	r, wait := p.takeOrQueue(req)
	if wait == nil {
		return r
	}
	t := time.NewTimer(missWait)
	defer t.Stop()
	select {
	case r = <-wait:
		return r
	case <-t.C:
	case <-p.done:
	}
	return p.leaveQueue(req.key, wait)
}

// missWait bounds a run's wait for a launching runner (~75 ms from launch
// to ready on 2 cores; a cold start takes ~55 ms alone, more beside it).
const missWait = 100 * time.Millisecond

// takeOrQueue takes a ready runner, or queues for a launching one (wait
// non-nil), or neither (a cold start).
func (p *warmPool) takeOrQueue(req warmRequest) (warmRunner, chan warmRunner) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, nil
	}
	k := p.kinds[req.key]
	if k == nil {
		k = &warmKind{req: req, memEstimate: 16 << 20}
		p.kinds[req.key] = k
		slog.Info("warm runners: new kind", "kind", req.kind, "size", p.opts.Size)
	}
	k.lastUse = time.Now()
	defer p.fillLocked(k)
	if len(k.ready) > 0 {
		r := k.ready[0]
		k.ready = k.ready[1:]
		p.servedLocked(k, true)
		return r, nil
	}
	if k.launching > len(k.waiters) {
		// Not a miss (yet), but demand the pool did not meet: the kind
		// grows, and its next runner starts when the refill gate lets it
		// (after this run, not beside the runner it waits for).
		k.target = min(p.opts.Size, k.target+1)
		wait := make(chan warmRunner, 1)
		k.waiters = append(k.waiters, wait)
		return nil, wait
	}
	p.missLocked(k)
	return nil, nil
}

// missLocked records a run served cold and lets the kind grow.
func (p *warmPool) missLocked(k *warmKind) {
	p.servedLocked(k, false)
	k.target = min(p.opts.Size, k.target+1)
}

// leaveQueue gives up waiting; a runner handed over meanwhile is kept,
// else the run is a miss.
func (p *warmPool) leaveQueue(key string, wait chan warmRunner) warmRunner {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := p.kinds[key]
	if k != nil {
		k.waiters = slices.DeleteFunc(k.waiters, func(c chan warmRunner) bool { return c == wait })
	}
	select {
	case r := <-wait:
		return r
	default:
	}
	if k != nil && !p.closed {
		p.missLocked(k)
		p.fillLocked(k)
	}
	return nil
}

// demand makes req's kind wanted (at least one ready runner) without
// taking a runner, so one starts before the first run asks.
func (p *warmPool) demand(req warmRequest) {
	if p == nil || p.opts.Size == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	k := p.kinds[req.key]
	if k == nil {
		k = &warmKind{req: req, memEstimate: 16 << 20}
		p.kinds[req.key] = k
	}
	k.lastUse, k.target = time.Now(), max(k.target, 1)
	p.fillLocked(k)
}

// fillLocked starts runners until the kind has its target, within the
// memory cap.
func (p *warmPool) fillLocked(k *warmKind) {
	for !p.closed && len(k.ready)+k.starting < k.target && p.memoryLocked()+k.memEstimate <= p.opts.MemoryBytes {
		k.starting++
		p.wg.Add(1)
		go p.fill(k)
	}
}

// memoryLocked is the memory held by ready runners plus an estimate for
// the ones starting.
func (p *warmPool) memoryLocked() int64 {
	var total int64
	for _, k := range p.kinds {
		for _, r := range k.ready {
			total += r.memory()
		}
		total += int64(k.starting) * k.memEstimate
	}
	return total
}

func (p *warmPool) fill(k *warmKind) {
	defer p.wg.Done()
	p.quiet.wait(refillDefer, p.done)
	select {
	case p.fills <- struct{}{}:
	case <-p.done:
		p.mu.Lock()
		k.starting--
		p.mu.Unlock()
		return
	}
	t0 := time.Now()
	p.mu.Lock()
	k.launching++
	p.mu.Unlock()
	r, err := p.start(k.req)
	<-p.fills
	if err != nil {
		slog.Warn("warm runner failed to start", "kind", k.req.kind, "err", err)
	} else {
		slog.Debug("warm runner ready", "kind", k.req.kind, "ms", time.Since(t0).Milliseconds(), "mem_mb", r.memory()>>20)
	}
	if !p.keep(k, r) && r != nil {
		r.destroy()
	}
}

// keep hands a started runner (nil: it failed) to a run waiting for one,
// or adds it to its kind unless the pool closed or no longer wants it, and
// tops the kind up.
func (p *warmPool) keep(k *warmKind, r warmRunner) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	k.starting--
	k.launching--
	if r == nil {
		if len(k.waiters) > k.launching { // one waiter too many now: cold
			k.waiters[0] <- nil
			k.waiters = k.waiters[1:]
		}
		return false
	}
	k.memEstimate = max(r.memory(), 1<<20)
	if p.closed {
		return false
	}
	if len(k.waiters) > 0 {
		k.waiters[0] <- r
		k.waiters = k.waiters[1:]
		p.servedLocked(k, true)
		p.fillLocked(k)
		return true
	}
	if len(k.ready) >= k.target {
		return false
	}
	k.ready = append(k.ready, r)
	p.fillLocked(k)
	return true
}

// expireLoop stops the runners of kinds nobody asked for within Idle.
func (p *warmPool) expireLoop() {
	defer p.wg.Done()
	t := time.NewTicker(max(p.opts.Idle/4, 50*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			p.expire(time.Now())
		}
	}
}

func (p *warmPool) expire(now time.Time) {
	p.mu.Lock()
	var stale []warmRunner
	for key, k := range p.kinds {
		if now.Sub(k.lastUse) < p.opts.Idle {
			continue
		}
		if len(k.ready) > 0 {
			slog.Info("warm runners: idle kind stopped", "kind", k.req.kind, "runners", len(k.ready))
		}
		stale = append(stale, k.ready...)
		k.ready, k.target = nil, 0
		if k.starting == 0 {
			delete(p.kinds, key)
		}
	}
	p.mu.Unlock()
	for _, r := range stale {
		r.destroy()
	}
}

// stats returns the state of every kind.
func (p *warmPool) stats() []PoolStat {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]PoolStat, 0, len(p.kinds))
	for key, k := range p.kinds {
		s := PoolStat{Kind: k.req.kind, Key: key, Ready: len(k.ready), Starting: k.starting, Target: k.target,
			Hits: k.hits, Misses: k.misses}
		for _, r := range k.ready {
			s.MemoryBytes += r.memory()
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind+out[i].Key < out[j].Kind+out[j].Key })
	return out
}

// close stops every runner and waits for starting ones.
func (p *warmPool) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.done)
	var all []warmRunner
	for _, k := range p.kinds {
		all = append(all, k.ready...)
		k.ready = nil
	}
	p.mu.Unlock()
	for _, r := range all {
		r.destroy()
	}
	p.wg.Wait()
}

// gate is the pool's count of runs in flight (a nil pool has its own,
// which nothing waits on).
func (p *warmPool) gate() *quietGate {
	if p == nil {
		return newQuietGate()
	}
	return p.quiet
}

// PoolTally counts the runs of one kind (python, node) since the backend
// started: Warm were served by a runner, Cold found none. Unlike PoolStat's
// counts they never go back: a kind that expires keeps its tally.
type PoolTally struct {
	Kind       string
	Warm, Cold uint64
}

// servedLocked counts a run of k's kind, served warm or not.
func (p *warmPool) servedLocked(k *warmKind, warm bool) {
	t := p.tally[k.req.kind]
	if t == nil {
		t = &PoolTally{Kind: k.req.kind}
		p.tally[k.req.kind] = t
	}
	if warm {
		k.hits++
		t.Warm++
	} else {
		k.misses++
		t.Cold++
	}
}

// tallies returns every kind's tally, sorted by kind.
func (p *warmPool) tallies() []PoolTally {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]PoolTally, 0, len(p.tally))
	for _, t := range p.tally {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// await waits up to d for a ready runner of kind (WarmPython, WarmNode)
// and returns its kind's state; false if none became ready.
func (p *warmPool) await(kind string, d time.Duration) (PoolStat, bool) {
	if p == nil || p.opts.Size == 0 {
		return PoolStat{}, false
	}
	for deadline := time.Now().Add(d); ; time.Sleep(5 * time.Millisecond) {
		for _, s := range p.stats() {
			if s.Kind == kind && s.Ready > 0 {
				return s, true
			}
		}
		if time.Now().After(deadline) {
			return PoolStat{}, false
		}
	}
}

// serve starts a run that a runner of req can serve: in a taken runner
// (warm) if one is ready and takes the run, else with cold. The run counts
// as in flight until released, so that refills wait for its end.
func (p *warmPool) serve(req warmRequest, warm func(warmRunner) (*proc.HostProc, error), cold func() (*proc.HostProc, error)) (Process, error) {
	gate := p.gate()
	gate.begin()
	proc, err := p.warmOrCold(req, warm, cold)
	if err != nil {
		gate.end()
		return nil, err
	}
	return &countedProc{Process: proc, end: gate.end}, nil
}

func (p *warmPool) warmOrCold(req warmRequest, warm func(warmRunner) (*proc.HostProc, error), cold func() (*proc.HostProc, error)) (*proc.HostProc, error) {
	if r := p.take(req); r != nil {
		proc, err := warm(r)
		if err == nil {
			return proc, nil
		}
		slog.Debug("warm runner unusable for this run; starting cold", "err", err)
	}
	return cold()
}
