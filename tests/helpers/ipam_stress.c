/* SPDX-License-Identifier: Apache-2.0 */
/* Drives the IPAM allocator from many processes at once, the way many rdmak-ipam processes
 * on a node would, without the cost of exec'ing one sanitized binary per ADD:
 *
 *   ipam_stress stress CONFIG PROCS N     N ADDs shared by PROCS processes (keys s<proc>-<i>);
 *                                         every ADD's address must be distinct and claimed in
 *                                         its name: prints "N adds, N distinct addresses";
 *                                         the wall time, from the first fork to the last
 *                                         exit, on stderr ("ipam_stress: N adds in S s")
 *   ipam_stress kill CONFIG N SEED [MS]   N ADDs, each in a child killed with SIGKILL at a
 *                                         random instant (0-MS ms, default 3); prints, as
 *                                         JSON, the attachments whose ADD answered (for
 *                                         `gc --valid`)
 *   ipam_stress verify CONFIG [VALID]     the store reads back consistent: every claim parses
 *                                         and names this network, every complete record's
 *                                         claims are its own; with VALID (after GC): the
 *                                         claims are exactly those of VALID's attachments
 * Exit 0 when all holds, 1 otherwise (the first violation on stderr).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ipam/ipam.h"
#include "nodeconf/nodeconf.h"
#include "util/cleanup.h"
#include "util/fileio.h"

static struct ipamconf *load(const char *path)
{
	_cleanup_free_ char *buf = NULL;
	struct cnispec_error err = { 0 };
	struct ipamconf *c = NULL;
	struct nodeconf node = { 0 };
	char why[NODECONF_ERR_MAX];
	size_t len;

	if (fileio_read_at(AT_FDCWD, path, 1 << 20, &buf, &len) < 0 ||
	    ipamconf_load(buf, len, 0, &c, &err) < 0) {
		fprintf(stderr, "ipam_stress: %s: %s\n", path, err.details);
		exit(2);
	}
	/* what the network names of the node's, as the plugin resolves it ($RDMAK_CNI_CONFIG) */
	if (nodeconf_load(NULL, &node, why, sizeof(why)) < 0) {
		fprintf(stderr, "ipam_stress: %s\n", why);
		exit(2);
	}
	if (ipamconf_resolve(c, &node, 0, &err) < 0) {
		fprintf(stderr, "ipam_stress: %s: %s\n", path, err.details);
		exit(2);
	}
	nodeconf_clear(&node);
	return c;
}

static struct ipam_store *open_store(const struct ipamconf *c)
{
	struct ipam_store *s = NULL;
	char why[512];

	if (ipam_store_open(&c->store, &s, why, sizeof(why)) < 0) {
		fprintf(stderr, "ipam_stress: %s\n", why);
		exit(2);
	}
	return s;
}

/* One ADD; the first address as text into buf. */
static int add_one(struct ipam_store *s, const struct ipamconf *c, const char *cid, char *buf,
		   size_t n)
{
	struct ipam_owner o = {
		.container_id = cid, .ifname = "net1", .pod_namespace = "stress", .pod_name = cid
	};
	struct cnispec_result *r = NULL;
	struct cnispec_error err = { 0 };

	if (ipam_add(s, c, &o, &r, &err) < 0) {
		fprintf(stderr, "ipam_stress: ADD %s: %s: %s\n", cid, err.msg, err.details);
		return -1;
	}
	cnispec_addr_str(&r->ips[0].address.addr, buf);
	(void)n;
	cnispec_result_free(r);
	return 0;
}

/* ---- stress ---------------------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int stress(const char *cfg_path, int procs, int total)
{
	struct ipamconf *c = load(cfg_path);
	char tmpl[] = "/tmp/ipam-stress.XXXXXX";
	int fd = mkstemp(tmpl), bad = 0;
	double t0;
	char **addrs;
	size_t n = 0, distinct = 0;
	FILE *f;

	if (fd < 0)
		return 2;
	fcntl(fd, F_SETFL, O_APPEND);
	unlink(tmpl);
	t0 = now_s();
	for (int p = 0; p < procs; p++) {
		int per = total / procs + (p < total % procs);

		if (fork() == 0) {
			struct ipam_store *s = open_store(c);
			char line[128], cid[32], a[CNISPEC_PREFIX_STRLEN];

			for (int i = 0; i < per; i++) {
				snprintf(cid, sizeof(cid), "s%d-%d", p, i);
				if (add_one(s, c, cid, a, sizeof(a)) < 0)
					_exit(1);
				/* a write() per line, appended through the shared offset */
				snprintf(line, sizeof(line), "%s %s\n", cid, a);
				if (write(fd, line, strlen(line)) != (ssize_t)strlen(line))
					_exit(1);
			}
			ipam_store_close(s);
			_exit(0);
		}
	}
	for (int p = 0; p < procs; p++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad++;
	}
	fprintf(stderr, "ipam_stress: %d adds by %d processes in %.2f s\n", total, procs,
		now_s() - t0);
	if (bad) {
		fprintf(stderr, "ipam_stress: %d allocator processes failed\n", bad);
		return 1;
	}
	/* every address handed out, once each */
	addrs = calloc((size_t)total + 1, sizeof(char *));
	lseek(fd, 0, SEEK_SET);
	f = fdopen(fd, "r");
	{
		char cid[64], a[64];

		while (f && fscanf(f, "%63s %63s", cid, a) == 2 && n < (size_t)total)
			addrs[n++] = strdup(a);
	}
	qsort(addrs, n, sizeof(char *), cmp_str);
	for (size_t i = 0; i < n; i++) {
		if (i && !strcmp(addrs[i], addrs[i - 1])) {
			fprintf(stderr, "ipam_stress: DUPLICATE %s\n", addrs[i]);
			bad++;
		} else {
			distinct++;
		}
	}
	printf("%zu adds, %zu distinct addresses\n", n, distinct);
	for (size_t i = 0; i < n; i++)
		free(addrs[i]);
	free(addrs);
	if (f)
		fclose(f);
	ipamconf_free(c);
	return bad || n != (size_t)total ? 1 : 0;
}

/* ---- kill ------------------------------------------------------------------------------------ */

static int kill_test(const char *cfg_path, int n, unsigned seed, int max_ms)
{
	struct ipamconf *c = load(cfg_path);
	int answered = 0;

	srand(seed);
	printf("[");
	for (int i = 0; i < n; i++) {
		int pipefd[2], st;
		char cid[32], buf[128] = "";
		pid_t pid;
		ssize_t k;

		snprintf(cid, sizeof(cid), "k%d", i);
		if (pipe(pipefd) < 0)
			return 2;
		pid = fork();
		if (pid == 0) {
			struct ipam_store *s;
			char a[CNISPEC_PREFIX_STRLEN];

			close(pipefd[0]);
			s = open_store(c);
			if (add_one(s, c, cid, a, sizeof(a)) == 0)
				(void)!write(pipefd[1], a, strlen(a));
			_exit(0);
		}
		close(pipefd[1]);
		usleep((useconds_t)(rand() % (max_ms * 1000)));
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		k = read(pipefd[0], buf, sizeof(buf) - 1);
		close(pipefd[0]);
		/* the runtime saw a result only if the child wrote one before it died */
		if (k > 0) {
			printf("%s{\"containerID\":\"%s\",\"ifname\":\"net1\"}",
			       answered ? "," : "", cid);
			answered++;
		}
	}
	printf("]\n");
	fprintf(stderr, "ipam_stress: %d of %d ADDs answered before the kill\n", answered, n);
	ipamconf_free(c);
	return 0;
}

/* ---- verify ---------------------------------------------------------------------------------- */

struct v {
	struct ipam_store *s;
	const struct ipamconf *c;
	const char *pool;
	struct cnispec_conf *valid; /* NULL: no exactness check */
	size_t claims, bad;
};

static int check_claim(void *ud, const char *addr, const char *value)
{
	struct v *v = ud;
	json_t *o = json_loads(value, 0, NULL);
	const char *cid = json_string_value(json_object_get(o, "containerID"));
	const char *ifn = json_string_value(json_object_get(o, "ifname"));
	const char *net = json_string_value(json_object_get(o, "network"));

	v->claims++;
	if (!cid || !ifn || !net || strcmp(net, v->c->network)) {
		fprintf(stderr, "ipam_stress: claim %s/%s does not parse: %s\n", v->pool, addr,
			value);
		v->bad++;
	} else if (v->valid && !cnispec_conf_attachment_valid(v->valid, cid, ifn)) {
		fprintf(stderr, "ipam_stress: claim %s/%s of %s:%s survived GC\n", v->pool, addr,
			cid, ifn);
		v->bad++;
	}
	json_decref(o);
	return 0;
}

static int check_record(void *ud, const char *key, const char *value)
{
	struct v *v = ud;
	json_t *o = json_loads(value, 0, NULL), *ips = json_object_get(o, "ips"), *it;
	size_t i;

	if (!o) {
		fprintf(stderr, "ipam_stress: record %s does not parse: %s\n", key, value);
		v->bad++;
	}
	json_array_foreach(ips, i, it)
	{
		const char *claim = json_string_value(it),
			   *slash = claim ? strchr(claim, '/') : NULL;
		char pool[128], *val = NULL, want[300];

		if (!slash) {
			v->bad++;
			continue;
		}
		snprintf(pool, sizeof(pool), "%.*s", (int)(slash - claim), claim);
		snprintf(want, sizeof(want), "\"containerID\":\"%.*s\",\"ifname\":\"%s\"",
			 (int)(strrchr(key, ':') - key), key, strrchr(key, ':') + 1);
		if (v->s->ops.get(v->s, pool, slash + 1, &val) != 1 || !strstr(val, want)) {
			fprintf(stderr,
				"ipam_stress: record %s lists %s, which is not its claim (%s)\n",
				key, claim, val ? val : "free");
			v->bad++;
		}
		free(val);
	}
	if (v->valid && json_is_array(ips)) {
		char cid[256];

		snprintf(cid, sizeof(cid), "%.*s", (int)(strrchr(key, ':') - key), key);
		if (!cnispec_conf_attachment_valid(v->valid, cid, strrchr(key, ':') + 1)) {
			fprintf(stderr, "ipam_stress: record %s survived GC\n", key);
			v->bad++;
		}
	}
	json_decref(o);
	return 0;
}

static int verify(const char *cfg_path, const char *valid_path)
{
	struct ipamconf *c = load(cfg_path);
	struct v v = { .c = c };
	int r;

	v.s = open_store(c);
	if (valid_path) {
		_cleanup_free_ char *buf = NULL, *doc = NULL;
		struct cnispec_error err = { 0 };
		size_t len;

		if (fileio_read_at(AT_FDCWD, valid_path, 64 << 20, &buf, &len) < 0 ||
		    asprintf(&doc,
			     "{\"cniVersion\":\"1.1.0\",\"name\":\"v\",\"type\":\"t\","
			     "\"cni.dev/valid-attachments\":%s}",
			     buf) < 0 ||
		    cnispec_conf_parse(doc, strlen(doc), CNISPEC_CMD_GC, &v.valid, &err) < 0) {
			fprintf(stderr, "ipam_stress: %s: %s\n", valid_path, err.details);
			return 2;
		}
	}
	for (size_t i = 0; i < c->n_sets; i++) {
		v.pool = c->sets[i].r[0].pool;
		r = v.s->ops.list(v.s, v.pool, check_claim, &v);
		if (r < 0) {
			fprintf(stderr, "ipam_stress: listing %s: %s\n", v.pool, v.s->error);
			return 1;
		}
	}
	r = v.s->ops.record_list(v.s, c->network, check_record, &v);
	if (r < 0) {
		fprintf(stderr, "ipam_stress: listing records: %s\n", v.s->error);
		return 1;
	}
	if (v.valid && v.claims != v.valid->n_valid_attachments) {
		fprintf(stderr, "ipam_stress: %zu claims for %zu valid attachments\n", v.claims,
			v.valid->n_valid_attachments);
		v.bad++;
	}
	printf("%zu claims, %zu violations\n", v.claims, v.bad);
	cnispec_conf_free(v.valid);
	ipam_store_close(v.s);
	ipamconf_free(c);
	return v.bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "stress"))
		return stress(argv[2], atoi(argv[3]), atoi(argv[4]));
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "kill"))
		return kill_test(argv[2], atoi(argv[3]), (unsigned)strtoul(argv[4], NULL, 10),
				 argc == 6 && atoi(argv[5]) > 0 ? atoi(argv[5]) : 3);
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "verify"))
		return verify(argv[2], argc == 4 ? argv[3] : NULL);
	fprintf(stderr, "usage: ipam_stress stress CONFIG PROCS N | kill CONFIG N SEED [MS] | "
			"verify CONFIG [VALID]\n");
	return 2;
}
