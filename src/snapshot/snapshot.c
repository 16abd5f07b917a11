/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak snapshot: capture exactly what the model reads (every file, every symlink on the way
 * to it, the directories it lists, and the /dev/infiniband nodes) into a tarball, so that
 * `rdmak list --root <extracted>` elsewhere prints what this node printed. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "hw/hw.h"
#include "roles.h"
#include "snapshot/tar.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/inroot.h"
#include "util/strutil.h"
#include "util/strv.h"

struct snap_entry {
	char *path; /* "sys/..." or "dev/..." */
	char type;  /* tar type */
	unsigned mode, uid, gid, major, minor;
	char *link;
	char *data;
	size_t size;
};

struct snap {
	int roots[2]; /* sysfs fd, devfs fd */
	struct snap_entry *e;
	size_t n, cap;
	size_t *table; /* open addressing: index + 1, 0 = empty */
	size_t table_cap;
	struct snap_rec {
		enum hw_access how;
		char *path;
	} * recorded[2];
	size_t n_recorded[2], cap_recorded[2];
	int err;
};

static const char *const root_prefix[2] = { "sys", "dev" };

static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static int table_grow(struct snap *s)
{
	size_t cap = s->table_cap ? s->table_cap * 2 : 4096;
	size_t *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		size_t h = fnv(s->e[i].path) & (cap - 1);
		while (t[h])
			h = (h + 1) & (cap - 1);
		t[h] = i + 1;
	}
	free(s->table);
	s->table = t;
	s->table_cap = cap;
	return 0;
}

/* Add an entry once; returns it (new or existing) or NULL on allocation failure. */
static struct snap_entry *snap_add(struct snap *s, const char *path, char type)
{
	size_t h;

	if ((s->n + 1) * 2 > s->table_cap && table_grow(s) < 0)
		return NULL;
	for (h = fnv(path) & (s->table_cap - 1); s->table[h]; h = (h + 1) & (s->table_cap - 1))
		if (!strcmp(s->e[s->table[h] - 1].path, path))
			return &s->e[s->table[h] - 1];
	if (s->n == s->cap) {
		struct snap_entry *ne =
			realloc(s->e, (s->cap = s->cap ? s->cap * 2 : 1024) * sizeof(*ne));
		if (!ne)
			return NULL;
		s->e = ne;
	}
	memset(&s->e[s->n], 0, sizeof(s->e[s->n]));
	if (!(s->e[s->n].path = strdup(path)))
		return NULL;
	s->e[s->n].type = type;
	s->table[h] = ++s->n;
	return &s->e[s->n - 1];
}

static void recorder(enum hw_root root, enum hw_access how, const char *relpath, void *ud)
{
	struct snap *s = ud;
	struct snap_rec **v = &s->recorded[root];

	if (s->n_recorded[root] == s->cap_recorded[root]) {
		size_t cap = s->cap_recorded[root] ? s->cap_recorded[root] * 2 : 1024;
		struct snap_rec *nv = realloc(*v, cap * sizeof(*nv));
		if (!nv) {
			s->err = -ENOMEM;
			return;
		}
		*v = nv;
		s->cap_recorded[root] = cap;
	}
	if (!((*v)[s->n_recorded[root]].path = strdup(relpath)))
		s->err = -ENOMEM;
	else
		(*v)[s->n_recorded[root]++].how = how;
}

/* Lexically normalise "a/b/../c" inside the root; -EXDEV if it climbs out. */
static int normalize(const char *in, char *out, size_t n)
{
	_cleanup_free_ char *copy = strdup(in);
	char *save = NULL;
	size_t len = 0;

	if (!copy)
		return -ENOMEM;
	out[0] = '\0';
	for (char *tok = strtok_r(copy, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (!strcmp(tok, "."))
			continue;
		if (!strcmp(tok, "..")) {
			char *slash = strrchr(out, '/');
			if (!len)
				return -EXDEV;
			len = slash ? (size_t)(slash - out) : 0;
			out[len] = '\0';
			continue;
		}
		if (len + strlen(tok) + 2 > n)
			return -ENAMETOOLONG;
		len += (size_t)sprintf(out + len, "%s%s", len ? "/" : "", tok);
	}
	return 0;
}

static int read_whole(int dirfd, const char *path, char **data, size_t *size)
{
	_cleanup_close_ int fd = inroot_openat(dirfd, path, O_RDONLY | O_NOCTTY | O_NONBLOCK);
	int r;

	if (fd < 0)
		return fd;
	if ((r = fileio_check_regular(fd)) < 0)
		return r;
	/* e.g. EINVAL from an attribute with no value: not captured */
	return fileio_read_fd(fd, 65536, data, size);
}

static int capture_node(struct snap *s, int root, const char *rel, const struct stat *st)
{
	char full[PATH_MAX];
	struct snap_entry *e;

	if (snprintf(full, sizeof(full), "%s/%s", root_prefix[root], rel) >= (int)sizeof(full))
		return -ENAMETOOLONG;
	if (S_ISDIR(st->st_mode))
		e = snap_add(s, full, '5');
	else if (S_ISCHR(st->st_mode))
		e = snap_add(s, full, '3');
	else if (S_ISREG(st->st_mode)) {
		char *data = NULL;
		size_t size = 0;

		if (read_whole(s->roots[root], rel, &data, &size) < 0)
			return 0;
		e = snap_add(s, full, '0');
		if (e && !e->data) {
			e->data = data;
			e->size = size;
		} else
			free(data);
	} else
		return 0;
	if (!e)
		return -ENOMEM;
	e->mode = st->st_mode & 07777;
	e->uid = st->st_uid;
	e->gid = st->st_gid;
	e->major = major(st->st_rdev);
	e->minor = minor(st->st_rdev);
	return 0;
}

/* Capture every component of rel: directories, the symlinks crossed (and where they lead),
 * and the final object; a final symlink is followed unless the model only read the link. */
static int capture_path(struct snap *s, int root, const char *rel, int depth, bool follow_last)
{
	char cur[PATH_MAX] = "", rest[PATH_MAX];
	const char *p = rel;
	struct stat st;
	int r;

	if (depth > 40)
		return 0; /* a symlink loop: leave it */
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t l = slash ? (size_t)(slash - p) : strlen(p);
		char next[PATH_MAX];

		if (l == 0) {
			p++;
			continue;
		}
		if (snprintf(next, sizeof(next), "%s%s%.*s", cur, cur[0] ? "/" : "", (int)l, p) >=
		    (int)sizeof(next))
			return -ENAMETOOLONG;
		p += l + (slash ? 1 : 0);
		if (fstatat(s->roots[root], next, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return 0; /* absent: the model saw it absent too */
		if (S_ISLNK(st.st_mode)) {
			char link[PATH_MAX], full[PATH_MAX], target[PATH_MAX];
			ssize_t n = readlinkat(s->roots[root], next, link, sizeof(link) - 1);
			struct snap_entry *e;

			if (n < 0)
				return 0;
			link[n] = '\0';
			if (snprintf(full, sizeof(full), "%s/%s", root_prefix[root], next) >=
			    (int)sizeof(full))
				return -ENAMETOOLONG;
			if (!(e = snap_add(s, full, '2')))
				return -ENOMEM;
			if (!e->link && !(e->link = strdup(link)))
				return -ENOMEM;
			e->mode = 0777;
			if (!*p && !follow_last)
				return 0;
			if (link[0] == '/')
				return 0; /* absolute links point outside any snapshot: keep the link only */
			{
				char *dir = strrchr(next, '/');
				if (snprintf(full, sizeof(full), "%.*s%s%s",
					     dir ? (int)(dir - next) : 0, next, dir ? "/" : "",
					     link) >= (int)sizeof(full))
					return 0;
			}
			if (normalize(full, target, sizeof(target)) < 0)
				return 0;
			if (snprintf(rest, sizeof(rest), "%s%s%s", target, *p ? "/" : "", p) >=
			    (int)sizeof(rest))
				return 0;
			return capture_path(s, root, rest, depth + 1, follow_last);
		}
		if ((r = capture_node(s, root, next, &st)) < 0)
			return r;
		if (!S_ISDIR(st.st_mode))
			return 0;
		memcpy(cur, next, sizeof(cur));
	}
	return 0;
}

/* A directory the model listed: its entries, so the listing reads the same elsewhere. */
static int capture_listing(struct snap *s, int root, const char *rel)
{
	_cleanup_close_ int fd =
		inroot_openat(s->roots[root], rel[0] ? rel : ".", O_RDONLY | O_DIRECTORY);
	_cleanup_strv_free_ char **names = NULL;
	char child[PATH_MAX];
	size_t n;
	int r;

	if (fd < 0)
		return 0;
	r = fileio_list_dir(fd, 0, &names, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		if (snprintf(child, sizeof(child), "%s%s%s", rel, rel[0] ? "/" : "", names[i]) >=
		    (int)sizeof(child))
			continue;
		if ((r = capture_path(s, root, child, 0, true)) < 0)
			return r;
	}
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct snap_entry *)a)->path, ((const struct snap_entry *)b)->path);
}

static int write_archive(struct snap *s, FILE *f)
{
	long long now = (long long)time(NULL);
	int r;

	qsort(s->e, s->n, sizeof(*s->e), cmp_entry);
	for (size_t i = 0; i < s->n; i++) {
		struct snapshot_tar_entry t = {
			.path = s->e[i].path,
			.type = s->e[i].type,
			.mode = s->e[i].mode,
			.uid = s->e[i].uid,
			.gid = s->e[i].gid,
			.linkname = s->e[i].link,
			.devmajor = s->e[i].major,
			.devminor = s->e[i].minor,
			.data = s->e[i].data,
			.size = s->e[i].size,
			.mtime = now,
		};
		if ((r = snapshot_tar_write(f, &t)) < 0)
			return r;
	}
	return snapshot_tar_finish(f);
}

static void snap_free(struct snap *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->e[i].path);
		free(s->e[i].link);
		free(s->e[i].data);
	}
	free(s->e);
	free(s->table);
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < s->n_recorded[k]; i++)
			free(s->recorded[k][i].path);
		free(s->recorded[k]);
	}
}

static bool wants_gzip(const char *out)
{
	size_t l = strlen(out);
	return (l > 3 && !strcmp(out + l - 3, ".gz")) || (l > 4 && !strcmp(out + l - 4, ".tgz"));
}

/* The archive's sink: a stdio stream over an fd, gzip'd in process (zlib, as `gzip -n` would:
 * no name, no time stamp), keeping the first write error's errno. A gzip child used to do
 * this: on a full file system it died, rdmak got SIGPIPE, and ENOSPC was lost. */
struct sink {
	int fd;
	bool gzip;
	z_stream z;
	int err; /* first -errno */
};

static int sink_deflate(struct sink *k, const void *buf, size_t len, int flush)
{
	unsigned char out[65536];

	k->z.next_in = (unsigned char *)(uintptr_t)buf;
	k->z.avail_in = (uInt)len;
	do {
		int zr;

		k->z.next_out = out;
		k->z.avail_out = sizeof(out);
		zr = deflate(&k->z, flush);
		if (zr == Z_STREAM_ERROR)
			return -EIO;
		if (sizeof(out) > k->z.avail_out) {
			int r = fileio_write_all(k->fd, out, sizeof(out) - k->z.avail_out);
			if (r < 0)
				return r;
		}
	} while (k->z.avail_out == 0 || (flush == Z_FINISH && k->z.avail_in));
	return 0;
}

static ssize_t sink_write(void *cookie, const char *buf, size_t len)
{
	struct sink *k = cookie;
	int r;

	if (k->err)
		return -1;
	r = k->gzip ? sink_deflate(k, buf, len, Z_NO_FLUSH) : fileio_write_all(k->fd, buf, len);
	if (r < 0) {
		k->err = r;
		errno = -r;
		return -1;
	}
	return (ssize_t)len;
}

/* Write the whole archive to fd; -errno as the kernel said it (ENOSPC, EPIPE, ...). */
static int write_to_fd(struct snap *s, int fd, bool gzip)
{
	static const cookie_io_functions_t io = { .write = sink_write };
	struct sink k = { .fd = fd, .gzip = gzip };
	FILE *f;
	int r;

	if (gzip && deflateInit2(&k.z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
				 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	f = fopencookie(&k, "w", io);
	if (!f) {
		r = -errno;
		goto out;
	}
	r = write_archive(s, f);
	if (fclose(f) != 0 && r >= 0)
		r = -EIO;
	if (r >= 0 && gzip && !k.err)
		k.err = sink_deflate(&k, NULL, 0, Z_FINISH);
	if (k.err)
		r = k.err; /* the real cause, not stdio's EIO */
out:
	if (gzip)
		deflateEnd(&k.z);
	return r;
}

/* Write the archive to path (through gzip when the name asks for it). A regular file (or a
 * new one) is replaced through a temporary file renamed into place, so a failure leaves
 * nothing half-written. Anything else is never replaced: a character device, FIFO or socket
 * (/dev/stdout, a pipe, /dev/null) is written through; a directory or block device is refused.
 * A symbolic link is followed: its target is written as above, the link stays. */
static int write_output(struct snap *s, const char *path, const char **why)
{
	_cleanup_free_ char *real = NULL;
	char tmp[PATH_MAX];
	bool gzip = wants_gzip(path);
	struct stat st;
	int fd, r;

	if (!strcmp(path, "-")) {
		fflush(stdout);
		return write_to_fd(s, STDOUT_FILENO, gzip);
	}
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		if (S_ISBLK(st.st_mode)) {
			*why = "a block device: refusing to write an archive over it";
			return -EEXIST;
		}
		if (!S_ISREG(st.st_mode)) {
			/* a FIFO blocks here until a reader comes, as `cat >FIFO` does */
			fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
			if (fd < 0)
				return -errno;
			r = write_to_fd(s, fd, gzip);
			if (close(fd) < 0 && r >= 0 && errno != EINVAL)
				r = -errno;
			return r;
		}
		/* a regular file, maybe behind symlinks: replace the file, keep the links */
		if (!(real = realpath(path, NULL)))
			return -errno;
		path = real;
	} else if (errno != ENOENT)
		return -errno;
	else if (lstat(path, &st) == 0) {
		/* where a dangling link points is not ours to create, nor the link ours to replace */
		*why = "a symbolic link to nothing: refusing to replace the link; name its target instead";
		return -ENOENT;
	}
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	r = write_to_fd(s, fd, gzip);
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r >= 0)
		r = -errno;
	/* a path that became something else than a regular file meanwhile is still not replaced */
	if (r >= 0 && lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
		r = -EEXIST;
	if (r >= 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

/* Exit codes (usage text and README). */
enum { SNAPSHOT_EXIT_OK = 0, SNAPSHOT_EXIT_IO = 1, SNAPSHOT_EXIT_USAGE = 2 };

static void usage(FILE *f)
{
	fputs("Usage: rdmak snapshot -o FILE [--root DIR | --sysfs DIR --devfs DIR]\n"
	      "\n"
	      "Capture exactly the sysfs files, symlinks and /dev/infiniband nodes that `rdmak list`\n"
	      "reads into a tar archive (gzip'd when FILE ends in .gz or .tgz; '-' writes tar to stdout).\n"
	      "A regular FILE is replaced atomically (through a symbolic link: its target); a device,\n"
	      "FIFO or socket (/dev/stdout, a pipe) is written through, never replaced.\n"
	      "On another machine: mkdir n && tar -xzf FILE -C n && rdmak list --root n\n"
	      "(extract as root to recreate the char device nodes; without root tar skips them).\n"
	      "\n"
	      "  -o, --output FILE  where to write the archive\n" HW_ROOT_USAGE
	      "  -h, --help         this text\n"
	      "\n"
	      "Exit: 0 written, 1 a read or write failed (named, e.g. \"No space left on device\";\n"
	      "nothing is left behind), 2 usage.\n",
	      f);
}

int snapshot_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		HW_ROOT_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *out = NULL;
	struct hw_roots roots = { 0 };
	struct snap s = { .roots = { -1, -1 } };
	struct hw_ctx *ctx = NULL;
	struct hw_node *node = NULL;
	struct hw_error err = { 0 };
	const char *why = NULL;
	char missing[PATH_MAX];
	int c, r, rc = SNAPSHOT_EXIT_IO;

	/* a reader that goes away (`-o - | head`) is a write error (EPIPE) reported like any other */
	signal(SIGPIPE, SIG_IGN);
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		if (hw_roots_option(&roots, c, optarg))
			continue;
		switch (c) {
		case 'o': out = optarg; break;
		case 'h': usage(stdout); return SNAPSHOT_EXIT_OK;
		default: usage(stderr); return SNAPSHOT_EXIT_USAGE;
		}
	}
	if (!out || optind < argc) {
		fprintf(stderr, "rdmak snapshot: %s\n",
			out ? "unexpected argument" : "-o FILE is required");
		return SNAPSHOT_EXIT_USAGE;
	}
	if ((r = hw_ctx_new_roots(&roots, &ctx, missing, sizeof(missing))) < 0) {
		fprintf(stderr, "rdmak snapshot: cannot open sysfs root %s: %s\n", missing,
			strerror(-r));
		return SNAPSHOT_EXIT_IO;
	}
	hw_ctx_set_recorder(ctx, recorder, &s);
	if ((r = hw_load(ctx, HW_LOAD_ALL, &node, &err)) < 0) {
		fprintf(stderr, "rdmak snapshot: cannot read %s/%s: %s\n", hw_ctx_sysfs(ctx),
			err.path, hw_strerror(err.err ? err.err : -r));
		goto out;
	}
	/* a port file that could not be read or parsed is what a bug report needs: captured as it
	 * is (rdmak list on the snapshot names it the same way), said here */
	HW_NODE_FOREACH_PORT(node, p)
	for (size_t i = 0; i < p->n_errors; i++) {
		char msg[PATH_MAX + 128];

		fprintf(stderr, "rdmak snapshot: warning: %s (captured as it is)\n",
			hw_attr_error_str(p, &p->errors[i], hw_ctx_sysfs(ctx), msg, sizeof(msg)));
	}
	/* what bench's ceiling model reads on demand, so `rdmak bench judge --root` works on the
	 * snapshot: each function's PCIe link and its bridges', and which GPUs have a device node */
	for (size_t i = 0; i < node->n_pci; i++) {
		struct hw_pci_link l;

		(void)hw_pci_read_link(ctx, node->pci[i].bdf, &l);
		for (size_t k = 0; k < node->pci[i].path_len; k++) {
			char cfg_path[PATH_MAX];
			unsigned char cfg[4096];

			(void)hw_pci_read_link(ctx, node->pci[i].path[k], &l);
			/* the bridges' config space, where the doctor's gpudirect.acs reads ACS control */
			snprintf(cfg_path, sizeof(cfg_path), "bus/pci/devices/%s/config",
				 node->pci[i].path[k]);
			(void)hw_ctx_read(ctx, HW_ROOT_SYSFS, cfg_path, cfg, sizeof(cfg));
		}
	}
	for (size_t i = 0; i < node->n_gpus; i++) {
		struct hw_devnode dn;

		(void)hw_gpu_read_devnode(ctx, &node->gpus[i], &dn);
	}
	/* the context's own root fds: what the model read is what is captured */
	s.roots[0] = hw_ctx_root_fd(ctx, HW_ROOT_SYSFS);
	s.roots[1] = hw_ctx_root_fd(ctx, HW_ROOT_DEVFS);
	r = s.err;
	for (int k = 0; r >= 0 && k < 2; k++) {
		if (s.roots[k] < 0)
			continue;
		for (size_t i = 0; r >= 0 && i < s.n_recorded[k]; i++) {
			const struct snap_rec *rec = &s.recorded[k][i];

			r = capture_path(&s, k, rec->path, 0, rec->how != HW_ACCESS_READLINK);
			/* directories the model listed: capture their entries too */
			if (r >= 0 && rec->how == HW_ACCESS_LIST)
				r = capture_listing(&s, k, rec->path);
		}
		/* the devfs listing: every node in infiniband/, referenced or not (ucm0, stale nodes) */
		if (r >= 0 && k == 1)
			r = capture_listing(&s, 1, "infiniband");
	}
	if (r >= 0)
		r = write_output(&s, out, &why);
	if (r < 0) {
		fprintf(stderr, "rdmak snapshot: writing %s: %s\n", out, why ? why : strerror(-r));
		goto out;
	}
	fprintf(stderr,
		"rdmak snapshot: wrote %s: %zu entries (%zu RDMA devices, %zu netdevs, %zu PCI functions)\n",
		out, s.n, node->n_rdma, node->n_netdevs, node->n_pci);
	rc = SNAPSHOT_EXIT_OK;
out:
	snap_free(&s);
	hw_node_free(node);
	hw_ctx_free(ctx);
	return rc;
}
