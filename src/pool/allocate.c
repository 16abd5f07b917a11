/* SPDX-License-Identifier: Apache-2.0 */
/* Answers to the kubelet from prepared pools (allocate.h). */
#include "pool/allocate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"
#include "util/strv.h"

/* ---- answers prepared at each refresh ------------------------------------------------ */

static char *expand(const char *tmpl, const char *hcas, const char *netdevs)
{
	size_t cap = strlen(tmpl) + 1, l = 0;
	char *out;

	for (const char *c = tmpl; (c = strstr(c, "${")); c++)
		cap += strlen(hcas) + strlen(netdevs);
	out = malloc(cap);
	if (!out)
		return NULL;
	for (const char *c = tmpl; *c;) {
		if (!strncmp(c, "${hcas}", 7)) {
			l += (size_t)sprintf(out + l, "%s", hcas);
			c += 7;
		} else if (!strncmp(c, "${netdevs}", 10)) {
			l += (size_t)sprintf(out + l, "%s", netdevs);
			c += 10;
		} else {
			out[l++] = *c++;
		}
	}
	out[l] = '\0';
	return out;
}

static int kv_push(struct kubelet_kv **v, size_t *n, const char *k, char *val /* owned */)
{
	struct kubelet_kv *nv;

	if (!val)
		return -ENOMEM;
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*v)[i].key, k)) {
			free((*v)[i].value);
			(*v)[i].value = val;
			return 0;
		}
	nv = realloc(*v, (*n + 1) * sizeof(*nv));
	if (!nv) {
		free(val);
		return -ENOMEM;
	}
	*v = nv;
	nv[*n].key = strdup(k);
	nv[*n].value = val;
	if (!nv[*n].key)
		return -ENOMEM;
	(*n)++;
	return 0;
}

static int specs_push(struct kubelet_container_alloc *a, const struct kubelet_device_spec *s,
		      size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct kubelet_device_spec *nd;
		bool dup = false;

		for (size_t j = 0; j < a->n_devices && !dup; j++)
			dup = !strcmp(a->devices[j].host_path, s[i].host_path);
		if (dup)
			continue;
		nd = realloc(a->devices, (a->n_devices + 1) * sizeof(*nd));
		if (!nd)
			return -ENOMEM;
		a->devices = nd;
		nd[a->n_devices] =
			(struct kubelet_device_spec){ .container_path = strdup(s[i].container_path),
						      .host_path = strdup(s[i].host_path) };
		memcpy(nd[a->n_devices].permissions, s[i].permissions, sizeof(s[i].permissions));
		a->n_devices++;
		if (!nd[a->n_devices - 1].container_path || !nd[a->n_devices - 1].host_path)
			return -ENOMEM;
	}
	return 0;
}

static int cdi_push(struct kubelet_container_alloc *a, const char *kind, const char *name)
{
	char **n = realloc(a->cdi_devices, (a->n_cdi_devices + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	a->cdi_devices = n;
	if (asprintf(&n[a->n_cdi_devices], "%s=%s", kind, name) < 0)
		return -ENOMEM;
	a->n_cdi_devices++;
	return 0;
}

static int envs_push(struct kubelet_container_alloc *a, const struct pool_resource *res,
		     const char *hcas, const char *netdevs)
{
	for (size_t i = 0; i < res->n_envs; i++) {
		int r = kv_push(&a->envs, &a->n_envs, res->envs[i].name,
				expand(res->envs[i].value, hcas, netdevs));

		if (r < 0)
			return r;
	}
	return 0;
}

/* Shared pools answer every container alike: every char device of each healthy HCA. */
static int prepare_shared(const struct pool_set *ps, struct pool *p)
{
	_cleanup_free_ char *hcas = NULL, *netdevs = NULL;
	char why[160] = "";
	int r;

	kubelet_container_alloc_clear(&p->shared);
	p->shared_ok = false;
	for (size_t i = 0; i < p->n_m; i++) {
		const struct pool_member *m = &p->m[i];

		if (!m->healthy) {
			if (!why[0])
				pool_health_member_reason(ps, m, why, sizeof(why));
			continue;
		}
		if ((r = pool_list_add(&hcas, m->id)) < 0 ||
		    (r = pool_list_add(&netdevs, m->netdevs)) < 0)
			return r;
		if (ps->opts.cdi) {
			if ((r = cdi_push(&p->shared, p->res->full_name, m->id)) < 0)
				return r;
		} else if ((r = specs_push(&p->shared, m->specs, m->n_specs)) < 0) {
			return r;
		}
	}
	if (!hcas) {
		if (why[0])
			snprintf(p->shared_refusal, sizeof(p->shared_refusal),
				 "%s: no healthy RDMA device (%s)", p->res->full_name, why);
		else
			snprintf(p->shared_refusal, sizeof(p->shared_refusal),
				 "%s: no RDMA device matches the selectors", p->res->full_name);
		return 0;
	}
	if ((r = envs_push(&p->shared, p->res, hcas, netdevs ? netdevs : "")) < 0)
		return r;
	p->shared_ok = true;
	return 0;
}

static int shared_numa(const struct pool *p)
{
	int numa = -2;

	if (p->res->exclude_topology)
		return -1;
	for (size_t i = 0; i < p->n_m; i++) {
		if (!p->m[i].healthy)
			continue;
		if (numa == -2)
			numa = p->m[i].numa;
		else if (numa != p->m[i].numa)
			return -1; /* HCAs on several nodes: no single hint is true */
	}
	return numa < 0 ? -1 : numa;
}

static int prepare_devs(struct pool *p, bool *changed)
{
	size_t n = p->res->kind == POOL_SHARED
			   ? (p->n_healthy_members || p->n_m ? p->res->rdma_hca_max : 0)
			   : p->n_m;
	struct kubelet_device *d = calloc(n + 1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	if (p->res->kind == POOL_SHARED) {
		/* rdmaHcaMax ids, Healthy while one HCA is; an empty pool advertises nothing */
		int numa = shared_numa(p);

		for (size_t i = 0; i < n; i++) {
			snprintf(d[i].id, sizeof(d[i].id), "%zu", i);
			d[i].healthy = p->n_healthy_members > 0;
			d[i].numa_node = numa;
		}
	} else {
		for (size_t i = 0; i < n; i++) {
			snprintf(d[i].id, sizeof(d[i].id), "%s", p->m[i].id);
			d[i].healthy = p->m[i].healthy;
			d[i].numa_node = p->m[i].numa;
		}
	}
	if (changed)
		*changed = n != p->n_devs || (n && memcmp(d, p->devs, n * sizeof(*d)) != 0);
	free(p->devs);
	p->devs = d;
	p->n_devs = n;
	return 0;
}

int pool_allocate_prepare(const struct pool_set *ps, struct pool *p, bool *changed)
{
	int r;

	if (p->res->kind == POOL_SHARED && (r = prepare_shared(ps, p)) < 0)
		return r;
	return prepare_devs(p, changed);
}

/* ---- Allocate ------------------------------------------------------------------------ */

static int copy_alloc(const struct kubelet_container_alloc *src,
		      struct kubelet_container_alloc *out)
{
	int r;

	if ((r = specs_push(out, src->devices, src->n_devices)) < 0)
		return r;
	for (size_t i = 0; i < src->n_envs; i++)
		if ((r = kv_push(&out->envs, &out->n_envs, src->envs[i].key,
				 strdup(src->envs[i].value))) < 0)
			return r;
	for (size_t i = 0; i < src->n_cdi_devices; i++) {
		char **n = realloc(out->cdi_devices, (out->n_cdi_devices + 1) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		out->cdi_devices = n;
		if (!(n[out->n_cdi_devices] = strdup(src->cdi_devices[i])))
			return -ENOMEM;
		out->n_cdi_devices++;
	}
	return 0;
}

static int member_ptr_cmp(const void *a, const void *b)
{
	return strcmp((*(const struct pool_member *const *)a)->id,
		      (*(const struct pool_member *const *)b)->id);
}

/* _INFO: the members' prepared entries, by id (as JSON_SORT_KEYS would), each once. */
static char *info_join(const struct pool_member **ms, size_t n)
{
	size_t len = 3, l = 0;
	char *s;

	qsort(ms, n, sizeof(*ms), member_ptr_cmp);
	for (size_t i = 0; i < n; i++)
		len += strlen(ms[i]->info) + 1;
	s = malloc(len);
	if (!s)
		return NULL;
	s[l++] = '{';
	for (size_t i = 0; i < n; i++) {
		size_t il = strlen(ms[i]->info);

		if (i && ms[i] == ms[i - 1])
			continue;
		if (l > 1)
			s[l++] = ',';
		memcpy(s + l, ms[i]->info, il);
		l += il;
	}
	s[l++] = '}';
	s[l] = '\0';
	return s;
}

/* The hot path: lookups and copies of what the build prepared; no JSON, no I/O. */
static int allocate_exclusive(const struct pool *p, const char *const *ids, size_t n, bool cdi,
			      struct kubelet_container_alloc *out, char **msg)
{
	_cleanup_free_ char *list = NULL, *hcas = NULL, *netdevs = NULL;
	_cleanup_free_ const struct pool_member **ms = NULL;
	size_t ll = 0, cap = n * (HW_BDF_MAX + 1) + 1;
	char key[sizeof(p->env_key) + 8];
	int r;

	list = calloc(1, cap);
	ms = calloc(n + 1, sizeof(*ms));
	if (!list || !ms)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct pool_member *m = pool_member_find(p, ids[i]);

		if (!m) {
			if (asprintf(msg, "%s: unknown device %s", p->res->full_name, ids[i]) < 0)
				*msg = NULL;
			return -ENOENT;
		}
		ms[i] = m;
		ll += (size_t)snprintf(list + ll, cap - ll, "%s%s", i ? "," : "", m->id);
		if ((r = pool_list_add(&hcas, m->rdma)) < 0 ||
		    (r = pool_list_add(&netdevs, m->netdevs)) < 0)
			return r;
		if (cdi) {
			if ((r = cdi_push(out, p->res->full_name, m->id)) < 0)
				return r;
		} else if ((r = specs_push(out, m->specs, m->n_specs)) < 0) {
			return r;
		}
	}
	if ((r = kv_push(&out->envs, &out->n_envs, p->env_key, strdup(list))) < 0)
		return r;
	snprintf(key, sizeof(key), "%s_INFO", p->env_key);
	if ((r = kv_push(&out->envs, &out->n_envs, key, info_join(ms, n))) < 0)
		return r;
	return envs_push(out, p->res, hcas ? hcas : "", netdevs ? netdevs : "");
}

int pool_allocate_container(const struct pool *p, const char *const *ids, size_t n,
			    struct kubelet_container_alloc *out, char **msg)
{
	int r;

	*msg = NULL;
	if (p->res->kind == POOL_SHARED) {
		if (!p->shared_ok) {
			*msg = strdup(p->shared_refusal);
			return -ENODEV;
		}
		r = copy_alloc(&p->shared, out);
	} else {
		r = allocate_exclusive(p, ids, n, p->cdi, out, msg);
	}
	if (r < 0) {
		kubelet_container_alloc_clear(out);
		if (!*msg && r == -ENOMEM)
			*msg = strdup("out of memory");
	}
	return r;
}

/* ---- GetPreferredAllocation ---------------------------------------------------------- */

/* O((n + m) log (n + m)) for n available and m must_include ids: sorts and binary searches
 * throughout: rdmaHcaMax may be 100000, where a quadratic answer keeps the kubelet waiting
 * (docs/plugin.md). */

struct cand {
	const char *id;
	const struct pool_member *m;
	size_t pos;	/* in available: of duplicates, the first one counts */
	bool numa_miss; /* not on the target NUMA node */
	size_t pf_rank; /* 0: a PF must_include already uses; then by free functions, most first */
};

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool sorted_has(const char *const *v, size_t n, const char *x)
{
	return n && bsearch(&x, v, n, sizeof(*v), str_cmp) != NULL;
}

static int cand_id_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	int c = strcmp(x->id, y->id);

	return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

static const char *cand_pf(const struct cand *c)
{
	return c->m ? c->m->pf : "";
}

static int cand_pf_cmp(const void *a, const void *b)
{
	return strcmp(cand_pf(*(struct cand *const *)a), cand_pf(*(struct cand *const *)b));
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->numa_miss != y->numa_miss)
		return x->numa_miss - y->numa_miss;
	if (x->pf_rank != y->pf_rank)
		return x->pf_rank < y->pf_rank ? -1 : 1;
	return strcmp(x->id, y->id);
}

static int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* must_include in order, each once, up to size. */
static int preferred_must(const char *const *must_include, size_t n_must, size_t size, char **res,
			  size_t *nres)
{
	_cleanup_free_ struct cand *c = calloc(n_must + 1, sizeof(*c));
	_cleanup_free_ bool *first = calloc(n_must + 1, sizeof(bool));

	if (!c || !first)
		return -ENOMEM;
	for (size_t i = 0; i < n_must; i++)
		c[i] = (struct cand){ .id = must_include[i], .pos = i };
	qsort(c, n_must, sizeof(*c), cand_id_cmp);
	for (size_t i = 0; i < n_must; i++)
		first[c[i].pos] = i == 0 || strcmp(c[i - 1].id, c[i].id) != 0;
	for (size_t i = 0; i < n_must && *nres < size; i++)
		if (first[i] && !(res[(*nres)++] = strdup(must_include[i])))
			return -ENOMEM;
	return 0;
}

/* The NUMA node with the most candidates (the lowest of equals), or -1. */
static int preferred_numa(const struct cand *c, size_t nc)
{
	_cleanup_free_ int *numa = calloc(nc + 1, sizeof(int));
	size_t n = 0, best = 0;
	int target = -1;

	if (!numa)
		return -ENOMEM;
	for (size_t i = 0; i < nc; i++)
		if (c[i].m && c[i].m->numa >= 0)
			numa[n++] = c[i].m->numa;
	qsort(numa, n, sizeof(*numa), int_cmp);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i; j < n && numa[j] == numa[i]; j++)
			;
		if (j - i > best) {
			best = j - i;
			target = numa[i];
		}
	}
	return target;
}

/* Rank each candidate's PF: one must_include uses, else by how many candidates share it. */
static int preferred_pf_rank(const struct pool *p, struct cand *c, size_t nc,
			     const char *const *must_include, size_t n_must, size_t n_available)
{
	_cleanup_free_ const char **used = calloc(n_must + 1, sizeof(*used));
	_cleanup_free_ struct cand **by_pf = calloc(nc + 1, sizeof(*by_pf));
	size_t n_used = 0, n = 0;

	if (!used || !by_pf)
		return -ENOMEM;
	for (size_t i = 0; i < n_must; i++) {
		const struct pool_member *mm = pool_member_find(p, must_include[i]);

		if (mm && mm->pf[0])
			used[n_used++] = mm->pf;
	}
	qsort(used, n_used, sizeof(*used), str_cmp);
	for (size_t i = 0; i < nc; i++) {
		c[i].pf_rank = 1 + n_available; /* no PF: after every PF */
		if (cand_pf(&c[i])[0])
			by_pf[n++] = &c[i];
	}
	qsort(by_pf, n, sizeof(*by_pf), cand_pf_cmp);
	for (size_t i = 0, j; i < n; i = j) {
		const char *pf = cand_pf(by_pf[i]);
		bool is_used = sorted_has(used, n_used, pf);

		for (j = i; j < n && strcmp(cand_pf(by_pf[j]), pf) == 0; j++)
			;
		for (size_t k = i; k < j; k++)
			by_pf[k]->pf_rank = is_used ? 0 : 1 + n_available - (j - i);
	}
	return 0;
}

/* must_include first; then the NUMA node of must_include (or the node with the most free
 * devices); then pack PFs: those must_include already uses, then the fullest ones, so that
 * one pod's VFs share a PF and the other PFs stay whole for the next pod (the anchors leave
 * the choice to the kubelet, which picks at random: sriov-network-device-plugin #255). */
int pool_allocate_preferred(const struct pool *p, const char *const *available, size_t n_available,
			    const char *const *must_include, size_t n_must, size_t size,
			    char ***out, size_t *n_out)
{
	_cleanup_free_ struct cand *c = NULL;
	_cleanup_free_ const char **must_sorted = NULL;
	char **res;
	size_t nc = 0, nres = 0;
	int target = -1, r;

	res = calloc(size + 1, sizeof(*res));
	c = calloc(n_available + 1, sizeof(*c));
	must_sorted = calloc(n_must + 1, sizeof(*must_sorted));
	if (!res || !c || !must_sorted) {
		free(res);
		return -ENOMEM;
	}
	if ((r = preferred_must(must_include, n_must, size, res, &nres)) < 0)
		goto fail;
	for (size_t i = 0; i < n_must && target < 0; i++) {
		const struct pool_member *m = pool_member_find(p, must_include[i]);

		if (m && m->numa >= 0)
			target = m->numa;
	}
	for (size_t i = 0; i < n_must; i++)
		must_sorted[i] = must_include[i];
	qsort(must_sorted, n_must, sizeof(*must_sorted), str_cmp);
	/* candidates: available less must_include, each once */
	for (size_t i = 0; i < n_available; i++)
		if (!sorted_has(must_sorted, n_must, available[i]))
			c[nc++] = (struct cand){ .id = available[i], .pos = i };
	qsort(c, nc, sizeof(*c), cand_id_cmp);
	{
		size_t k = 0;

		for (size_t i = 0; i < nc; i++)
			if (i == 0 || strcmp(c[i - 1].id, c[i].id) != 0)
				c[k++] = c[i];
		nc = k;
	}
	for (size_t i = 0; i < nc; i++)
		c[i].m = pool_member_find(p, c[i].id);
	if (target < 0 && (target = preferred_numa(c, nc)) == -ENOMEM) {
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < nc; i++)
		c[i].numa_miss = target >= 0 && (!c[i].m || c[i].m->numa != target);
	if ((r = preferred_pf_rank(p, c, nc, must_include, n_must, n_available)) < 0)
		goto fail;
	qsort(c, nc, sizeof(*c), cand_cmp);
	for (size_t i = 0; i < nc && nres < size; i++)
		if (!(res[nres++] = strdup(c[i].id))) {
			r = -ENOMEM;
			goto fail;
		}
	*out = res;
	*n_out = nres;
	return 0;
fail:
	strv_free(res);
	return r;
}
