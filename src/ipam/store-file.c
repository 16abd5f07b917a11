/* SPDX-License-Identifier: Apache-2.0 */
/* The file store: one symbolic link per claim, record and cursor, under dataDir:
 *
 *   pools/<pool>/<address>        claim   -> owner (compact JSON)
 *   pools/<pool>/.cursor          cursor: a small file, the address handed out last
 *   pools/<pool>/.lock            flock()ed by release() only
 *   networks/<network>/<key>      record  -> the attachment's state ("pending" ones are
 *                                 hard links to networks/<network>/.pending)
 *
 * Why symbolic links (docs/ipam.md has the long version): symlinkat() creates a name together
 * with its whole content in one system call and fails with EEXIST when the name exists. That
 * is exactly claim-if-absent, with no moment at which a half-written claim is visible and
 * nothing for kill -9 to interrupt: a process killed anywhere leaves either no claim or a
 * complete one. Replacing a record is a link under a temporary name renamed over the old one
 * (rename() is atomic); a kill between the two leaves only a ".tmp." name, which tidy()
 * removes. Claims take no lock at all, so concurrent ADDs never wait on each
 * other; release() takes the pool's flock() so that its read-compare-unlink cannot interleave
 * with another release of the same claim (a claim cannot change while it exists: nothing
 * renames over a claim name). The kernel drops a flock() with its process, so kill -9 never
 * leaves the store locked. Readers never open what they read: readlinkat() never follows.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ipam/store.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strv.h"

#define TMP_PREFIX ".tmp."
#define TIDY_AGE_S 600 /* a temporary name this old belongs to a writer that is gone */

struct file_store {
	int dir;      /* dataDir */
	int pools;    /* dataDir/pools */
	int networks; /* dataDir/networks */
	unsigned long tmp_seq;
	char *path; /* dataDir, for messages */
};

static struct file_store *FS(struct ipam_store *s)
{
	return s->priv;
}

/* A name we may use as one path component: not empty, no '/', and not starting with '.',
 * which is ours (.cursor, .lock, .tmp.*). */
static bool name_ok(const char *n)
{
	return n && *n && n[0] != '.' && !strchr(n, '/') && strlen(n) <= 255;
}

/* openat(parent, name) as a directory, creating it when create is set. */
static int subdir(int parent, const char *name, bool create)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);

	if (fd >= 0 || errno != ENOENT || !create)
		return fd >= 0 ? fd : -errno;
	if (mkdirat(parent, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	return fd >= 0 ? fd : -errno;
}

/* What dir/name is, when it is not one of our links. */
static const char *junk_kind(int dir, const char *name, bool *is_dir)
{
	struct stat st;

	*is_dir = false;
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return "unreadable";
	*is_dir = S_ISDIR(st.st_mode);
	return S_ISREG(st.st_mode)   ? "a regular file"
	       : S_ISDIR(st.st_mode) ? "a directory"
	       : S_ISLNK(st.st_mode) ? "a symbolic link too long to be a value"
				     : "a special file";
}

/* The target of dir/name (in "pools/<pool>" or "networks/<network>", the where): 1 and *ret,
 * 0 when absent. Something else than our link there fails with -EBADMSG, naming the pool or
 * network, the path, and the repair: it would otherwise stop every ADD that reaches it. */
static int read_link(struct ipam_store *s, int dir, const char *where, const char *what,
		     const char *name, char **ret)
{
	char buf[IPAM_STORE_VALUE_MAX + 2];
	ssize_t n = readlinkat(dir, name, buf, sizeof(buf));
	bool is_dir;

	if (n < 0 && errno == ENOENT)
		return 0;
	if ((n < 0 && errno == EINVAL) || (n >= 0 && (size_t)n >= sizeof(buf) - 1))
		return ipam_store_error(
			s, -EBADMSG,
			"%s %s: %s/%s/%s is %s where a %s should be, not written by rdmak-ipam; "
			"`rdmak ipam gc --repair` removes it",
			strcmp(what, "claim") ? "network" : "pool",
			strchr(where, '/') ? strchr(where, '/') + 1 : where, FS(s)->path, where,
			name, junk_kind(dir, name, &is_dir), what);
	if (n < 0)
		return ipam_store_error(s, -errno, "%s/%s: %s", where, name, strerror(errno));
	buf[n] = '\0';
	*ret = strdup(buf);
	return *ret ? 1 : -ENOMEM;
}

/* A listing met junk: name it, and remove it when asked to repair. */
static void junk(struct ipam_store *s, int dir, const char *where, const char *name)
{
	char path[PATH_MAX];
	int removed = 0;
	bool is_dir;
	const char *what = junk_kind(dir, name, &is_dir);

	snprintf(path, sizeof(path), "%s/%s/%s", FS(s)->path, where, name);
	if (s->repair)
		removed = unlinkat(dir, name, is_dir ? AT_REMOVEDIR : 0) == 0 ? 1 : -errno;
	if (s->junk)
		s->junk(s->junk_ud, path, what, removed);
}

/* Replace dir/name with a link to value: a temporary link renamed over it. */
static int replace_link(struct ipam_store *s, int dir, const char *name, const char *value)
{
	char tmp[64];

	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%d.%lu.%lx", (int)getpid(), FS(s)->tmp_seq++,
		 (unsigned long)random());
	if (symlinkat(value, dir, tmp) < 0)
		return ipam_store_error(s, -errno, "%s: %s", name, strerror(errno));
	if (renameat(dir, tmp, dir, name) < 0) {
		int e = errno;

		unlinkat(dir, tmp, 0);
		return ipam_store_error(s, -e, "%s: %s", name, strerror(e));
	}
	return 0;
}

static int check_value(struct ipam_store *s, const char *value)
{
	if (!value || !*value || strlen(value) > IPAM_STORE_VALUE_MAX)
		return ipam_store_error(s, -EINVAL, "a value must hold 1 to %d bytes",
					IPAM_STORE_VALUE_MAX);
	return 0;
}

/* ---- claims ------------------------------------------------------------------------------ */

static int pool_dir(struct ipam_store *s, const char *pool, bool create)
{
	int fd;

	if (!name_ok(pool))
		return ipam_store_error(s, -EINVAL, "\"%s\" is not a pool name", pool ? pool : "");
	fd = subdir(FS(s)->pools, pool, create);
	if (fd < 0 && fd != -ENOENT)
		return ipam_store_error(s, fd, "pools/%s: %s", pool, strerror(-fd));
	return fd;
}

static int file_claim(struct ipam_store *s, const char *pool, const char *address,
		      const char *value)
{
	_cleanup_close_ int dir = -1;
	_cleanup_free_ char *cur = NULL;
	char where[300];
	int r;

	if (!name_ok(address))
		return ipam_store_error(s, -EINVAL, "\"%s\" is not an address",
					address ? address : "");
	if ((r = check_value(s, value)) < 0)
		return r;
	dir = pool_dir(s, pool, true);
	if (dir < 0)
		return dir;
	if (symlinkat(value, dir, address) == 0)
		return 1;
	if (errno != EEXIST)
		return ipam_store_error(s, -errno, "pools/%s/%s: %s", pool, address,
					strerror(errno));
	snprintf(where, sizeof(where), "pools/%s", pool);
	r = read_link(s, dir, where, "claim", address, &cur);
	if (r < 0)
		return r;
	/* released between our attempt and the read: taken by nobody now, but the caller moves
	 * on rather than loop here; it may come back to this address later */
	return r == 1 && strcmp(cur, value) == 0;
}

static int file_get(struct ipam_store *s, const char *pool, const char *address, char **ret)
{
	_cleanup_close_ int dir = pool_dir(s, pool, false);
	char where[300];

	if (dir == -ENOENT)
		return 0;
	if (dir < 0)
		return dir;
	if (!name_ok(address))
		return ipam_store_error(s, -EINVAL, "\"%s\" is not an address",
					address ? address : "");
	snprintf(where, sizeof(where), "pools/%s", pool);
	return read_link(s, dir, where, "claim", address, ret);
}

static int file_release(struct ipam_store *s, const char *pool, const char *address,
			const char *expect)
{
	_cleanup_close_ int dir = pool_dir(s, pool, false), lock = -1;
	_cleanup_free_ char *cur = NULL;
	char where[300];
	int r;

	if (dir == -ENOENT)
		return 0;
	if (dir < 0)
		return dir;
	if (!name_ok(address))
		return ipam_store_error(s, -EINVAL, "\"%s\" is not an address",
					address ? address : "");
	lock = openat(dir, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lock < 0)
		return ipam_store_error(s, -errno, "pools/%s/.lock: %s", pool, strerror(errno));
	while (flock(lock, LOCK_EX) < 0)
		if (errno != EINTR)
			return ipam_store_error(s, -errno, "pools/%s/.lock: %s", pool,
						strerror(errno));
	snprintf(where, sizeof(where), "pools/%s", pool);
	r = read_link(s, dir, where, "claim", address, &cur);
	if (r <= 0)
		return r;
	if (strcmp(cur, expect) != 0)
		return 0;
	if (unlinkat(dir, address, 0) < 0)
		return ipam_store_error(s, -errno, "pools/%s/%s: %s", pool, address,
					strerror(errno));
	return 1; /* the lock goes with the descriptor */
}

/* The names in dir, through a description of its own: the store holds its folders open (pools/),
 * and a dup() would share their offset, so that a second listing started where the first ended. */
static int list_names(int dir, unsigned flags, char ***ret, size_t *ret_n)
{
	_cleanup_close_ int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return fileio_list_dir(fd, flags, ret, ret_n);
}

/* Each entry of dir (where: "pools/<pool>", ...) not starting with '.', with its link target
 * (a what) when with_values. Junk is skipped and named (junk()): one stray file must not stop
 * a GC pass half-way. */
static int each_link(struct ipam_store *s, int dir, const char *where, const char *what,
		     bool with_values, ipam_store_each_fn fn, void *ud)
{
	_cleanup_strv_free_ char **names = NULL;
	size_t n = 0;
	int r;

	r = list_names(dir, FILEIO_LIST_NO_HIDDEN, &names, &n);
	if (r < 0)
		return ipam_store_error(s, r, "%s: %s", where, strerror(-r));
	for (size_t i = 0; i < n && r == 0; i++) {
		_cleanup_free_ char *v = NULL;

		if (with_values) {
			r = read_link(s, dir, where, what, names[i], &v);
			if (r == -EBADMSG)
				junk(s, dir, where, names[i]);
			if (r == 0 || r == -EBADMSG) {
				r = 0;
				continue; /* removed since it was listed, or junk */
			}
			if (r < 0)
				return r;
		}
		r = fn(ud, names[i], v);
	}
	return r;
}

static int file_list(struct ipam_store *s, const char *pool, ipam_store_each_fn fn, void *ud)
{
	_cleanup_close_ int dir = pool_dir(s, pool, false);
	char where[300];

	if (dir == -ENOENT)
		return 0;
	if (dir < 0)
		return dir;
	snprintf(where, sizeof(where), "pools/%s", pool);
	return each_link(s, dir, where, "claim", true, fn, ud);
}

static int count_one(void *ud, const char *name, const char *value)
{
	(*(size_t *)ud)++;
	return 0;
}

static int file_count(struct ipam_store *s, const char *pool, size_t *ret)
{
	_cleanup_close_ int dir = pool_dir(s, pool, false);
	char where[300];
	size_t n = 0;
	int r;

	if (dir == -ENOENT) {
		*ret = 0;
		return 0;
	}
	if (dir < 0)
		return dir;
	snprintf(where, sizeof(where), "pools/%s", pool);
	r = each_link(s, dir, where, "claim", false, count_one, &n);
	if (r < 0)
		return r;
	*ret = n;
	return 0;
}

static int file_pools(struct ipam_store *s, ipam_store_each_fn fn, void *ud)
{
	return each_link(s, FS(s)->pools, "pools", "pool", false, fn, ud);
}

/* ---- records ----------------------------------------------------------------------------- */

static int network_dir(struct ipam_store *s, const char *network, bool create)
{
	int fd;

	if (!name_ok(network))
		return ipam_store_error(s, -EINVAL, "\"%s\" is not a network name",
					network ? network : "");
	fd = subdir(FS(s)->networks, network, create);
	if (fd < 0 && fd != -ENOENT)
		return ipam_store_error(s, fd, "networks/%s: %s", network, strerror(-fd));
	return fd;
}

static int file_record_get(struct ipam_store *s, const char *network, const char *key, char **ret)
{
	_cleanup_close_ int dir = network_dir(s, network, false);
	char where[300];

	if (dir == -ENOENT)
		return 0;
	if (dir < 0)
		return dir;
	if (!name_ok(key))
		return ipam_store_error(s, -EINVAL, "\"%s\" is not an attachment key",
					key ? key : "");
	snprintf(where, sizeof(where), "networks/%s", network);
	return read_link(s, dir, where, "record", key, ret);
}

static int file_record_put(struct ipam_store *s, const char *network, const char *key,
			   const char *value)
{
	_cleanup_close_ int dir = network_dir(s, network, true);
	int r;

	if (dir < 0)
		return dir;
	if (!name_ok(key))
		return ipam_store_error(s, -EINVAL, "\"%s\" is not an attachment key",
					key ? key : "");
	if ((r = check_value(s, value)) < 0)
		return r;
	return replace_link(s, dir, key, value);
}

static int file_record_del(struct ipam_store *s, const char *network, const char *key)
{
	_cleanup_close_ int dir = network_dir(s, network, false);

	if (dir == -ENOENT)
		return 0;
	if (dir < 0)
		return dir;
	if (!name_ok(key))
		return ipam_store_error(s, -EINVAL, "\"%s\" is not an attachment key",
					key ? key : "");
	if (unlinkat(dir, key, 0) == 0)
		return 1;
	if (errno == ENOENT)
		return 0;
	return ipam_store_error(s, -errno, "networks/%s/%s: %s", network, key, strerror(errno));
}

static int file_record_list(struct ipam_store *s, const char *network, ipam_store_each_fn fn,
			    void *ud)
{
	_cleanup_close_ int dir = network_dir(s, network, false);
	char where[300];

	if (dir == -ENOENT)
		return 0;
	if (dir < 0)
		return dir;
	snprintf(where, sizeof(where), "networks/%s", network);
	return each_link(s, dir, where, "record", true, fn, ud);
}

/* A pending record is a hard link to the network's one ".pending" link: link() allocates no
 * inode, which on ext4 costs what the rest of an ADD does (an inode 0.5-0.9 ms on a VM's
 * disk, a link 15 us). Past the file system's link limit, a link of its own. */
static int file_record_pending(struct ipam_store *s, const char *network, const char *key)
{
	_cleanup_close_ int dir = network_dir(s, network, true);
	char tmp[64];

	if (dir < 0)
		return dir;
	if (!name_ok(key))
		return ipam_store_error(s, -EINVAL, "\"%s\" is not an attachment key",
					key ? key : "");
	if (symlinkat(IPAM_RECORD_PENDING, dir, ".pending") < 0 && errno != EEXIST)
		return ipam_store_error(s, -errno, "networks/%s/.pending: %s", network,
					strerror(errno));
	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%d.%lu", (int)getpid(), FS(s)->tmp_seq++);
	if (linkat(dir, ".pending", dir, tmp, 0) < 0) {
		if (errno == EMLINK)
			return replace_link(s, dir, key, IPAM_RECORD_PENDING);
		return ipam_store_error(s, -errno, "networks/%s/%s: %s", network, key,
					strerror(errno));
	}
	if (renameat(dir, tmp, dir, key) < 0) {
		int e = errno;

		unlinkat(dir, tmp, 0);
		return ipam_store_error(s, -e, "networks/%s/%s: %s", network, key, strerror(e));
	}
	return 0;
}

/* ---- cursors ----------------------------------------------------------------------------- */

/* The cursor is a small regular file rewritten in place by one pwrite() of a fixed size: no
 * inode per ADD. A reader racing a writer may see a mix of two addresses; the allocator
 * checks that a cursor parses and lies in the range, and a bad one only costs a few claims. */
#define CURSOR_SIZE 64

static int file_cursor_get(struct ipam_store *s, const char *pool, char **ret)
{
	_cleanup_close_ int dir = pool_dir(s, pool, false), fd = -1;
	char buf[CURSOR_SIZE + 1];
	ssize_t n;

	if (dir == -ENOENT)
		return 0;
	if (dir < 0)
		return dir;
	fd = openat(dir, ".cursor", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0
				       : ipam_store_error(s, -errno, "pools/%s/.cursor: %s", pool,
							  strerror(errno));
	n = pread(fd, buf, CURSOR_SIZE, 0);
	if (n < 0)
		return ipam_store_error(s, -errno, "pools/%s/.cursor: %s", pool, strerror(errno));
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (!buf[0])
		return 0;
	*ret = strdup(buf);
	return *ret ? 1 : -ENOMEM;
}

static int file_cursor_put(struct ipam_store *s, const char *pool, const char *address)
{
	_cleanup_close_ int dir = pool_dir(s, pool, true), fd = -1;
	char buf[CURSOR_SIZE] = { 0 };

	if (dir < 0)
		return dir;
	if (!name_ok(address) || strlen(address) >= CURSOR_SIZE - 1)
		return ipam_store_error(s, -EINVAL, "\"%s\" is not an address",
					address ? address : "");
	fd = openat(dir, ".cursor", O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return ipam_store_error(s, -errno, "pools/%s/.cursor: %s", pool, strerror(errno));
	snprintf(buf, sizeof(buf), "%s\n", address);
	if (pwrite(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf))
		return ipam_store_error(s, -EIO, "pools/%s/.cursor: short write", pool);
	return 0;
}

/* ---- housekeeping ------------------------------------------------------------------------ */

static size_t tidy_dir(int dir, time_t now)
{
	_cleanup_strv_free_ char **names = NULL;
	size_t n = 0, removed = 0;

	if (list_names(dir, 0, &names, &n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (strncmp(names[i], TMP_PREFIX, strlen(TMP_PREFIX)) != 0)
			continue;
		if (fstatat(dir, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    now - st.st_mtime > TIDY_AGE_S && unlinkat(dir, names[i], 0) == 0)
			removed++;
	}
	return removed;
}

struct tidy_ctx {
	struct ipam_store *s;
	int parent;
	time_t now;
	size_t removed;
};

static int tidy_one(void *ud, const char *name, const char *value)
{
	struct tidy_ctx *t = ud;
	_cleanup_close_ int dir = subdir(t->parent, name, false);

	if (dir >= 0)
		t->removed += tidy_dir(dir, t->now);
	return 0;
}

static int file_tidy(struct ipam_store *s, size_t *ret_removed)
{
	struct tidy_ctx t = { .s = s, .now = time(NULL) };
	int r;

	t.parent = FS(s)->pools;
	r = each_link(s, FS(s)->pools, "pools", "pool", false, tidy_one, &t);
	if (r == 0) {
		t.parent = FS(s)->networks;
		r = each_link(s, FS(s)->networks, "networks", "network", false, tidy_one, &t);
	}
	if (ret_removed)
		*ret_removed = t.removed;
	return r;
}

static int file_ping(struct ipam_store *s)
{
	if (faccessat(FS(s)->dir, ".", W_OK, AT_EACCESS) < 0)
		return ipam_store_error(s, -errno, "the data directory is not writable: %s",
					strerror(errno));
	return 0;
}

static void file_close(struct ipam_store *s)
{
	struct file_store *f = FS(s);

	if (!f)
		return;
	closep(&f->dir);
	closep(&f->pools);
	closep(&f->networks);
	free(f->path);
	free(f);
	s->priv = NULL;
}

static int file_open(struct ipam_store *s, const struct ipamconf_store *cfg)
{
	const char *dir = cfg->data_dir ? cfg->data_dir : IPAMCONF_FILE_DEFAULT_DIR;
	/* beneath the node's dataDir it was resolved against (ipamconf_resolve), never through a
	 * link nor a folder anyone but root may write: a store another could swap is not ours */
	const char *base = cfg->data_base ? cfg->data_base : dir;
	char why[sizeof(s->error)];
	struct file_store *f;
	int r;

	if (dir[0] != '/')
		return ipam_store_error(s, -EINVAL, "dataDir \"%s\" is not an absolute path", dir);
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->dir = f->pools = f->networks = -1;
	s->priv = f;
	f->path = strdup(dir);
	if (!f->path) {
		file_close(s);
		return -ENOMEM;
	}
	f->dir = fileio_open_dir_beneath(base, dir, true, 0700 /* reservations name pods */, why,
					 sizeof(why));
	if (f->dir < 0) {
		r = f->dir;
		file_close(s);
		return ipam_store_error(s, r, "dataDir: %s", why);
	}
	f->pools = subdir(f->dir, "pools", true);
	f->networks = subdir(f->dir, "networks", true);
	if (f->pools < 0 || f->networks < 0) {
		r = f->pools < 0 ? f->pools : f->networks;
		file_close(s);
		return ipam_store_error(s, r, "%s: %s", dir, strerror(-r));
	}
	return 0;
}

static const struct ipam_store_ops file_ops = {
	.ping = file_ping,
	.claim = file_claim,
	.get = file_get,
	.release = file_release,
	.list = file_list,
	.count = file_count,
	.pools = file_pools,
	.record_get = file_record_get,
	.record_put = file_record_put,
	.record_del = file_record_del,
	.record_list = file_record_list,
	.record_pending = file_record_pending,
	.cursor_get = file_cursor_get,
	.cursor_put = file_cursor_put,
	.tidy = file_tidy,
	.close = file_close,
};

const struct ipam_store_driver ipam_store_file_driver = {
	.name = "file",
	.open = file_open,
	.ops = &file_ops,
};
