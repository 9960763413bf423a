package cgroup

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Info describes the host's cgroup setup and where this server makes its
// groups.
type Info struct {
	// Version is 1 or 2 (0 when no usable cgroup hierarchy was found).
	Version int
	// Controllers lists the usable controllers codexec needs
	// (memory, pids, cpu, and freezer on v1), and on v1 cpuacct where it
	// is a hierarchy of its own that groups are made in too (to measure
	// CPU time; without it a v1 host measures none for runs it cannot reap).
	Controllers []string
	// Missing lists needed controllers that are absent.
	Missing []string
	// Parent is the cgroup path holding codexec's groups (v2: below Root;
	// v1: below each controller's hierarchy), empty for the default of a
	// server run as root.
	Parent string
	// Reason says why no group can be made there although the hierarchy
	// exists (not root and nothing delegated, a parent this process
	// cannot write, …), with the fix; empty when groups can be made.
	Reason string
	// bases are the directories holding codexec's groups, one per
	// hierarchy as v1Controllers (v2: one); nil: the default (parents).
	bases []string
	// top (v2) is the highest directory whose cgroup.subtree_control a
	// server enables the controllers in, down to its own directory;
	// empty: Root.
	top string
}

// Usable reports whether limits and group kill are possible.
func (i Info) Usable() bool {
	return i.Version != 0 && len(i.Missing) == 0 && i.Reason == ""
}

func (i Info) String() string {
	if i.Version == 0 {
		if i.Reason != "" {
			return "no usable cgroup: " + i.Reason
		}
		return "no cgroup hierarchy found"
	}
	s := fmt.Sprintf("cgroup v%d, controllers: %s", i.Version, strings.Join(i.Controllers, " "))
	if i.Parent != "" {
		s += ", groups below " + i.Parent
	}
	if len(i.Missing) > 0 {
		s += "; missing: " + strings.Join(i.Missing, " ")
	}
	if i.Reason != "" {
		s += "; unusable: " + i.Reason
	}
	return s
}

// Detect inspects /sys/fs/cgroup for a server run as root that makes its
// groups in the default place. A unified (v2-only) host is v2; a legacy or
// hybrid host whose v1 hierarchies carry the controllers is v1.
func Detect() Info {
	if b, err := os.ReadFile(filepath.Join(Root, "cgroup.controllers")); err == nil {
		return detectV2(string(b))
	}
	info := Info{Version: 1}
	for _, c := range v1Controllers {
		if _, err := os.Stat(filepath.Join(Root, c, "cgroup.procs")); err == nil {
			info.Controllers = append(info.Controllers, c)
		} else {
			info.Missing = append(info.Missing, c)
		}
	}
	if len(info.Controllers) == 0 {
		return Info{}
	}
	if separateAcct(Root) {
		info.Controllers = append(info.Controllers, acctController)
	}
	return info
}

func detectV2(controllers string) Info {
	info := Info{Version: 2}
	info.Controllers, info.Missing = split(v2Controllers, strings.Fields(controllers))
	return info
}

// split sorts the needed controllers into those in have and the rest.
func split(needed, have []string) (present, missing []string) {
	for _, c := range needed {
		if contains(have, c) {
			present = append(present, c)
		} else {
			missing = append(missing, c)
		}
	}
	return present, missing
}

// DetectIn is Detect for a server that makes its groups below parent (a
// cgroup path, as CODEXEC_CGROUP_PARENT; see Info.Parent) or, run by a
// user other than root without one, on v2 in the subtree the user's
// systemd manager (user@UID.service) delegates to that user. Unless it is
// Detect (root, no parent), it makes the directories it needs, enables
// the controllers in them (v2), and proves the place usable by making and
// removing a probe group there; an Info that is not usable says why.
func DetectIn(parent string) Info {
	if parent == "" && os.Geteuid() == 0 {
		return Detect()
	}
	h := host{root: Root, self: string(ownCgroupFile()), uid: os.Geteuid()}
	info := h.place(parent)
	if info.Usable() {
		if err := h.probe(info); err != nil {
			info.Reason = err.Error()
		}
	}
	if info.Usable() && info.Version == 1 {
		info = h.withAcct(info, parent)
	}
	return info
}

// withAcct adds the cpuacct hierarchy to a usable v1 info when it is
// mounted apart from cpu and groups can be made in it below parent; it is
// optional (only CPU time is measured there), so a parent not delegated in
// it leaves info as it was.
func (h host) withAcct(info Info, parent string) Info {
	if !separateAcct(h.root) {
		return info
	}
	b := filepath.Join(h.root, acctController, parent)
	if h.makeBase(info, b) != nil || h.probeGroup(b, false) != nil {
		return info
	}
	info.Controllers = append(info.Controllers, acctController)
	info.bases = append(info.bases, b)
	return info
}

// host is what detection reads: the cgroup mount point, this process's
// /proc/self/cgroup text and its effective uid (a test's fake tree).
type host struct {
	root string
	self string
	uid  int
}

// delegationHelp points at the instructions for delegating a cgroup.
const delegationHelp = `see "Limits when codexec runs as you" in docs/sandbox.md`

// place works out where groups go below parent and which controllers
// they get there, without changing anything.
func (h host) place(parent string) Info {
	if parent != "" {
		if err := CheckParent(parent); err != nil {
			return Info{Reason: err.Error()}
		}
	}
	if _, err := os.Stat(filepath.Join(h.root, "cgroup.controllers")); err == nil {
		return h.placeV2(parent)
	}
	return h.placeV1(parent)
}

// CheckParent reports whether p is usable as a parent: an absolute,
// clean cgroup path below a hierarchy's root, not the root itself.
func CheckParent(p string) error {
	if !path.IsAbs(p) || path.Clean(p) != p || p == "/" || contains(strings.Split(p, "/"), "..") {
		return fmt.Errorf("cgroup parent %q must be an absolute, clean cgroup path below the root, such as /codexec-alice", p)
	}
	return nil
}

func (h host) placeV1(parent string) Info {
	info := Info{Version: 1, Parent: parent}
	for _, c := range v1Controllers {
		if _, err := os.Stat(filepath.Join(h.root, c, "cgroup.procs")); err != nil {
			info.Missing = append(info.Missing, c)
			continue
		}
		info.Controllers = append(info.Controllers, c)
		info.bases = append(info.bases, filepath.Join(h.root, c, parent))
	}
	switch {
	case len(info.Controllers) == 0:
		return Info{}
	case parent == "":
		info.Reason = fmt.Sprintf("codexec runs as uid %d, not root, and CODEXEC_CGROUP_PARENT is not set: on cgroup v1 an operator must delegate a directory in each of the %s hierarchies and name it there (%s)",
			h.uid, strings.Join(v1Controllers, ", "), delegationHelp)
	}
	return info
}

func (h host) placeV2(parent string) Info {
	info := Info{Version: 2, Parent: parent}
	var top string
	if parent != "" {
		top = h.existing(parent)
	} else {
		user, err := h.userManager()
		if err != nil {
			info.Reason = err.Error()
			return info
		}
		info.Parent, top = path.Join(user, groupsDir), user
	}
	info.bases = []string{filepath.Join(h.root, info.Parent)}
	info.top = filepath.Join(h.root, top)
	b, err := os.ReadFile(filepath.Join(info.top, "cgroup.controllers"))
	if err != nil {
		info.Reason = fmt.Sprintf("cannot read the controllers of %s: %v", info.top, err)
		return info
	}
	info.Controllers, info.Missing = split(v2Controllers, strings.Fields(string(b)))
	if len(info.Missing) > 0 {
		info.Reason = fmt.Sprintf("%s lacks the %s controller(s): delegate memory, pids and cpu to it (with systemd: a drop-in with Delegate=memory pids cpu for user@.service; %s)",
			info.top, strings.Join(info.Missing, ", "), delegationHelp)
	}
	return info
}

// existing returns the deepest directory of the cgroup path p (p or an
// ancestor) that exists: the parent, or where its making starts.
func (h host) existing(p string) string {
	for ; p != "/"; p = path.Dir(p) {
		if fi, err := os.Stat(filepath.Join(h.root, p)); err == nil && fi.IsDir() {
			return p
		}
	}
	return "/"
}

// userManager returns the cgroup path of user@UID.service above this
// process, the subtree systemd delegates to the user, when it is the
// user's: a process can move processes into a group only from within a
// subtree it may write (on v2 the kernel checks the common ancestor).
func (h host) userManager() (string, error) {
	own, ok := v2Path(h.self)
	unit := "user@" + strconv.Itoa(h.uid) + ".service"
	user, found := ancestorNamed(own, unit)
	if !ok || !found {
		return "", fmt.Errorf("codexec runs as uid %d, not root, without CODEXEC_CGROUP_PARENT, and its cgroup %s is not below the user's systemd manager (%s), whose subtree systemd delegates to the user: start codexec from it (systemd-run --user --scope codexec …) or have an operator delegate a cgroup and set CODEXEC_CGROUP_PARENT (%s)",
			h.uid, own, unit, delegationHelp)
	}
	fi, err := os.Stat(filepath.Join(h.root, user))
	if err != nil {
		return "", fmt.Errorf("cannot inspect the user's systemd manager's cgroup: %w", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != h.uid {
		return "", fmt.Errorf("systemd has not delegated %s to uid %d (it is owned by uid %d): set Delegate=memory pids cpu for user@.service (%s)",
			user, h.uid, st.Uid, delegationHelp)
	}
	return user, nil
}

// v2Path returns the unified hierarchy's path ("0::/…") in the text of a
// /proc/<pid>/cgroup file.
func v2Path(self string) (string, bool) {
	for _, line := range strings.Split(self, "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok && path.IsAbs(p) {
			return path.Clean(p), true
		}
	}
	return "", false
}

// ancestorNamed returns the nearest of p and its ancestors whose last
// element is name.
func ancestorNamed(p, name string) (string, bool) {
	for ; p != "/" && p != "." && p != ""; p = path.Dir(p) {
		if path.Base(p) == name {
			return p, true
		}
	}
	return "", false
}

// commonAncestor returns the deepest cgroup path holding both a and b.
func commonAncestor(a, b string) string {
	x, y := strings.Split(strings.Trim(a, "/"), "/"), strings.Split(strings.Trim(b, "/"), "/")
	n := 0
	for n < len(x) && n < len(y) && x[n] == y[n] && x[n] != "" {
		n++
	}
	return "/" + strings.Join(x[:n], "/")
}

// probe makes info's bases (v2: with the controllers enabled from its top
// down), makes and removes a group in each, and on v2 checks that this
// process may move processes into them.
func (h host) probe(info Info) error {
	for _, b := range info.bases {
		if err := h.makeBase(info, b); err != nil {
			return err
		}
		if err := h.probeGroup(b, info.Version == 2); err != nil {
			return err
		}
	}
	if info.Version == 2 {
		return h.canMoveInto(info.Parent)
	}
	return nil
}

// makeBase makes the directory b holding codexec's groups; on v2 it
// enables the controllers from info's top down to it.
func (h host) makeBase(info Info, b string) error {
	if err := os.MkdirAll(b, 0o755); err != nil {
		return fmt.Errorf("cannot make %s: %w; ask an operator to delegate it to uid %d (%s)", b, err, h.uid, delegationHelp)
	}
	if info.Version == 2 {
		return enableDown(info.delegationTop(), b)
	}
	return nil
}

// probeGroup makes and removes a group in b; on v2 the group must have
// the controllers.
func (h host) probeGroup(b string, v2 bool) (retErr error) {
	p := filepath.Join(b, "probe-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(p, 0o755); err != nil {
		return fmt.Errorf("cannot make a group in %s: %w; ask an operator to delegate it to uid %d (%s)", b, err, h.uid, delegationHelp)
	}
	defer func() {
		if err := syscall.Rmdir(p); err != nil && retErr == nil {
			retErr = fmt.Errorf("cannot remove the probe group %s: %w", p, err)
		}
	}()
	if !v2 {
		return nil
	}
	have, err := os.ReadFile(filepath.Join(p, "cgroup.controllers"))
	if _, missing := split(v2Controllers, strings.Fields(string(have))); err != nil || len(missing) > 0 {
		return fmt.Errorf("a group made in %s lacks the controller(s) %s (%v)", b, strings.Join(missing, ", "), err)
	}
	return nil
}

// canMoveInto checks that this process may move processes (its sandboxes)
// from its own cgroup into groups below the cgroup path p: v2 requires
// write access to cgroup.procs of the groups' common ancestor.
func (h host) canMoveInto(p string) error {
	own, ok := v2Path(h.self)
	if !ok {
		return nil // not in the unified hierarchy: nothing to check
	}
	ca := commonAncestor(own, p)
	if writable(filepath.Join(h.root, ca, "cgroup.procs")) {
		return nil
	}
	return fmt.Errorf("codexec's cgroup %s and %s meet at %s, whose cgroup.procs uid %d cannot write, so it cannot move its sandboxes into groups there: start codexec in a group below %s (or below a directory delegated to uid %d that holds both) (%s)",
		own, p, ca, h.uid, path.Dir(p), h.uid, delegationHelp)
}

// writable reports whether this process may write the file at p.
func writable(p string) bool {
	return unix.Faccessat(unix.AT_FDCWD, p, unix.W_OK, unix.AT_EACCESS) == nil
}

// delegationTop is where enabling the controllers starts (see Info.top).
func (i Info) delegationTop() string {
	if i.top != "" {
		return i.top
	}
	return Root
}
