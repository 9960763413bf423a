package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAccountHomes(t *testing.T) {
	passwd := "root:x:0:0:root:/root:/bin/bash\n" +
		"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n" +
		"bob:x:1000:1000:Bob,,,:/home/bob/:/bin/bash\n" +
		"twin:x:1001:1001::/home/bob:/bin/sh\n" +
		"broken line\n" +
		"rel:x:1002:1002::home/rel:/bin/sh\n" +
		"\n"
	p := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(p, []byte(passwd), 0o644); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/root", "/usr/sbin", "/home/bob"}, accountHomes(p)); diff != "" {
		t.Errorf("accountHomes (-want +got):\n%s", diff)
	}
	if got := accountHomes(filepath.Join(t.TempDir(), "missing")); got != nil {
		t.Errorf("accountHomes of a missing file = %v, want none", got)
	}
}
