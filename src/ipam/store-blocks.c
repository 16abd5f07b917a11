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
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "ipam/store.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/strv.h"

extern const struct ipam_store_driver ipam_store_etcd_driver __attribute__((weak));

/* The node's last renewal of its lease, as it keeps it (dataDir/blocks/.lease.<prefix>). */
struct lease_local {
	bool have;
	char boot[40];	  /* the kernel's boot_id: CLOCK_BOOTTIME starts again at each boot */
	double sent;	  /* CLOCK_BOOTTIME when the renewal was sent */
	long long ttl;	  /* what etcd granted */
	long long claims; /* the claims it said the node held */
};

struct blocks_store {
	struct ipam_store *local;
	struct ipam_store *cluster; /* NULL until a block is needed */
	struct ipamconf_store ccfg; /* the cluster's config, for the lazy open */
	char *dir;		    /* dataDir/blocks */
	char *lease_file;	    /* .lease.<prefix> in dir */
	char node[254];
	unsigned size, grace, lease_ttl;
	struct lease_local lease; /* what ipam_blocks_lease() found or made */
	bool lease_held;
};

static struct blocks_store *BS(struct ipam_store *s)
{
	return s->priv;
}

static const struct blocks_store *BSC(const struct ipam_store *s)
{
	return s->priv;
}

/* The name the node's owner gave it: RDMAK_NODE_NAME, else the file the installer writes
 * (RDMAK_NODE_NAME_FILE or IPAM_NODE_NAME_FILE). 1 and buf, 0 none given, <0. */
static int owner_node_name(char *buf, size_t n, const char **ret_source)
{
	const char *env = getenv("RDMAK_NODE_NAME"), *file = getenv("RDMAK_NODE_NAME_FILE");
	char text[300];
	ssize_t len;
	int fd;

	if (!file || !*file)
		file = IPAM_NODE_NAME_FILE;
	if (env && *env) {
		*ret_source = "RDMAK_NODE_NAME";
		snprintf(buf, n, "%s", env);
		return 1;
	}
	fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	len = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (len < 0)
		return -errno;
	text[len] = '\0';
	text[strcspn(text, "\n")] = '\0';
	*ret_source = file;
	snprintf(buf, n, "%s", text);
	return 1;
}

/* The node's name, in order: the owner's (RDMAK_NODE_NAME, the installer's file), nodeName, the
 * host name. nodeName is a network's (its NetworkAttachmentDefinition's author's): it names the
 * node only where the owner named none, and one that names another node is -EPERM (buf then
 * the owner's name), since it would take and renew that node's blocks and lease. */
int ipam_node_name(const char *given, char *buf, size_t n, const char **ret_source)
{
	char text[300];
	int r = owner_node_name(buf, n, ret_source);

	if (r < 0)
		return r;
	if (r == 1 && given && *given && strcmp(given, buf))
		return -EPERM;
	if (r == 0 && given && *given) {
		*ret_source = "nodeName";
		snprintf(buf, n, "%s", given);
	} else if (r == 0) {
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
		int r = ipam_store_error(s, -errno, "%s: %s", d, strerror(errno));

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
		r = ipam_store_error(s, -errno, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return r;
	}
	return fd;
}

int ipam_blocks_mine(struct ipam_store *s, const char *pool, ipam_store_each_fn fn, void *ud)
{
	_cleanup_free_ char *d = NULL;
	_cleanup_strv_free_ char **names = NULL;
	_cleanup_close_ int dir = -1;
	size_t k = 0;
	int r = pool_dir(s, pool, false, &d);

	if (r < 0)
		return r;
	dir = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return errno == ENOENT ? 0 : -errno;
	r = fileio_list_dir(dir, FILEIO_LIST_NO_HIDDEN, &names, &k);
	for (size_t i = 0; i < k && r == 0; i++) {
		char target[IPAM_STORE_VALUE_MAX + 1];
		ssize_t n = readlinkat(dir, names[i], target, sizeof(target) - 1);

		if (n < 0)
			continue; /* not a block link: junk that rdmak-ipam did not write */
		target[n] = '\0';
		r = fn(ud, names[i], target);
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
	/* a callback's failure leaves its reason in s->error, the store's in c->error */
	c->error[0] = '\0';
	r = c->ops.block_list(c, pool, fn, ud);
	if (r < 0 && c->error[0])
		take_error(s, c);
	return r;
}

static char *block_value(const char *node, const char *last)
{
	char stamp[STR_UTC_LEN], *v = NULL;

	str_utc(time(NULL), stamp);
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
	r = c->ops.block_claim(c, pool, first, v, BS(s)->size);
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

/* Give a block back in the cluster: only if its value there is still expect (and, with
 * unless_alive, that node holds no lease). 1, 0, <0. */
int ipam_blocks_release(struct ipam_store *s, const char *pool, const char *first,
			const char *expect, const char *unless_alive)
{
	struct ipam_store *c;
	int r = cluster(s, &c);

	if (r < 0)
		return r;
	r = c->ops.block_release(c, pool, first, expect, unless_alive);
	if (r < 0)
		take_error(s, c);
	return r;
}

int ipam_blocks_size_check(struct ipam_store *s, const char *pool)
{
	struct ipam_store *c;
	unsigned have = 0;
	int r = cluster(s, &c);

	if (r < 0)
		return r;
	r = c->ops.block_size(c, pool, &have);
	if (r < 0) {
		take_error(s, c);
		return r;
	}
	if (r == 1 && have != BS(s)->size) {
		snprintf(
			s->error, sizeof(s->error),
			"pool %s is handed out to nodes in blocks of %u addresses (perNodeBlockSize, "
			"stored with the pool at its first block), and this configuration says %u: "
			"write \"perNodeBlockSize\": %u",
			pool, have, BS(s)->size, have);
		return -EXDEV;
	}
	return 0;
}

/* ---- the node's lease ------------------------------------------------------------------------ */

static double boot_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void boot_id(char *buf, size_t n)
{
	_cleanup_free_ char *text = NULL;

	buf[0] = '\0';
	if (fileio_read_at(AT_FDCWD, "/proc/sys/kernel/random/boot_id", 64, &text, NULL) == 0)
		snprintf(buf, n, "%.*s", (int)strcspn(text, "\n"), text);
}

static struct lease_local lease_load(struct blocks_store *bs)
{
	_cleanup_free_ char *text = NULL;
	struct lease_local l = { 0 };
	const char *boot = NULL;
	json_t *v;

	if (fileio_read_at(AT_FDCWD, bs->lease_file, 4096, &text, NULL) < 0)
		return l;
	v = json_loads(text, 0, NULL);
	if (v && json_unpack(v, "{s:s, s:F, s:I, s:I}", "boot", &boot, "sent", &l.sent, "ttl",
			     &l.ttl, "claims", &l.claims) == 0) {
		snprintf(l.boot, sizeof(l.boot), "%s", boot);
		l.have = true;
	}
	json_decref(v);
	return l;
}

static int lease_save(struct blocks_store *bs, const struct lease_local *l)
{
	json_t *v = json_pack("{s:s, s:f, s:I, s:I}", "boot", l->boot, "sent", l->sent, "ttl",
			      (json_int_t)l->ttl, "claims", (json_int_t)l->claims);
	char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
	int r = text ? 0 : -ENOMEM;

	json_decref(v);
	if (r == 0 && mkdir(bs->dir, 0755) < 0 && errno != EEXIST)
		r = -errno;
	if (r == 0)
		r = fileio_write_atomic_at(AT_FDCWD, bs->lease_file, text, strlen(text), 0644);
	free(text);
	return r;
}

/* Whether the renewal l still holds at now: this boot's, and younger than 9/10 of its TTL.
 * etcd's lease started when etcd granted it, after the renewal was sent, and expires a TTL
 * later by its leader's clock: the tenth is for the two clocks' rates. */
static bool lease_holds(const struct lease_local *l, const char *boot, double now)
{
	return l->have && !strcmp(l->boot, boot) && now >= l->sent &&
	       now < l->sent + (double)l->ttl * 0.9;
}

static int count_one(void *ud, const char *name, const char *value)
{
	struct ipam_store *s = ((void **)ud)[0];
	long long *n = ((void **)ud)[1];
	size_t c = 0;
	int r = L(s)->ops.count(L(s), name, &c);

	*n += (long long)c;
	return r < 0 ? r : 0;
}

static bool value_names(const char *value, const char *node)
{
	json_t *v = json_loads(value, 0, NULL);
	const char *n = json_string_value(json_object_get(v, "node"));
	bool ok = n && !strcmp(n, node);

	json_decref(v);
	return ok;
}

struct ours {
	const char *node;
	char **firsts;
	size_t n;
};

static int our_block(void *ud, const char *name, const char *value)
{
	struct ours *o = ud;
	char **v;

	if (!value_names(value, o->node))
		return 0;
	v = realloc(o->firsts, (o->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	o->firsts = v;
	return (o->firsts[o->n] = strdup(name)) ? (o->n++, 0) : -ENOMEM;
}

static int forget_not_ours(void *ud, const char *name, const char *value)
{
	struct ours *o = ((void **)ud)[1];

	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->firsts[i], name))
			return 0;
	int r = ipam_blocks_forget(((void **)ud)[0], ((void **)ud)[2], name);

	return r < 0 ? r : 0;
}

/* After a lapse the node's blocks may have been reclaimed: its list keeps only those etcd still
 * says are its, each pool under its lock held exclusively (no ADD of this node allocates in it
 * meanwhile). The renewal came first, so no reclaim takes a block after this read. */
static int lease_reconcile(struct ipam_store *s, struct ipam_store *c)
{
	_cleanup_close_ int dir = open(BS(s)->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_strv_free_ char **names = NULL;
	size_t n = 0;
	int r;

	if (dir < 0)
		return errno == ENOENT ? 0 : -errno;
	r = fileio_list_dir(dir, FILEIO_LIST_NO_HIDDEN, &names, &n);
	for (size_t k = 0; k < n && r >= 0; k++) {
		const char *pool = names[k];
		struct ours o = { .node = BS(s)->node };
		void *ud[3] = { s, &o, (void *)pool };
		struct stat st;
		int fd;

		if (fstatat(dir, pool, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		fd = ipam_blocks_lock(s, pool, true);
		if (fd < 0)
			return fd;
		r = c->ops.block_list(c, pool, our_block, &o);
		if (r < 0)
			take_error(s, c);
		else
			r = ipam_blocks_mine(s, pool, forget_not_ours, ud);
		close(fd);
		for (size_t i = 0; i < o.n; i++)
			free(o.firsts[i]);
		free(o.firsts);
	}
	return r;
}

static int lease_renew(struct ipam_store *s, enum ipam_lease_for why, bool held,
		       struct lease_local *ret)
{
	struct blocks_store *bs = BS(s);
	struct lease_local l = { .have = true, .sent = boot_now() };
	_cleanup_free_ char *value = NULL;
	void *ud[2] = { s, &l.claims };
	struct ipam_store *c;
	char stamp[32];
	int r;

	boot_id(l.boot, sizeof(l.boot));
	/* the claims it holds, and the one an ADD is about to make */
	r = L(s)->ops.pools(L(s), count_one, ud);
	if (r < 0) {
		take_error(s, L(s));
		return r;
	}
	l.claims += why == IPAM_LEASE_ADD;
	str_utc(time(NULL), stamp);
	if (asprintf(&value, "{\"node\":\"%s\",\"renewed\":\"%s\",\"ttl\":%u,\"claims\":%lld}",
		     bs->node, stamp, bs->lease_ttl, l.claims) < 0)
		return -ENOMEM;
	if ((r = cluster(s, &c)) < 0)
		return r;
	r = c->ops.lease_renew(c, bs->node, value, bs->lease_ttl, &l.ttl);
	if (r >= 0 && !held)
		r = lease_reconcile(s, c);
	if (r < 0) {
		if (!s->error[0])
			take_error(s, c);
		return r;
	}
	/* the local record last: a process that finds it fresh finds the list reconciled */
	if ((r = lease_save(bs, &l)) < 0)
		return ipam_store_error(s, r, "%s: %s", bs->lease_file, strerror(-r));
	*ret = l;
	return 0;
}

int ipam_blocks_lease(struct ipam_store *s, enum ipam_lease_for why)
{
	struct blocks_store *bs = BS(s);
	struct lease_local l = lease_load(bs);
	_cleanup_free_ char *msg = NULL;
	char boot[40];
	double now = boot_now();
	bool held, due, must;
	int r;

	boot_id(boot, sizeof(boot));
	held = lease_holds(&l, boot, now);
	due = !held || why == IPAM_LEASE_GC || now >= l.sent + (double)l.ttl / 3 ||
	      (why == IPAM_LEASE_ADD && l.claims == 0);
	must = why == IPAM_LEASE_GC || (why == IPAM_LEASE_ADD && (!held || l.claims == 0));
	bs->lease = l;
	bs->lease_held = held;
	if (!due)
		return 0;
	s->error[0] = '\0';
	r = lease_renew(s, why, held, &bs->lease);
	if (r >= 0) {
		bs->lease_held = true;
		return 0;
	}
	/* an ADD in the per-pod binary hands a due renewal to the full rdmak (no etcd here) */
	if (!must && !(why == IPAM_LEASE_ADD && r == -ENOPKG))
		return 0;
	if (asprintf(
		    &msg,
		    "node %s renews its lease in etcd (%s/leases/%s, the proof that it is alive that "
		    "`rdmak ipam reclaim` asks for) before it %s, %s: %s",
		    bs->node, bs->ccfg.prefix ? bs->ccfg.prefix : IPAMCONF_ETCD_DEFAULT_PREFIX,
		    bs->node, why == IPAM_LEASE_GC ? "finishes GC" : "hands out an address",
		    why == IPAM_LEASE_GC ? "and could not"
		    : !l.have		 ? "it has none yet"
		    : !held		 ? "and its last renewal has lapsed"
					 : "since its last one said it held no claim",
		    s->error) >= 0)
		snprintf(s->error, sizeof(s->error), "%s", msg);
	return r;
}

bool ipam_blocks_lease_holds(struct ipam_store *s)
{
	char boot[40];

	boot_id(boot, sizeof(boot));
	return BS(s)->lease_held && lease_holds(&BS(s)->lease, boot, boot_now());
}

static void lease_value(const char *text, struct ipam_node_lease *ret)
{
	json_t *v = json_loads(text, 0, NULL);

	snprintf(ret->renewed, sizeof(ret->renewed), "%s",
		 json_string_value(json_object_get(v, "renewed")) ?: "");
	ret->ttl = json_integer_value(json_object_get(v, "ttl"));
	ret->claims = json_integer_value(json_object_get(v, "claims"));
	json_decref(v);
}

int ipam_blocks_node_lease(struct ipam_store *s, const char *node, struct ipam_node_lease *ret)
{
	_cleanup_free_ char *live = NULL, *last = NULL;
	struct ipam_node_lease nl = { .state = IPAM_NODE_NEVER };
	struct ipam_store *c;
	long long left = 0;
	int r = cluster(s, &c);

	if (r < 0)
		return r;
	r = c->ops.lease_read(c, node, &live, &left, &last);
	if (r < 0) {
		take_error(s, c);
		return r;
	}
	snprintf(nl.key, sizeof(nl.key), "%s/leases/%s",
		 BS(s)->ccfg.prefix ? BS(s)->ccfg.prefix : IPAMCONF_ETCD_DEFAULT_PREFIX, node);
	if (live) {
		nl.state = IPAM_NODE_LIVE;
		nl.left = left;
		lease_value(live, &nl);
	} else if (last) {
		nl.state = IPAM_NODE_EXPIRED;
		lease_value(last, &nl);
	}
	*ret = nl;
	return 0;
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
	free(bs->lease_file);
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

/* One record per etcd prefix: a dataDir may serve networks on two (the lease is per prefix). */
static int lease_file(struct blocks_store *bs)
{
	const char *prefix = bs->ccfg.prefix ? bs->ccfg.prefix : IPAMCONF_ETCD_DEFAULT_PREFIX;
	char name[128];
	size_t n = 0;

	for (const char *p = prefix; *p && n < sizeof(name) - 1; p++)
		name[n++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
					    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.'
				    ? *p
				    : '_';
	name[n] = '\0';
	return asprintf(&bs->lease_file, "%s/.lease.%s", bs->dir, name) < 0 ? -ENOMEM : 0;
}

static int b_open(struct ipam_store *s, const struct ipamconf_store *cfg)
{
	struct ipamconf_store lcfg = { .kind = IPAMCONF_STORE_FILE,
				       .data_dir = cfg->data_dir,
				       .data_base = cfg->data_base };
	struct blocks_store *bs = calloc(1, sizeof(*bs));
	const char *source = "";
	char why[sizeof(s->error)];
	int r;

	if (!bs)
		return -ENOMEM;
	s->priv = bs;
	bs->size = cfg->block_size;
	bs->grace = cfg->block_grace_s;
	bs->lease_ttl = cfg->lease_ttl_s ? cfg->lease_ttl_s : IPAMCONF_LEASE_DEFAULT_TTL;
	r = ipam_node_name(cfg->node_name, bs->node, sizeof(bs->node), &source);
	if (r == -EPERM) {
		snprintf(
			s->error, sizeof(s->error),
			"nodeName \"%s\" is not this node's name \"%s\" (from %s): remove nodeName "
			"(a network's configuration may not act as another node)",
			cfg->node_name, bs->node, source);
		b_close(s);
		return r;
	}
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
	if (r >= 0 && lease_file(bs) < 0)
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
