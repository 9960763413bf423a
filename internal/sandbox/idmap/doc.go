// Package idmap mounts a caller's directory so that the sandbox user has
// the rights of the directory's owner there, on that mount only: a
// detached clone of the directory (open_tree) made an idmapped mount
// (mount_setattr MOUNT_ATTR_IDMAP) whose user namespace maps the owner's
// uid and gid to the sandbox user's. Through it the owner's files look like
// the sandbox user's own, files of every other id stay foreign (unmapped
// ids match no one), and what the sandbox user creates lands on the host
// owned by the owner. A read-only clone refuses every write (EROFS).
//
// The clone is attached by its user (a template point, a staging point, a
// warm runner's namespace) with move_mount. A Mapper keeps one user
// namespace per owner, made once by a helper child (helper.HoldCommand)
// and held open by descriptor. Safe for concurrent use.
package idmap
