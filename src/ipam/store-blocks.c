/* SPDX-License-Identifier: Apache-2.0 */
/* The etcd store with per-node blocks ("perNodeBlockSize", docs/ipam.md "Per-node blocks").
 *
 * A pool is cut into blocks of perNodeBlockSize addresses, aligned on the subnet. A node owns
 * a block once one compare-and-put in the cluster store made it so:
 *   <prefix>/blocks/<pool>/<first address> -> {"node","last","created"}
 * (etcd's "if create_revision == 0 then put", so a block has one owner, never two), and hands
 * out the block's addresses from its node-local file store under dataDir, with the file store's
 * claims, records and cursors (store-file.c): an ADD on a node whose blocks have room makes no
 * network round trip at all, and keeps working with every etcd member down.
 *
 * The node's own blocks are also kept locally, so that it needs the cluster only to take a new
 * one: dataDir/blocks/<pool>/<first> is a symbolic link whose target is the block's value in
 * etcd (written after the etcd Txn; a kill in between leaves a block etcd says is this node's
 * and the node does not know: the next block claim or GC adopts it, see blocks_reconcile()).
 * A block is given back only from GC, when no local claim lies in it and it has been found
 * empty for blockReleaseAfter seconds: the local link goes first, the etcd key second, under the
 * pool's lock taken exclusively, which every allocation holds shared, so no address is ever
 * claimed in a block being given back. `rdmak ipam reclaim --node N` frees a gone node's blocks.
 *
 * Every op of the ops table but the blocks' goes to the local file store. The etcd client is
 * opened only when a block is needed (a per-pod rdmak-ipam, linked without the etcd module,
 * answers -ENOPKG then and hands the request to the full rdmak).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ipam/store.h"
#include "util/cleanup.h"

extern const struct ipam_store_driver ipam_store_etcd_driver __attribute__((weak));

struct blocks_store {
	struct ipam_store *local;
	struct ipam_store *cluster; /* NULL until a block is needed */
	struct ipamconf_store ccfg; /* the cluster's config, for the lazy open */
	char *dir;		    /* dataDir/blocks */
	char node[254];
	unsigned size, grace;
};

static struct blocks_store *BS(struct ipam_store *s)
{
	return s->priv;
}

static const struct blocks_store *BSC(const struct ipam_store *s)
{
	return s->priv;
}

/* The node's name, in order: nodeName, RDMAK_NODE_NAME, the file the installer writes
 * (RDMAK_NODE_NAME_FILE or IPAM_NODE_NAME_FILE), the host name. */
int ipam_node_name(const char *given, char *buf, size_t n, const char **ret_source)
{
	const char *env = getenv("RDMAK_NODE_NAME"), *file = getenv("RDMAK_NODE_NAME_FILE");
	char text[300];
	ssize_t len;
	int fd;

	if (!file || !*file)
		file = IPAM_NODE_NAME_FILE;
	if (given && *given) {
		*ret_source = "nodeName";
		snprintf(buf, n, "%s", given);
	} else if (env && *env) {
		*ret_source = "RDMAK_NODE_NAME";
		snprintf(buf, n, "%s", env);
	} else if ((fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) >= 0) {
		len = read(fd, text, sizeof(text) - 1);
		close(fd);
		if (len < 0)
			return -errno;
		text[len] = '\0';
		text[strcspn(text, "\n")] = '\0';
		*ret_source = file;
		snprintf(buf, n, "%s", text);
	} else {
		if (gethostname(text, sizeof(text)) < 0)
			return -errno;
		text[sizeof(text) - 1] = '\0';
		*ret_source = "the host name";
		snprintf(buf, n, "%s", text);
	}
	return ipamconf_node_name_valid(buf) ? 0 : -EINVAL;
}

/* ---- delegation to the local store ---------------------------------------------------------- */

static void take_error(struct ipam_store *s, const struct ipam_store *from)
{
	snprintf(s->error, sizeof(s->error), "%s", from->error);
}

#define L(s) (BS(s)->local)
#define LOCAL(call)                                                                                \
	do {                                                                                       \
		struct ipam_store *l = L(s);                                                       \
		int r_;                                                                            \
                                                                                                   \
		l->junk = s->junk;                                                                 \
		l->junk_ud = s->junk_ud;                                                           \
		l->repair = s->repair;                                                             \
		r_ = l->ops.call;                                                                  \
		if (r_ < 0)                                                                        \
			take_error(s, l);                                                          \
		return r_;                                                                         \
	} while (0)

static int b_ping(struct ipam_store *s)
{
	LOCAL(ping(l));
}
static int b_claim(struct ipam_store *s, const char *p, const char *a, const char *v)
{
	LOCAL(claim(l, p, a, v));
}
static int b_get(struct ipam_store *s, const char *p, const char *a, char **ret)
{
	LOCAL(get(l, p, a, ret));
}
static int b_release(struct ipam_store *s, const char *p, const char *a, const char *e)
{
	LOCAL(release(l, p, a, e));
}
static int b_list(struct ipam_store *s, const char *p, ipam_store_each_fn fn, void *ud)
{
	LOCAL(list(l, p, fn, ud));
}
static int b_count(struct ipam_store *s, const char *p, size_t *ret)
{
	LOCAL(count(l, p, ret));
}
static int b_pools(struct ipam_store *s, ipam_store_each_fn fn, void *ud)
{
	LOCAL(pools(l, fn, ud));
}
static int b_record_get(struct ipam_store *s, const char *n, const char *k, char **ret)
{
	LOCAL(record_get(l, n, k, ret));
}
static int b_record_put(struct ipam_store *s, const char *n, const char *k, const char *v)
{
	LOCAL(record_put(l, n, k, v));
}
static int b_record_del(struct ipam_store *s, const char *n, const char *k)
{
	LOCAL(record_del(l, n, k));
}
static int b_record_list(struct ipam_store *s, const char *n, ipam_store_each_fn fn, void *ud)
{
	LOCAL(record_list(l, n, fn, ud));
}
static int b_record_pending(struct ipam_store *s, const char *n, const char *k)
{
	LOCAL(record_pending(l, n, k));
}
static int b_cursor_get(struct ipam_store *s, const char *p, char **ret)
{
	LOCAL(cursor_get(l, p, ret));
}
static int b_cursor_put(struct ipam_store *s, const char *p, const char *a)
{
	LOCAL(cursor_put(l, p, a));
}
static int b_tidy(struct ipam_store *s, size_t *ret)
{
	LOCAL(tidy(l, ret));
}

/* ---- the cluster ------------------------------------------------------------------------------ */

static int cluster(struct ipam_store *s, struct ipam_store **ret)
{
	struct blocks_store *bs = BS(s);
	char why[sizeof(s->error)];
	int r;

	if (!bs->cluster) {
		if (&ipam_store_etcd_driver == NULL) {
			snprintf(s->error, sizeof(s->error),
				 "a new block needs the etcd store, not in this binary");
			return -ENOPKG;
		}
		r = ipam_store_open_driver(&ipam_store_etcd_driver, &bs->ccfg, &bs->cluster, why,
					   sizeof(why));
		if (r < 0) {
			snprintf(s->error, sizeof(s->error), "%s", why);
			return r;
		}
	}
	*ret = bs->cluster;
	return 0;
}

/* ---- the local list of the node's blocks ------------------------------------------------------- */

static int pool_dir(struct ipam_store *s, const char *pool, bool create, char **ret)
{
	char *d = NULL;

	if (!pool[0] || strchr(pool, '/') || pool[0] == '.')
		return -EINVAL;
	if (asprintf(&d, "%s/%s", BS(s)->dir, pool) < 0)
		return -ENOMEM;
	if (create && ((mkdir(BS(s)->dir, 0755) < 0 && errno != EEXIST) ||
		       (mkdir(d, 0755) < 0 && errno != EEXIST))) {
		int r = -errno;

		snprintf(s->error, sizeof(s->error), "%s: %s", d, strerror(errno));
		free(d);
		return r;
	}
	*ret = d;
	return 0;
}

int ipam_blocks_lock(struct ipam_store *s, const char *pool, bool exclusive)
{
	_cleanup_free_ char *d = NULL, *path = NULL;
	int fd, r = pool_dir(s, pool, true, &d);

	if (r < 0)
		return r;
	if (asprintf(&path, "%s/.lock", d) < 0)
		return -ENOMEM;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0 || flock(fd, exclusive ? LOCK_EX : LOCK_SH) < 0) {
		r = -errno;
		snprintf(s->error, sizeof(s->error), "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return r;
	}
	return fd;
}

int ipam_blocks_mine(struct ipam_store *s, const char *pool, ipam_store_each_fn fn, void *ud)
{
	_cleanup_free_ char *d = NULL;
	_cleanup_(closedirp) DIR *dir = NULL;
	struct dirent *de;
	int r = pool_dir(s, pool, false, &d);

	if (r < 0)
		return r;
	dir = opendir(d);
	if (!dir)
		return errno == ENOENT ? 0 : -errno;
	while (r == 0 && (de = readdir(dir))) {
		char target[IPAM_STORE_VALUE_MAX + 1];
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		n = readlinkat(dirfd(dir), de->d_name, target, sizeof(target) - 1);
		if (n < 0)
			continue; /* not a block link: junk that rdmak-ipam did not write */
		target[n] = '\0';
		r = fn(ud, de->d_name, target);
	}
	return r;
}

static int mine_put(struct ipam_store *s, const char *pool, const char *first, const char *value)
{
	_cleanup_free_ char *d = NULL;
	int r = pool_dir(s, pool, true, &d);
	_cleanup_close_ int fd = -1;

	if (r < 0)
		return r;
	fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (symlinkat(value, fd, first) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int ipam_blocks_forget(struct ipam_store *s, const char *pool, const char *first)
{
	_cleanup_free_ char *d = NULL, *path = NULL, *mark = NULL;
	int r = pool_dir(s, pool, false, &d);

	if (r < 0)
		return r;
	if (asprintf(&path, "%s/%s", d, first) < 0 || asprintf(&mark, "%s/.empty.%s", d, first) < 0)
		return -ENOMEM;
	unlink(mark);
	if (unlink(path) < 0)
		return errno == ENOENT ? 0 : -errno;
	return 1;
}

/* How long the block has been found empty: a marker file's age, the marker made now when
 * there is none; empty false removes it. 0 or -errno. */
int ipam_blocks_empty_for(struct ipam_store *s, const char *pool, const char *first, bool empty,
			  long long *ret)
{
	_cleanup_free_ char *d = NULL, *mark = NULL;
	struct stat st;
	int fd, r = pool_dir(s, pool, true, &d);

	if (r < 0)
		return r;
	if (asprintf(&mark, "%s/.empty.%s", d, first) < 0)
		return -ENOMEM;
	*ret = 0;
	if (!empty)
		return unlink(mark) < 0 && errno != ENOENT ? -errno : 0;
	if (stat(mark, &st) == 0) {
		*ret = (long long)(time(NULL) - st.st_mtime);
		return 0;
	}
	fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* ---- blocks in the cluster --------------------------------------------------------------------- */

int ipam_blocks_owners(struct ipam_store *s, const char *pool, ipam_store_each_fn fn, void *ud)
{
	struct ipam_store *c;
	int r = cluster(s, &c);

	if (r < 0)
		return r;
	r = c->ops.block_list(c, pool, fn, ud);
	if (r < 0)
		take_error(s, c);
	return r;
}

static char *block_value(const char *node, const char *last)
{
	char stamp[32], *v = NULL;
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (asprintf(&v, "{\"node\":\"%s\",\"last\":\"%s\",\"created\":\"%s\"}", node, last,
		     stamp) < 0)
		return NULL;
	return v;
}

int ipam_blocks_claim(struct ipam_store *s, const char *pool, const char *first, const char *last)
{
	_cleanup_free_ char *v = block_value(BS(s)->node, last);
	struct ipam_store *c;
	int r;

	if (!v)
		return -ENOMEM;
	if ((r = cluster(s, &c)) < 0)
		return r;
	r = c->ops.block_claim(c, pool, first, v);
	if (r < 0) {
		take_error(s, c);
		return r;
	}
	if (r == 1 && (r = mine_put(s, pool, first, v)) >= 0)
		r = 1;
	return r;
}

/* Make the local list say what etcd says of this node's blocks of pool: value is the block's
 * value in etcd. */
int ipam_blocks_adopt(struct ipam_store *s, const char *pool, const char *first, const char *value)
{
	return mine_put(s, pool, first, value);
}

/* Give a block back in the cluster: only if its value there is still expect. 1, 0, <0. */
int ipam_blocks_release(struct ipam_store *s, const char *pool, const char *first,
			const char *expect)
{
	struct ipam_store *c;
	int r = cluster(s, &c);

	if (r < 0)
		return r;
	r = c->ops.block_release(c, pool, first, expect);
	if (r < 0)
		take_error(s, c);
	return r;
}

unsigned ipam_store_blocks(const struct ipam_store *s)
{
	return s->driver == &ipam_store_blocks_driver ? BSC(s)->size : 0;
}

const char *ipam_blocks_node(const struct ipam_store *s)
{
	return BSC(s)->node;
}

unsigned ipam_blocks_grace(const struct ipam_store *s)
{
	return BSC(s)->grace;
}

/* ---- the store ----------------------------------------------------------------------------------- */

static void b_close(struct ipam_store *s)
{
	struct blocks_store *bs = BS(s);

	if (!bs)
		return;
	ipam_store_close(bs->local);
	ipam_store_close(bs->cluster);
	ipamconf_store_clear(&bs->ccfg);
	free(bs->dir);
	free(bs);
	s->priv = NULL;
}

static int copy_config(const struct ipamconf_store *cfg, struct ipamconf_store *c)
{
	c->kind = IPAMCONF_STORE_ETCD;
	c->endpoints = calloc(cfg->n_endpoints + 1, sizeof(char *));
	if (!c->endpoints)
		return -ENOMEM;
	for (size_t i = 0; i < cfg->n_endpoints; i++) {
		if (!(c->endpoints[i] = strdup(cfg->endpoints[i])))
			return -ENOMEM;
		c->n_endpoints++;
	}
	if ((cfg->prefix && !(c->prefix = strdup(cfg->prefix))) ||
	    (cfg->tls_ca && !(c->tls_ca = strdup(cfg->tls_ca))) ||
	    (cfg->tls_cert && !(c->tls_cert = strdup(cfg->tls_cert))) ||
	    (cfg->tls_key && !(c->tls_key = strdup(cfg->tls_key))))
		return -ENOMEM;
	return 0;
}

static int b_open(struct ipam_store *s, const struct ipamconf_store *cfg)
{
	struct ipamconf_store lcfg = { .kind = IPAMCONF_STORE_FILE, .data_dir = cfg->data_dir };
	struct blocks_store *bs = calloc(1, sizeof(*bs));
	const char *source = "";
	char why[sizeof(s->error)];
	int r;

	if (!bs)
		return -ENOMEM;
	s->priv = bs;
	bs->size = cfg->block_size;
	bs->grace = cfg->block_grace_s;
	r = ipam_node_name(cfg->node_name, bs->node, sizeof(bs->node), &source);
	if (r < 0) {
		snprintf(s->error, sizeof(s->error),
			 "the node's name (from %s) \"%s\" is not a node name: give \"nodeName\"",
			 source, bs->node);
		b_close(s);
		return r;
	}
	r = copy_config(cfg, &bs->ccfg);
	if (r >= 0 && asprintf(&bs->dir, "%s/blocks",
			       cfg->data_dir ? cfg->data_dir : IPAMCONF_FILE_DEFAULT_DIR) < 0)
		r = -ENOMEM;
	if (r >= 0 && (r = ipam_store_open_driver(&ipam_store_file_driver, &lcfg, &bs->local, why,
						  sizeof(why))) < 0)
		snprintf(s->error, sizeof(s->error), "%s", why);
	if (r < 0)
		b_close(s);
	return r;
}

static const struct ipam_store_ops blocks_store_ops = {
	.ping = b_ping,
	.claim = b_claim,
	.get = b_get,
	.release = b_release,
	.list = b_list,
	.count = b_count,
	.pools = b_pools,
	.record_get = b_record_get,
	.record_put = b_record_put,
	.record_del = b_record_del,
	.record_list = b_record_list,
	.record_pending = b_record_pending,
	.cursor_get = b_cursor_get,
	.cursor_put = b_cursor_put,
	.tidy = b_tidy,
	.close = b_close,
};

const struct ipam_store_driver ipam_store_blocks_driver = {
	.name = "etcd",
	.open = b_open,
	.ops = &blocks_store_ops,
};
