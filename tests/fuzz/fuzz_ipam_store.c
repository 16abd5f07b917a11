/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness for what rdmak-ipam reads back from its store: the etcd store's values come
 * over the network from etcd (whoever may write under the prefix writes them), the file store's
 * from links in its dataDir. The allocator parses every claim's owner, every record's list of
 * claims, the cursors and the pool names (the overlap look reads a subnet out of each), so the
 * harness gives it a store whose contents are the input: one entry a line, "KIND\tNS\tNAME\tVALUE"
 * with KIND c (a claim: pool, address, owner), r (a record: network, key, value), u (a cursor:
 * pool, -, address) or p (a pool: name). ADD, CHECK, DEL, GC, STATUS and list then run over it
 * for one attachment; each answers or refuses with a code, and nothing they make is read past.
 *   build/fuzz/fuzz_ipam_store -max_total_time=60 tests/fuzz/corpus/ipam_store */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ipam/ipam.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ENTRIES_MAX 256

struct entry {
	char kind, *ns, *name, *value; /* value NULL for a pool */
};

struct mem {
	struct entry v[ENTRIES_MAX + 64];
	size_t n;
};

static struct mem *M(struct ipam_store *s)
{
	return s->priv;
}

static struct entry *find(struct mem *m, char kind, const char *ns, const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].kind == kind && !strcmp(m->v[i].ns, ns) && !strcmp(m->v[i].name, name))
			return &m->v[i];
	return NULL;
}

static int put(struct mem *m, char kind, const char *ns, const char *name, const char *value)
{
	struct entry *e = find(m, kind, ns, name);

	if (!e) {
		if (m->n == sizeof(m->v) / sizeof(m->v[0]))
			return -ENOSPC;
		e = &m->v[m->n++];
		*e = (struct entry){ .kind = kind, .ns = strdup(ns), .name = strdup(name) };
	} else {
		free(e->value);
	}
	e->value = value ? strdup(value) : NULL;
	return 0;
}

static void drop(struct mem *m, struct entry *e)
{
	free(e->ns);
	free(e->name);
	free(e->value);
	*e = m->v[--m->n];
}

static int get_value(struct entry *e, char **ret)
{
	if (!e)
		return 0;
	*ret = strdup(e->value ? e->value : "");
	return *ret ? 1 : -ENOMEM;
}

static int m_claim(struct ipam_store *s, const char *p, const char *a, const char *v)
{
	struct entry *e = find(M(s), 'c', p, a);
	int r;

	if (e)
		return !strcmp(e->value, v);
	if ((r = put(M(s), 'c', p, a, v)) < 0 || (r = put(M(s), 'p', p, "", NULL)) < 0)
		return r;
	return 1;
}

static int m_get(struct ipam_store *s, const char *p, const char *a, char **ret)
{
	return get_value(find(M(s), 'c', p, a), ret);
}

static int m_release(struct ipam_store *s, const char *p, const char *a, const char *expect)
{
	struct entry *e = find(M(s), 'c', p, a);

	if (!e || strcmp(e->value, expect))
		return 0;
	drop(M(s), e);
	return 1;
}

static int each(struct ipam_store *s, char kind, const char *ns, ipam_store_each_fn fn, void *ud)
{
	for (size_t i = 0; i < M(s)->n; i++) {
		struct entry *e = &M(s)->v[i];
		int r;

		if (e->kind == kind && (!ns || !strcmp(e->ns, ns)) &&
		    (r = fn(ud, kind == 'p' ? e->ns : e->name, e->value)))
			return r;
	}
	return 0;
}

static int m_list(struct ipam_store *s, const char *p, ipam_store_each_fn fn, void *ud)
{
	return each(s, 'c', p, fn, ud);
}

static int m_pools(struct ipam_store *s, ipam_store_each_fn fn, void *ud)
{
	return each(s, 'p', NULL, fn, ud);
}

static int m_record_get(struct ipam_store *s, const char *n, const char *k, char **ret)
{
	return get_value(find(M(s), 'r', n, k), ret);
}

static int m_record_put(struct ipam_store *s, const char *n, const char *k, const char *v)
{
	return put(M(s), 'r', n, k, v);
}

static int m_record_del(struct ipam_store *s, const char *n, const char *k)
{
	struct entry *e = find(M(s), 'r', n, k);

	if (!e)
		return 0;
	drop(M(s), e);
	return 1;
}

static int m_record_list(struct ipam_store *s, const char *n, ipam_store_each_fn fn, void *ud)
{
	return each(s, 'r', n, fn, ud);
}

static int m_cursor_get(struct ipam_store *s, const char *p, char **ret)
{
	return get_value(find(M(s), 'u', p, "-"), ret);
}

static int m_cursor_put(struct ipam_store *s, const char *p, const char *a)
{
	return put(M(s), 'u', p, "-", a);
}

static int m_ping(struct ipam_store *s)
{
	return 0;
}

static void m_close(struct ipam_store *s)
{
	while (M(s)->n)
		drop(M(s), &M(s)->v[0]);
	free(M(s));
	s->priv = NULL;
}

static const struct ipam_store_ops mem_ops = {
	.ping = m_ping,
	.claim = m_claim,
	.get = m_get,
	.release = m_release,
	.list = m_list,
	.pools = m_pools,
	.record_get = m_record_get,
	.record_put = m_record_put,
	.record_del = m_record_del,
	.record_list = m_record_list,
	.cursor_get = m_cursor_get,
	.cursor_put = m_cursor_put,
	.close = m_close,
};

/* The input, one entry a line (at most ENTRIES_MAX: a store holds more, a fuzzer gains nothing). */
static const uint8_t *input;
static size_t input_len;

static int m_open(struct ipam_store *s, const struct ipamconf_store *cfg)
{
	struct mem *m = calloc(1, sizeof(*m));
	char *text = malloc(input_len + 1);

	(void)cfg;
	if (!m || !text) {
		free(m);
		free(text);
		return -ENOMEM;
	}
	s->priv = m;
	memcpy(text, input, input_len);
	text[input_len] = '\0';
	for (char *line = text, *next; line && *line && m->n < ENTRIES_MAX; line = next) {
		char *f[4] = { line, NULL, NULL, NULL };

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		for (int i = 1; i < 4 && f[i - 1]; i++)
			if ((f[i] = strchr(f[i - 1], '\t')))
				*f[i]++ = '\0';
		if (!f[1] || !f[2] || strlen(f[0]) != 1 || !strchr("cpru", f[0][0]))
			continue;
		/* values as a store holds them: bounded */
		if (f[3] && strlen(f[3]) > IPAM_STORE_VALUE_MAX)
			f[3][IPAM_STORE_VALUE_MAX] = '\0';
		put(m, f[0][0], f[1], f[0][0] == 'u' ? "-" : f[2],
		    f[0][0] == 'p'   ? NULL
		    : f[0][0] == 'u' ? f[2]
		    : f[3]	     ? f[3]
				     : "");
	}
	free(text);
	return 0;
}

static const struct ipam_store_driver mem_driver = { .name = "fuzz",
						     .open = m_open,
						     .ops = &mem_ops };

static bool only_c1(void *ud, const char *cid, const char *ifname)
{
	(void)ud;
	return !strcmp(cid, "c1") && !strcmp(ifname, "net1");
}

static void answered(int r, const struct cnispec_error *err)
{
	/* an answer or a refusal with its code and words; never a crash */
	if (r < 0 && (!err->code || !err->msg[0]))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char conf[] =
		"{\"type\":\"rdmak-ipam\",\"range\":\"10.0.0.0/28\",\"gateway\":\"10.0.0.1\","
		"\"ipRanges\":[{\"range\":\"fd00::/124\"}]}";
	struct ipam_owner o = {
		.container_id = "c1", .ifname = "net1", .pod_namespace = "ns", .pod_name = "p"
	};
	struct cnispec_error err = { 0 };
	struct cnispec_result *res = NULL;
	struct ipam_gc_stats st = { 0 };
	struct ipamconf *c = NULL;
	struct ipam_store *s = NULL;
	json_t *cj = json_loads(conf, 0, NULL), *list = NULL;
	char why[256];
	int r;

	input = data;
	input_len = size;
	if (!cj || ipamconf_parse(cj, "fuzz", &c, &err) < 0)
		__builtin_trap();
	json_decref(cj);
	if (ipam_store_open_driver(&mem_driver, &c->store, &s, why, sizeof(why)) < 0) {
		ipamconf_free(c);
		return 0;
	}
	r = ipam_add(s, c, &o, &res, &err);
	answered(r, &err);
	if (r == 0) {
		/* each address it gave is one of the ranges' */
		for (size_t i = 0; i < res->n_ips; i++) {
			const struct cnispec_addr *a = &res->ips[i].address.addr;
			bool in = false;

			for (size_t k = 0; k < c->n_sets; k++)
				in |= ipamconf_prefix_contains(&c->sets[k].r[0].subnet, a);
			if (!in)
				__builtin_trap();
		}
		err = (struct cnispec_error){ 0 };
		answered(ipam_check(s, c, "c1", "net1", res, &err), &err);
	}
	cnispec_result_free(res);
	err = (struct cnispec_error){ 0 };
	answered(ipam_status(s, c, &err), &err);
	err = (struct cnispec_error){ 0 };
	r = ipam_list_json(s, c, &list, &err);
	answered(r, &err);
	json_decref(r == 0 ? list : NULL);
	err = (struct cnispec_error){ 0 };
	answered(ipam_gc(s, c, only_c1, NULL, &st, &err), &err);
	err = (struct cnispec_error){ 0 };
	answered(ipam_del(s, c, "c1", "net1", &err), &err);
	ipam_store_close(s);
	ipamconf_free(c);
	return 0;
}
