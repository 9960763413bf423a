package sandboxfake_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxfake"
)

// A test scripts what each run does from its spec, starts runs as the
// engine would, and reads back the specs it was asked for.
func ExampleNew() {
	b := sandboxfake.New(func(spec sandbox.Spec) sandboxfake.Outcome {
		if spec.Argv[0] == "/bin/false" {
			return sandboxfake.Outcome{Stderr: "failed\n", Exit: sandbox.Exit{Code: 1}}
		}
		return sandboxfake.Outcome{Stdout: "hello\n"}
	}, true)
	for _, argv := range [][]string{{"/bin/echo", "hello"}, {"/bin/false"}} {
		var out, errOut bytes.Buffer
		p, err := b.Start(context.Background(), sandbox.Spec{Argv: argv, Stdout: &out, Stderr: &errOut})
		if err != nil {
			fmt.Println(err)
			return
		}
		exit, _ := p.Wait()
		_ = p.Release(0)
		fmt.Printf("%s: exit %d, stdout %q, stderr %q\n", argv[0], exit.Code, out.String(), errOut.String())
	}
	fmt.Println(len(b.Specs()), "runs recorded")
	// Output:
	// /bin/echo: exit 0, stdout "hello\n", stderr ""
	// /bin/false: exit 1, stdout "", stderr "failed\n"
	// 2 runs recorded
}
