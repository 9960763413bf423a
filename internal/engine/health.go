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
// when all are done. Until a language's probe finishes, LanguageError (and so
// the first run or session in that language) waits for it; afterwards a
// failing language is reported unavailable and the rest keep working. Call it
// at most once, before serving.
func (e *Engine) StartHealthCheck(ctx context.Context) <-chan map[string]error {
	done := make(map[string]chan struct{}, len(healthProbes))
	for lang := range healthProbes {
		done[lang] = make(chan struct{})
	}
	e.mu.Lock()
	e.checking = done
	e.mu.Unlock()
	out := make(chan map[string]error, 1)
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
	go func() { wg.Wait(); out <- res }()
	return out
}

// HealthCheck is StartHealthCheck waited for.
func (e *Engine) HealthCheck(ctx context.Context) map[string]error {
	return <-e.StartHealthCheck(ctx)
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
		<-ch
	}
}

func (e *Engine) probe(ctx context.Context, lang, code string) error {
	if err := e.langs.Get(lang).Err; err != nil {
		return err
	}
	r, err := e.Execute(ctx, Request{Language: lang, Code: code, Timeout: 20 * time.Second, NoLog: true, Background: true})
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
