/* SPDX-License-Identifier: Apache-2.0 */
/* Paths resolved inside a root directory, as if it were "/".
 *
 * A --root tree (a snapshot from another node, a sample node, a hostile tree) may hold
 * symbolic links to absolute paths or climbing with "..": followed as the kernel would from
 * the real "/", `fw_ver -> /etc/hostname` reads this machine's file. Every read of a root goes
 * through inroot_openat(), which resolves as chroot(2) would: an absolute target is taken
 * relative to the root, ".." stops at it. Real sysfs uses relative links
 * (../../devices/...), which resolve the same either way.
 */
#ifndef RDMAK_UTIL_INROOT_H
#define RDMAK_UTIL_INROOT_H

/* Open `path` (relative or absolute: both are taken from rootfd) with `flags` (O_CLOEXEC is
 * added; no O_CREAT). openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) where the kernel has it
 * (5.6+), else an equivalent walk in user space, one component at a time with O_NOFOLLOW.
 * With O_NOFOLLOW a final symbolic link is not followed (O_PATH | O_NOFOLLOW opens the link
 * itself, for readlinkat(fd, "")). Returns the fd or -errno (-ELOOP past 40 links). */
int inroot_openat(int rootfd, const char *path, int flags);

/* The same beneath `dirfd` (itself inside the root, at `dirpath` relative to it) when the path
 * stays beneath it, which is the common case and costs one short walk; otherwise, or where
 * openat2 is missing, "dirpath/name" from the root. */
int inroot_openat_from(int rootfd, int dirfd, const char *dirpath, const char *name, int flags);

/* The user-space walk is used where openat2 is missing (kernels before 5.6, some seccomp
 * profiles): the first ENOSYS or EPERM switches to it. Its tests run rdmak under a seccomp
 * filter that answers openat2 with ENOSYS (tests/helpers/no_openat2.c). */

#endif
