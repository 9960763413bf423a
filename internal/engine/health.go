package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/runtime"
)

// healthProbes are the trivial programs that prove a language runs under the
// sandbox backend.
var healthProbes = map[string]string{runtime.Python: "print('ok')", runtime.Node: "console.log('ok')", runtime.Bash: "echo ok"}

// StartHealthCheck probes every language through the sandbox backend in the
// background and returns at once; the channel delivers each language's result
// when all are done. The probes start after delay, or as soon as something
// waits for a result (LanguageError), so that at start-up they do not take
// the CPU from the first runs. Runs do not wait for a pending probe; a run
// that fails does (LanguageError), to report a broken language as
// unavailable, and so do sessions. Call it at most once, before serving.
func (e *Engine) StartHealthCheck(ctx context.Context, delay time.Duration) <-chan map[string]error {
	done := make(map[string]chan struct{}, len(healthProbes))
	for lang := range healthProbes {
		done[lang] = make(chan struct{})
	}
	e.mu.Lock()
	e.checking = done
	e.mu.Unlock()
	kick := e.kickCheck
	out := make(chan map[string]error, 1)
	go func() {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-kick:
		case <-ctx.Done():
			// Stopping before the probes ran: nothing was found wrong.
			for _, ch := range done {
				close(ch)
			}
			out <- map[string]error{}
			return
		}
		out <- e.runProbes(ctx, done)
	}()
	return out
}

// runProbes runs every probe at once, closing each language's done channel
// as its probe ends, and returns the results.
func (e *Engine) runProbes(ctx context.Context, done map[string]chan struct{}) map[string]error {
	res := make(map[string]error, len(healthProbes))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for lang, code := range healthProbes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := e.probe(ctx, lang, code)
			e.record(lang, err)
			mu.Lock()
			res[lang] = err
			mu.Unlock()
			close(done[lang])
		}()
	}
	wg.Wait()
	return res
}

func (e *Engine) record(lang string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.unavailable[lang] = err
	} else {
		delete(e.unavailable, lang)
	}
}

// awaitCheck blocks until lang's health check, if one was started, is done.
// A probe is bounded by its own timeout, so this never waits long.
func (e *Engine) awaitCheck(lang string) {
	e.mu.RLock()
	ch := e.checking[lang]
	e.mu.RUnlock()
	if ch != nil {
		e.kickOnce.Do(func() { close(e.kickCheck) })
		<-ch
	}
}

// probe runs lang's probe, and once more when the first attempt fails:
// a docker-compatible CLI can lose the output of a container that exits at
// once (podman's attach drops it now and then under load, a known race on
// its side), and one lost line must not mark a working language
// unavailable for the server's whole life. A language that is broken fails
// both.
func (e *Engine) probe(ctx context.Context, lang, code string) error {
	err := e.probeOnce(ctx, lang, code)
	if err == nil || ctx.Err() != nil || e.langs.Get(lang).Err != nil {
		return err
	}
	slog.Warn("health check failed once; trying again", "language", lang, "err", err)
	return e.probeOnce(ctx, lang, code)
}

func (e *Engine) probeOnce(ctx context.Context, lang, code string) error {
	if err := e.langs.Get(lang).Err; err != nil {
		return err
	}
	r, err := e.Execute(ctx, Request{Language: lang, Code: code, Timeout: 20 * time.Second, NoLog: true, Background: true, Cold: true})
	if err != nil {
		return err
	}
	if r.Status == StatusCancelled {
		// The server is stopping: that says nothing against the language,
		// and calls already waiting for this probe must still run.
		slog.Debug("health check cancelled", "language", lang)
		return nil
	}
	if r.Status != StatusSuccess || strings.TrimSpace(r.Stdout) != "ok" {
		return fmt.Errorf("health check under %s sandbox failed: status %s, %s %s", e.backend.Name(), r.Status, deref(r.ErrorMessage), strings.TrimSpace(r.Stderr))
	}
	slog.Debug("health check passed", "language", lang, "ms", r.DurationMs)
	return nil
}
