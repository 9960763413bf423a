package warm

import (
	_ "embed"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
)

// The python stubs share python_run.py, which runs the code once its
// cwd and environment are the run's.
var (
	//go:embed python_run.py
	PythonRun string
	//go:embed runner_python.py
	runnerPython string
	// pythonStub is a python warm runner's -c program.
	pythonStub = PythonRun + "\n" + runnerPython
)

//go:embed runner_node.js
var nodeStub string

// withDefaults fills the zero fields of o with their defaults.
func withDefaults(o sandbox.PoolOptions) sandbox.PoolOptions {
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

// Request is a sandbox.Spec split into what its runner is started with (key,
// base) and what a run applies at take time (the rest of the sandbox.Spec).
type Request struct {
	Kind string
	Key  string
	// Base starts the runner: Argv is interpreter, flags, -c|-e, stub;
	// Env is the run's without HOME; no Dir. For an exec runner (Exec)
	// Argv ends at -c: the backend starts the helper's stub for it.
	Base sandbox.Spec
	// Code and Args are the run's program and its arguments.
	Code string
	Args []string
	// Fork: served by runners forked from a python zygote (namespace mode).
	Fork bool
	// Exec: served by exec runners (bash): the helper waits in the
	// sandbox in the interpreter's place and, given the run, executes
	// Base.Argv, the code and the arguments (helper.RunnerCommand).
	Exec bool
}

// Parse reports whether spec can be served by a warm runner: a python
// or bash `-c` or node `-e` program without a program directory.
func Parse(spec sandbox.Spec) (Request, bool) {
	flag, stub := "-c", pythonStub
	switch spec.Warm {
	case sandbox.WarmPython:
	case sandbox.WarmNode:
		flag, stub = "-e", nodeStub
	case sandbox.WarmBash:
		stub = "" // an exec runner: no stub of its own
	default:
		return Request{}, false
	}
	i := slices.Index(spec.Argv, flag)
	// spec.TmpDir (a bounded disk's /tmp) is not given to a runner: mounted
	// over the runner's /tmp it would fall outside its Landlock rule
	// (Landlock's path walk skips mount points). A warm run keeps the
	// runner's own size-limited tmpfs /tmp; see SECURITY.md (disk).
	if spec.ProgramDir != "" || spec.Network || i < 1 || i+1 >= len(spec.Argv) {
		return Request{}, false
	}
	flags := spec.Argv[1:i]
	for _, f := range flags {
		if strings.HasPrefix(f, "--input-type") { // ES modules: not an -e script
			return Request{}, false
		}
	}
	env := []string{"HOME=/nonexistent"}
	for _, kv := range spec.Env {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "PWD=") {
			env = append(env, kv)
		}
	}
	argv := append(append([]string{spec.Argv[0]}, flags...), flag)
	key := fmt.Sprintf("%s %q %q %v %+v", spec.Warm, argv, env, spec.Mounts, spec.Limits)
	if stub != "" {
		argv = append(argv, stub)
	}
	base := sandbox.Spec{ID: "warm", Argv: argv, Env: env, Mounts: spec.Mounts, Limits: spec.Limits}
	return Request{Kind: spec.Warm, Key: key, Base: base, Code: spec.Argv[i+1], Args: spec.Argv[i+2:], Exec: stub == ""}, true
}

// refillDefer bounds how long a refill waits for the runs in flight to end
// (see quietGate): long enough for a short run to finish, short enough that
// steady load still gets runners.
const refillDefer = 100 * time.Millisecond

// burstGap is how long no run must be in flight before a refill the next
// run does not need starts: longer than the gap between calls an agent
// fires back to back (a client round trip, about a millisecond).
const burstGap = 20 * time.Millisecond

// Starter starts one runner for a request; backends implement it.
type Starter func(req Request) (Runner, error)

// warmKind is the pool's state for one key.
type warmKind struct {
	req      Request
	ready    []Runner
	starting int
	// launching counts the starting runners past the refill gate (in
	// start); waiters are runs waiting for them, at most one each.
	launching int
	waiters   []chan Runner
	target    int
	lastUse   time.Time
	// lastShort is when a run last found no runner ready (a burst): the
	// kind keeps its runners above Size until Idle after it.
	lastShort    time.Time
	hits, misses uint64
	memEstimate  int64
}

// Pool keeps ready runners per kind. It is safe for concurrent use.
type Pool struct {
	opts  sandbox.PoolOptions
	start Starter
	fills chan struct{}
	// quiet holds refills back while one-shot runs are in flight.
	quiet *quietGate

	mu     sync.Mutex
	kinds  map[string]*warmKind
	tally  map[string]*sandbox.PoolTally // by kind name, for the life of the pool
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup
}

func NewPool(opts sandbox.PoolOptions, start Starter) *Pool {
	opts = withDefaults(opts)
	p := &Pool{opts: opts, start: start, fills: make(chan struct{}, opts.Fills), quiet: newQuietGate(),
		tally: map[string]*sandbox.PoolTally{},
		kinds: map[string]*warmKind{}, done: make(chan struct{})}
	if opts.Size > 0 {
		p.wg.Add(1)
		go p.expireLoop()
	}
	return p
}

// Take returns a ready runner for req, or nil (a miss: the caller starts
// the run cold). Either way it records the demand and starts refills. With
// none ready but one already launching that no other run waits for, it
// waits for that one (at most missWait): cheaper in CPU than a cold start
// beside it, and on a small machine about as fast.
func (p *Pool) Take(req Request) Runner {
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
	return p.leaveQueue(req.Key, wait)
}

// missWait bounds a run's wait for a launching runner (~75 ms from launch
// to ready on 2 cores; a cold start takes ~55 ms alone, more beside it).
const missWait = 100 * time.Millisecond

// takeOrQueue takes a ready runner, or queues for a launching one (wait
// non-nil), or neither (a cold start).
func (p *Pool) takeOrQueue(req Request) (Runner, chan Runner) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, nil
	}
	k := p.kinds[req.Key]
	if k == nil {
		k = &warmKind{req: req, memEstimate: 16 << 20}
		p.kinds[req.Key] = k
		slog.Info("warm runners: new kind", "kind", req.Kind, "size", p.opts.Size)
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
		p.growLocked(k)
		wait := make(chan Runner, 1)
		k.waiters = append(k.waiters, wait)
		return nil, wait
	}
	p.missLocked(k)
	return nil, nil
}

// missLocked records a run served cold and lets the kind grow.
func (p *Pool) missLocked(k *warmKind) {
	p.servedLocked(k, false)
	p.growLocked(k)
}

// growLocked adds one runner to k's target after a run found none ready:
// up to Size, then up to Burst. Runs that come faster than the pool
// refills (an agent's calls fired back to back) empty a pool of Size and
// leave every other run cold; the next burst of the same size then finds
// its runners ready, started in the pause between bursts rather than
// beside the runs. A burst costs the same CPU either way (one runner per
// run); what growth adds is memory, for Idle after the last burst.
func (p *Pool) growLocked(k *warmKind) {
	k.target = min(max(p.opts.Size, p.opts.Burst), k.target+1)
	k.lastShort = time.Now()
}

// leaveQueue gives up waiting; a runner handed over meanwhile is kept,
// else the run is a miss.
func (p *Pool) leaveQueue(key string, wait chan Runner) Runner {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := p.kinds[key]
	if k != nil {
		k.waiters = slices.DeleteFunc(k.waiters, func(c chan Runner) bool { return c == wait })
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

// Demand makes req's kind wanted (at least one ready runner) without
// taking a runner, so one starts before the first run asks.
func (p *Pool) Demand(req Request) {
	if p == nil || p.opts.Size == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	k := p.kinds[req.Key]
	if k == nil {
		k = &warmKind{req: req, memEstimate: 16 << 20}
		p.kinds[req.Key] = k
	}
	k.lastUse, k.target = time.Now(), max(k.target, 1)
	p.fillLocked(k)
}

// fillLocked starts runners until the kind has its target, within the
// memory cap.
func (p *Pool) fillLocked(k *warmKind) {
	for !p.closed && len(k.ready)+k.starting < k.target && p.memoryLocked()+k.memEstimate <= p.opts.MemoryBytes {
		k.starting++
		p.wg.Add(1)
		go p.fill(k)
	}
}

// memoryLocked is the memory held by ready runners plus an estimate for
// the ones starting.
func (p *Pool) memoryLocked() int64 {
	var total int64
	for _, k := range p.kinds {
		for _, r := range k.ready {
			total += r.Memory()
		}
		total += int64(k.starting) * k.memEstimate
	}
	return total
}

func (p *Pool) fill(k *warmKind) {
	defer p.wg.Done()
	p.mu.Lock()
	spare := len(k.ready) > 0
	p.mu.Unlock()
	if spare {
		// Not needed by the next run: started after the burst, not in
		// the millisecond gaps between its runs, whose CPU it would take.
		p.quiet.settle(burstGap, refillDefer, p.done)
	} else {
		p.quiet.wait(refillDefer, p.done)
	}
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
		slog.Warn("warm runner failed to start", "kind", k.req.Kind, "err", err)
	} else {
		slog.Debug("warm runner ready", "kind", k.req.Kind, "ms", time.Since(t0).Milliseconds(), "mem_mb", r.Memory()>>20)
	}
	if !p.keep(k, r) && r != nil {
		r.Destroy()
	}
}

// keep hands a started runner (nil: it failed) to a run waiting for one,
// or adds it to its kind unless the pool closed or no longer wants it, and
// tops the kind up.
func (p *Pool) keep(k *warmKind, r Runner) bool {
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
	k.memEstimate = max(r.Memory(), 1<<20)
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
func (p *Pool) expireLoop() {
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

func (p *Pool) expire(now time.Time) {
	p.mu.Lock()
	var stale []Runner
	for key, k := range p.kinds {
		if now.Sub(k.lastUse) < p.opts.Idle {
			stale = append(stale, p.shrinkLocked(k, now)...)
			continue
		}
		if len(k.ready) > 0 {
			slog.Info("warm runners: idle kind stopped", "kind", k.req.Kind, "runners", len(k.ready))
		}
		stale = append(stale, k.ready...)
		k.ready, k.target = nil, 0
		if k.starting == 0 {
			delete(p.kinds, key)
		}
	}
	p.mu.Unlock()
	for _, r := range stale {
		r.Destroy()
	}
}

// shrinkLocked takes a kind that grew in a burst back to Size once no run
// found it short for Idle, and returns the ready runners above Size.
func (p *Pool) shrinkLocked(k *warmKind, now time.Time) []Runner {
	if k.target <= p.opts.Size || now.Sub(k.lastShort) < p.opts.Idle {
		return nil
	}
	k.target = p.opts.Size
	if len(k.ready) <= k.target {
		return nil
	}
	extra := k.ready[k.target:]
	k.ready = k.ready[:k.target:k.target]
	slog.Info("warm runners: burst over", "kind", k.req.Kind, "stopped", len(extra))
	return extra
}

// Stats returns the state of every kind.
func (p *Pool) Stats() []sandbox.PoolStat {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]sandbox.PoolStat, 0, len(p.kinds))
	for key, k := range p.kinds {
		s := sandbox.PoolStat{Kind: k.req.Kind, Key: key, Ready: len(k.ready), Starting: k.starting, Target: k.target,
			Hits: k.hits, Misses: k.misses}
		for _, r := range k.ready {
			s.MemoryBytes += r.Memory()
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind+out[i].Key < out[j].Kind+out[j].Key })
	return out
}

// Close stops every runner and waits for starting ones.
func (p *Pool) Close() {
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
	var all []Runner
	for _, k := range p.kinds {
		all = append(all, k.ready...)
		k.ready = nil
	}
	p.mu.Unlock()
	for _, r := range all {
		r.Destroy()
	}
	p.wg.Wait()
}

// gate is the pool's count of runs in flight (a nil pool has its own,
// which nothing waits on).
func (p *Pool) gate() *quietGate {
	if p == nil {
		return newQuietGate()
	}
	return p.quiet
}

// servedLocked counts a run of k's kind, served warm or not.
func (p *Pool) servedLocked(k *warmKind, warm bool) {
	t := p.tally[k.req.Kind]
	if t == nil {
		t = &sandbox.PoolTally{Kind: k.req.Kind}
		p.tally[k.req.Kind] = t
	}
	if warm {
		k.hits++
		t.Warm++
	} else {
		k.misses++
		t.Cold++
	}
}

// Tallies returns every kind's tally, sorted by kind.
func (p *Pool) Tallies() []sandbox.PoolTally {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]sandbox.PoolTally, 0, len(p.tally))
	for _, t := range p.tally {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// Await waits up to d for a ready runner of kind (sandbox.WarmPython,
// sandbox.WarmNode, sandbox.WarmBash) and returns its kind's state; false
// if none became ready.
func (p *Pool) Await(kind string, d time.Duration) (sandbox.PoolStat, bool) {
	if p == nil || p.opts.Size == 0 {
		return sandbox.PoolStat{}, false
	}
	for deadline := time.Now().Add(d); ; time.Sleep(5 * time.Millisecond) {
		for _, s := range p.Stats() {
			if s.Kind == kind && s.Ready > 0 {
				return s, true
			}
		}
		if time.Now().After(deadline) {
			return sandbox.PoolStat{}, false
		}
	}
}

// Serve starts a run that a runner of req can serve: in a taken runner
// (warm) if one is ready and takes the run, else with cold. The run counts
// as in flight until released, so that refills wait for its end.
func (p *Pool) Serve(req Request, warm func(Runner) (*proc.HostProc, error), cold func() (*proc.HostProc, error)) (sandbox.Process, error) {
	gate := p.gate()
	gate.begin()
	proc, err := p.warmOrCold(req, warm, cold)
	if err != nil {
		gate.end()
		return nil, err
	}
	return &countedProc{Process: proc, end: gate.end}, nil
}

func (p *Pool) warmOrCold(req Request, warm func(Runner) (*proc.HostProc, error), cold func() (*proc.HostProc, error)) (*proc.HostProc, error) {
	if r := p.Take(req); r != nil {
		proc, err := warm(r)
		if err == nil {
			return proc, nil
		}
		slog.Debug("warm runner unusable for this run; starting cold", "err", err)
	}
	return cold()
}
