/* SPDX-License-Identifier: Apache-2.0 */
/* Whole-file reads and crash-safe whole-file writes, relative to a directory fd.
 *
 * Every reader and writer of a whole file in rdmak goes through these two, so that each one
 * is bounded (a config, an IPAM record or a kubelet checkpoint cannot eat the memory) and
 * each write is atomic: a reader (the kubelet, NFD, a CDI loader, the next rdmak) sees
 * either the old file or the new one, never half of one, even across a power cut.
 */
#ifndef RDMAK_UTIL_FILEIO_H
#define RDMAK_UTIL_FILEIO_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Read the whole of `path` (relative to dirfd; AT_FDCWD allowed; an absolute path ignores
 * dirfd) into a malloc'd, NUL-terminated buffer. Reads until end of file, so pipes and FIFOs
 * work (`--config <(...)`). -EFBIG when the file holds more than `max` bytes. ret_len may
 * be NULL. *ret and *ret_len are written only on success. */
int fileio_read_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len);
/* The same from an open fd (read from its current offset; the fd is not closed). */
int fileio_read_fd(int fd, size_t max, char **ret, size_t *ret_len);
/* The same for a file that must be a regular one (a certificate, a key, a token: what is
 * re-read when it changes, and where a FIFO would block the open until a writer comes): opened
 * O_NONBLOCK, and anything else than a regular file refused before any read, -EISDIR or
 * -FILEIO_ENOTREG (fileio_strerror() says which). */
int fileio_read_regular_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len);

/* A file of a root that should be a regular file (a sysfs attribute, a /proc file) is a FIFO,
 * a device or a socket, which those trees never hold: it is refused, since a blocking read of a
 * FIFO would wait forever and a device's stream never ends. */
#define FILEIO_ENOTREG EMEDIUMTYPE
/* strerror(), and for -FILEIO_ENOTREG "not a regular file (a FIFO, device or socket)"; either sign. */
const char *fileio_strerror(int err);
/* 0 when fd (opened with O_NONBLOCK, so that opening a FIFO did not wait for a writer) is a
 * regular file; -EISDIR for a directory, -FILEIO_ENOTREG for a FIFO, device or socket. */
int fileio_check_regular(int fd);
/* fileio_list_dir() flags */
enum {
	FILEIO_LIST_NO_HIDDEN = 1 << 0, /* leave out every name that starts with '.' */
	FILEIO_LIST_REGULAR =
		1 << 1, /* regular files only (d_type; fstatat where it says nothing) */
};
/* The names in the open directory fd (readable, not O_PATH; read from its current position,
 * not closed), "." and ".." left out, sorted by strcmp: a strv (util/strv.h) and its length.
 * getdents64 on fd itself: opendir()'s stream would add an fstat, an fcntl and a 32 KiB
 * allocation per directory. The one directory listing: every folder rdmak reads goes
 * through it. */
int fileio_list_dir(int fd, unsigned flags, char ***ret, size_t *ret_n);

/* Read up to len bytes of the regular file fd (opened O_NONBLOCK), until len or end of file,
 * binary-safe. The byte count or -errno; -EISDIR or -FILEIO_ENOTREG (fileio_check_regular(),
 * asked only after an empty, failed or full read, which is where a FIFO or a device can be told
 * from a regular file; a FIFO's writer that wrote less than len and closed it has its bytes read
 * as a file's). */
ssize_t fileio_read_regular(int fd, void *buf, size_t len);

/* Replace `path` (relative to dirfd, AT_FDCWD allowed) with `buf` atomically and durably:
 * write a temp file in the same directory, fsync it, rename it over `path`, fsync the
 * directory. `mode` is the new file's exact mode (the umask does not apply). The temp file
 * is removed on every failure, and the old file, if any, is left as it was.
 * An existing `path` that is not a regular file is never replaced: -EISDIR (a directory),
 * -ELOOP (a symbolic link), -EEXIST (a device, FIFO or socket). A full file system is
 * -ENOSPC (or -EDQUOT), as the kernel said it. */
int fileio_write_atomic_at(int dirfd, const char *path, const void *buf, size_t len, mode_t mode);

/* Remove the temp files (".NAME.XXXXXXXX.tmp") that fileio_write_atomic_at() writers killed
 * half-way (kill -9, a power cut) left in dirfd; base non-NULL: only those for that NAME.
 * A writer holds an exclusive flock on its temp file from creating it until its name is
 * gone, and the kernel drops it with the writer: a temp file that can be locked has no live
 * writer, and one that cannot (a concurrent write in progress) is never touched. Age or a pid
 * in the name would not do: a slow writer can be old, and pids are reused and differ between
 * pid namespaces. 0 or the first -errno (the other names are still tried); *ret_removed (may
 * be NULL) counts the files removed. */
int fileio_remove_stale_temps_at(int dirfd, const char *base, size_t *ret_removed);

/* mkdir -p: create path with `mode` and its missing parents with `parent_mode` (the umask
 * applies to both, as with mkdir(1)); an existing directory is fine. */
int fileio_mkdir_p(const char *path, mode_t parent_mode, mode_t mode);

/* flock(fd, how), retried when a signal interrupts it. 0 or -errno (-EWOULDBLOCK with
 * LOCK_NB while another holds it). */
int fileio_flock(int fd, int how);

/* write() all of buf, retrying short writes and EINTR. 0 or -errno. */
int fileio_write_all(int fd, const void *buf, size_t len);

/* ---- what the node's owner wrote, read or reached in a root process --------------------------
 * A file or folder a namespace user or a pod could write, swap or link must never be taken for
 * the owner's: each refusal below names the path and what it is, in err (a sentence). */

/* A file that holds a secret or the node's settings, read as nothing else may swap it: opened
 * O_NOFOLLOW|O_NONBLOCK (a symbolic link is refused, a FIFO does not block the open), then it
 * must be a regular file owned by root that neither group nor others may write, at most max
 * bytes. -ELOOP (a symbolic link), -FILEIO_ENOTREG (a FIFO, device or socket), -EISDIR,
 * -EPERM (owner or mode), -EFBIG, -ENOENT. */
int fileio_read_owned(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len,
		      char *err, size_t errlen);

/* Whether path (absolute, no "." or ".." component, no empty one but a trailing '/') is base
 * or lies beneath it: a string test, for a parser's message; fileio_open_dir_beneath() is the
 * one that holds. */
bool fileio_path_beneath(const char *base, const char *path);

/* The folder path, which must be base (an absolute path the owner gave: followed as it is) or
 * lie beneath it, reached one component at a time without following a symbolic link, every
 * folder from base down owned by root and writable by neither group nor others: so that once
 * it is open, nothing but root can change what a path beneath it names. With create, base
 * (mode 0755) and the missing folders (0755, path itself `mode`) are made. Returns the folder's
 * fd (O_DIRECTORY) or -errno: -EXDEV (not beneath base, or a "." or ".." component), -ELOOP (a
 * symbolic link), -ENOTDIR, -EPERM (owner or mode), -ENOENT. */
int fileio_open_dir_beneath(const char *base, const char *path, bool create, mode_t mode, char *err,
			    size_t errlen);

#endif
