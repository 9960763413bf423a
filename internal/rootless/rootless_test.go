package rootless

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestUserNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		wantFix string // "" means allowed
	}{
		{"default Debian", map[string]string{"/proc/sys/user/max_user_namespaces": "96362\n"}, ""},
		{"none allowed", map[string]string{"/proc/sys/user/max_user_namespaces": "0\n"}, "user.max_user_namespaces"},
		{"old Debian switch off", map[string]string{"/proc/sys/kernel/unprivileged_userns_clone": "0\n"}, "unprivileged_userns_clone=1"},
		{"Ubuntu AppArmor restriction", map[string]string{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1\n"}, "AppArmor profile"},
		{"Ubuntu restriction lifted", map[string]string{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "0\n"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for f, v := range tc.files {
				if err := os.MkdirAll(filepath.Dir(root+f), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(root+f, []byte(v), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := userNamespaces(root)
			if tc.wantFix == "" {
				if err != nil {
					t.Fatalf("got %v, want allowed", err)
				}
				return
			}
			if !errors.Is(err, ErrRestricted) || !strings.Contains(err.Error(), tc.wantFix) {
				t.Fatalf("got %v, want ErrRestricted naming %q", err, tc.wantFix)
			}
		})
	}
}

func TestReadInner(t *testing.T) {
	uid := os.Getuid()
	for _, tc := range []struct {
		name, value string
		set, want   bool
	}{
		{"absent", "", false, false},
		{"this process's ids", itoa(uid) + ":" + itoa(os.Getgid()), true, true},
		{"another uid", itoa(uid+1) + ":0", true, false},
		{"garbage", "x:y", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.set {
				t.Setenv(innerEnv, tc.value)
			} else {
				t.Setenv(innerEnv, "")
				os.Unsetenv(innerEnv)
			}
			ids, ok := readInner()
			if ok != tc.want || (ok && ids.UID != uid) {
				t.Fatalf("readInner() = %v, %v; want ok=%v", ids, ok, tc.want)
			}
			if _, still := os.LookupEnv(innerEnv); still {
				t.Fatalf("%s left in the environment", innerEnv)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
