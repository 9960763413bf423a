package errcode_test

import (
	"errors"
	"fmt"

	"github.com/codexec/codexec/internal/errcode"
)

// A domain package codes the failures a caller can cause; the code
// survives wrapping, and an uncoded error is the server's fault.
func ExampleOf() {
	err := errcode.New(errcode.InvalidParams, "timeout must be between 1 and %d seconds, got %d", 300, 0)
	wrapped := fmt.Errorf("execute_code: %w", err)
	fmt.Println(errcode.Of(wrapped))
	fmt.Println(wrapped)
	fmt.Println(errcode.Of(errors.New("disk on fire")))
	fmt.Println(errcode.Of(nil) == "")
	// Output:
	// INVALID_PARAMS
	// execute_code: timeout must be between 1 and 300 seconds, got 0
	// INTERNAL_ERROR
	// true
}
