/* SPDX-License-Identifier: Apache-2.0 */
/* KV and Maintenance: our plain structs to etcd's messages and back. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd/etcd.pb-c.h"
#include "etcd/internal.h"
#include "util/cleanup.h"

/* A Range page: small enough that one answer stays far below gRPC's message limit even with
 * long values, large enough that a /16 pool lists in a few dozen round trips. */
#define ETCD_PAGE 2000

static ProtobufCBinaryData bin(const void *p, size_t len)
{
	return (ProtobufCBinaryData){ .len = len, .data = (uint8_t *)p };
}

static ProtobufCBinaryData bin_str(const char *s)
{
	return bin(s, s ? strlen(s) : 0);
}

/* The end of the range of keys that start with `key`: the key with its last byte that is not
 * 0xff incremented and what follows dropped; "\0" (every key) when there is none. The result
 * is written to buf, which has room for strlen(key) bytes, and its length returned. */
static size_t prefix_end(const char *key, uint8_t *buf)
{
	size_t n = strlen(key);

	memcpy(buf, key, n);
	while (n > 0) {
		if (buf[n - 1] != 0xff) {
			buf[n - 1]++;
			return n;
		}
		n--;
	}
	buf[0] = 0;
	return 1;
}

/* --- results ------------------------------------------------------------------------------ */

void etcd_kv_clear(struct etcd_kv *kv)
{
	if (!kv)
		return;
	free(kv->key);
	free(kv->value);
	*kv = (struct etcd_kv){ 0 };
}

void etcd_kvs_clear(struct etcd_kvs *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		etcd_kv_clear(&r->kvs[i]);
	free(r->kvs);
	*r = (struct etcd_kvs){ 0 };
}

void etcd_txn_result_clear(struct etcd_txn_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_ops; i++)
		etcd_kvs_clear(&r->ops[i].range);
	free(r->ops);
	*r = (struct etcd_txn_result){ 0 };
}

static char *dup_bytes(ProtobufCBinaryData b)
{
	char *s = malloc(b.len + 1);

	if (!s)
		return NULL;
	if (b.len)
		memcpy(s, b.data, b.len);
	s[b.len] = '\0';
	return s;
}

static int kv_from(const Etcdserverpb__KeyValue *m, struct etcd_kv *kv)
{
	kv->key = dup_bytes(m->key);
	kv->value = dup_bytes(m->value);
	if (!kv->key || !kv->value) {
		etcd_kv_clear(kv);
		return -ENOMEM;
	}
	kv->key_len = m->key.len;
	kv->value_len = m->value.len;
	kv->create_revision = m->create_revision;
	kv->mod_revision = m->mod_revision;
	kv->version = m->version;
	kv->lease = m->lease;
	return 0;
}

/* Append a RangeResponse's keys to *r (which may already hold earlier pages). */
static int kvs_append(const Etcdserverpb__RangeResponse *m, struct etcd_kvs *r)
{
	struct etcd_kv *p;

	if (m->n_kvs) {
		p = realloc(r->kvs, (r->n + m->n_kvs) * sizeof(*p));
		if (!p)
			return -ENOMEM;
		r->kvs = p;
		for (size_t i = 0; i < m->n_kvs; i++) {
			int k = kv_from(m->kvs[i], &r->kvs[r->n]);

			if (k < 0)
				return k;
			r->n++;
		}
	}
	r->more = m->more;
	r->count = m->count;
	r->revision = m->header ? m->header->revision : 0;
	return 0;
}

/* --- Range -------------------------------------------------------------------------------- */

static int range_call(struct etcd_client *c, const Etcdserverpb__RangeRequest *rq,
		      struct etcd_kvs *r)
{
	Etcdserverpb__RangeResponse *m;
	struct etcd_reply rep = { 0 };
	int k = etcd_call(c, ETCD_M_RANGE, &rq->base, &rep);

	if (k < 0)
		return k;
	m = etcdserverpb__range_response__unpack(NULL, rep.len, rep.data);
	etcd_reply_clear(&rep);
	if (!m)
		return etcd_fail(c, -EPROTO, "etcd %s: malformed RangeResponse",
				 etcd_client_endpoint(c, etcd_client_current(c)));
	k = kvs_append(m, r);
	etcdserverpb__range_response__free_unpacked(m, NULL);
	return k;
}

int etcd_range(struct etcd_client *c, const char *key, const struct etcd_range_opts *o,
	       struct etcd_kvs *ret)
{
	Etcdserverpb__RangeRequest rq = ETCDSERVERPB__RANGE_REQUEST__INIT;
	_cleanup_free_ uint8_t *endbuf = NULL;
	struct etcd_kvs r = { 0 };
	int k;

	if (!key || !key[0])
		return etcd_fail(c, -EINVAL, "etcd range: empty key");
	rq.key = bin_str(key);
	if (o) {
		if (o->prefix) {
			endbuf = malloc(strlen(key) + 1);
			if (!endbuf)
				return -ENOMEM;
			rq.range_end = bin(endbuf, prefix_end(key, endbuf));
		} else if (o->range_end) {
			rq.range_end = bin_str(o->range_end);
		}
		rq.limit = o->limit;
		rq.revision = o->revision;
		rq.keys_only = o->keys_only;
		rq.count_only = o->count_only;
		rq.serializable = o->serializable;
	}
	k = range_call(c, &rq, &r);
	if (k < 0) {
		etcd_kvs_clear(&r);
		return k;
	}
	*ret = r;
	return 0;
}

int etcd_range_prefix_all(struct etcd_client *c, const char *prefix, bool keys_only,
			  struct etcd_kvs *ret)
{
	Etcdserverpb__RangeRequest rq = ETCDSERVERPB__RANGE_REQUEST__INIT;
	_cleanup_free_ uint8_t *endbuf = NULL, *from = NULL;
	struct etcd_kvs r = { 0 };
	int k;

	if (!prefix || !prefix[0])
		return etcd_fail(c, -EINVAL, "etcd range: empty prefix");
	endbuf = malloc(strlen(prefix) + 1);
	if (!endbuf)
		return -ENOMEM;
	rq.key = bin_str(prefix);
	rq.range_end = bin(endbuf, prefix_end(prefix, endbuf));
	rq.limit = ETCD_PAGE;
	rq.keys_only = keys_only;
	for (;;) {
		const struct etcd_kv *last;
		uint8_t *p;

		k = range_call(c, &rq, &r);
		if (k < 0)
			goto fail;
		if (!r.more || r.n == 0)
			break;
		/* Every later page at the first page's revision: one consistent snapshot even
		 * while others write. The next page starts at the smallest key after the last one:
		 * that key with a NUL byte appended. */
		rq.revision = r.revision;
		last = &r.kvs[r.n - 1];
		p = realloc(from, last->key_len + 1);
		if (!p) {
			k = -ENOMEM;
			goto fail;
		}
		from = p;
		memcpy(from, last->key, last->key_len);
		from[last->key_len] = 0;
		rq.key = bin(from, last->key_len + 1);
	}
	r.more = false;
	r.count = (int64_t)r.n;
	*ret = r;
	return 0;
fail:
	etcd_kvs_clear(&r);
	return k;
}

int etcd_get(struct etcd_client *c, const char *key, struct etcd_kv *ret)
{
	struct etcd_kvs r = { 0 };
	int k = etcd_range(c, key, NULL, &r);

	if (k < 0)
		return k;
	if (r.n == 0) {
		etcd_kvs_clear(&r);
		return 0;
	}
	*ret = r.kvs[0];
	r.kvs[0] = (struct etcd_kv){ 0 };
	etcd_kvs_clear(&r);
	return 1;
}

/* --- Put, DeleteRange --------------------------------------------------------------------- */

int etcd_put(struct etcd_client *c, const char *key, const void *value, size_t value_len,
	     int64_t *ret_revision)
{
	Etcdserverpb__PutRequest rq = ETCDSERVERPB__PUT_REQUEST__INIT;
	Etcdserverpb__PutResponse *m;
	struct etcd_reply rep = { 0 };
	int k;

	if (!key || !key[0])
		return etcd_fail(c, -EINVAL, "etcd put: empty key");
	rq.key = bin_str(key);
	rq.value = bin(value, value_len);
	k = etcd_call(c, ETCD_M_PUT, &rq.base, &rep);
	if (k < 0)
		return k;
	m = etcdserverpb__put_response__unpack(NULL, rep.len, rep.data);
	etcd_reply_clear(&rep);
	if (!m || !m->header) {
		if (m)
			etcdserverpb__put_response__free_unpacked(m, NULL);
		return etcd_fail(c, -EPROTO, "etcd %s: malformed PutResponse",
				 etcd_client_endpoint(c, etcd_client_current(c)));
	}
	if (ret_revision)
		*ret_revision = m->header->revision;
	etcdserverpb__put_response__free_unpacked(m, NULL);
	return 0;
}

int etcd_delete(struct etcd_client *c, const char *key, bool prefix, int64_t *ret_deleted)
{
	Etcdserverpb__DeleteRangeRequest rq = ETCDSERVERPB__DELETE_RANGE_REQUEST__INIT;
	Etcdserverpb__DeleteRangeResponse *m;
	_cleanup_free_ uint8_t *endbuf = NULL;
	struct etcd_reply rep = { 0 };
	int k;

	if (!key || !key[0])
		return etcd_fail(c, -EINVAL, "etcd delete: empty key");
	rq.key = bin_str(key);
	if (prefix) {
		endbuf = malloc(strlen(key) + 1);
		if (!endbuf)
			return -ENOMEM;
		rq.range_end = bin(endbuf, prefix_end(key, endbuf));
	}
	k = etcd_call(c, ETCD_M_DELETE_RANGE, &rq.base, &rep);
	if (k < 0)
		return k;
	m = etcdserverpb__delete_range_response__unpack(NULL, rep.len, rep.data);
	etcd_reply_clear(&rep);
	if (!m)
		return etcd_fail(c, -EPROTO, "etcd %s: malformed DeleteRangeResponse",
				 etcd_client_endpoint(c, etcd_client_current(c)));
	if (ret_deleted)
		*ret_deleted = m->deleted;
	etcdserverpb__delete_range_response__free_unpacked(m, NULL);
	return 0;
}

/* --- Txn ---------------------------------------------------------------------------------- */

/* Every message of a TxnRequest, allocated at once and freed at once. */
struct txn_msgs {
	Etcdserverpb__Compare *cmp;
	Etcdserverpb__Compare **cmpp;
	Etcdserverpb__RequestOp *ops;
	Etcdserverpb__RequestOp **opsp;
	Etcdserverpb__RangeRequest *ranges;
	Etcdserverpb__PutRequest *puts;
	Etcdserverpb__DeleteRangeRequest *dels;
	uint8_t **ends; /* prefix ends, one per op */
	size_t n_ops;
};

static void txn_msgs_free(struct txn_msgs *t)
{
	for (size_t i = 0; t->ends && i < t->n_ops; i++)
		free(t->ends[i]);
	free(t->ends);
	free(t->cmp);
	free(t->cmpp);
	free(t->ops);
	free(t->opsp);
	free(t->ranges);
	free(t->puts);
	free(t->dels);
}

static int txn_compare(const struct etcd_compare *in, Etcdserverpb__Compare *m)
{
	*m = (Etcdserverpb__Compare)ETCDSERVERPB__COMPARE__INIT;
	if (!in->key || !in->key[0])
		return -EINVAL;
	m->key = bin_str(in->key);
	m->result = (Etcdserverpb__Compare__CompareResult)in->result;
	m->target = (Etcdserverpb__Compare__CompareTarget)in->target;
	switch (in->target) {
	case ETCD_CMP_VERSION:
		m->target_union_case = ETCDSERVERPB__COMPARE__TARGET_UNION_VERSION;
		m->version = in->number;
		break;
	case ETCD_CMP_CREATE:
		m->target_union_case = ETCDSERVERPB__COMPARE__TARGET_UNION_CREATE_REVISION;
		m->create_revision = in->number;
		break;
	case ETCD_CMP_MOD:
		m->target_union_case = ETCDSERVERPB__COMPARE__TARGET_UNION_MOD_REVISION;
		m->mod_revision = in->number;
		break;
	case ETCD_CMP_VALUE:
		m->target_union_case = ETCDSERVERPB__COMPARE__TARGET_UNION_VALUE;
		m->value = bin(in->value, in->value_len);
		break;
	default: return -EINVAL;
	}
	if (in->result > ETCD_CMP_NOT_EQUAL)
		return -EINVAL;
	return 0;
}

static int txn_op(const struct etcd_op *in, struct txn_msgs *t, size_t i)
{
	Etcdserverpb__RequestOp *m = &t->ops[i];
	ProtobufCBinaryData end = { 0 };

	*m = (Etcdserverpb__RequestOp)ETCDSERVERPB__REQUEST_OP__INIT;
	t->opsp[i] = m;
	if (!in->key || !in->key[0])
		return -EINVAL;
	if (in->prefix && in->type != ETCD_OP_PUT) {
		t->ends[i] = malloc(strlen(in->key) + 1);
		if (!t->ends[i])
			return -ENOMEM;
		end = bin(t->ends[i], prefix_end(in->key, t->ends[i]));
	}
	switch (in->type) {
	case ETCD_OP_RANGE:
		t->ranges[i] = (Etcdserverpb__RangeRequest)ETCDSERVERPB__RANGE_REQUEST__INIT;
		t->ranges[i].key = bin_str(in->key);
		t->ranges[i].range_end = end;
		t->ranges[i].limit = in->limit;
		t->ranges[i].keys_only = in->keys_only;
		m->request_case = ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_RANGE;
		m->request_range = &t->ranges[i];
		return 0;
	case ETCD_OP_PUT:
		t->puts[i] = (Etcdserverpb__PutRequest)ETCDSERVERPB__PUT_REQUEST__INIT;
		t->puts[i].key = bin_str(in->key);
		t->puts[i].value = bin(in->value, in->value_len);
		t->puts[i].lease = in->lease;
		m->request_case = ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_PUT;
		m->request_put = &t->puts[i];
		return 0;
	case ETCD_OP_DELETE:
		t->dels[i] =
			(Etcdserverpb__DeleteRangeRequest)ETCDSERVERPB__DELETE_RANGE_REQUEST__INIT;
		t->dels[i].key = bin_str(in->key);
		t->dels[i].range_end = end;
		m->request_case = ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_DELETE_RANGE;
		m->request_delete_range = &t->dels[i];
		return 0;
	}
	return -EINVAL;
}

static int txn_build(const struct etcd_compare *cmp, size_t n_cmp, const struct etcd_op *then,
		     size_t n_then, const struct etcd_op *otherwise, size_t n_otherwise,
		     struct txn_msgs *t, Etcdserverpb__TxnRequest *rq)
{
	size_t n = n_then + n_otherwise;
	int r;

	t->n_ops = n;
	t->cmp = calloc(n_cmp + 1, sizeof(*t->cmp));
	t->cmpp = calloc(n_cmp + 1, sizeof(*t->cmpp));
	t->ops = calloc(n + 1, sizeof(*t->ops));
	t->opsp = calloc(n + 1, sizeof(*t->opsp));
	t->ranges = calloc(n + 1, sizeof(*t->ranges));
	t->puts = calloc(n + 1, sizeof(*t->puts));
	t->dels = calloc(n + 1, sizeof(*t->dels));
	t->ends = calloc(n + 1, sizeof(*t->ends));
	if (!t->cmp || !t->cmpp || !t->ops || !t->opsp || !t->ranges || !t->puts || !t->dels ||
	    !t->ends)
		return -ENOMEM;
	for (size_t i = 0; i < n_cmp; i++) {
		r = txn_compare(&cmp[i], &t->cmp[i]);
		if (r < 0)
			return r;
		t->cmpp[i] = &t->cmp[i];
	}
	for (size_t i = 0; i < n; i++) {
		r = txn_op(i < n_then ? &then[i] : &otherwise[i - n_then], t, i);
		if (r < 0)
			return r;
	}
	rq->n_compare = n_cmp;
	rq->compare = t->cmpp;
	rq->n_success = n_then;
	rq->success = t->opsp;
	rq->n_failure = n_otherwise;
	rq->failure = t->opsp + n_then;
	return 0;
}

static int txn_result_from(const Etcdserverpb__TxnResponse *m, struct etcd_txn_result *r)
{
	r->succeeded = m->succeeded;
	r->revision = m->header ? m->header->revision : 0;
	r->ops = calloc(m->n_responses + 1, sizeof(*r->ops));
	if (!r->ops)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_responses; i++) {
		const Etcdserverpb__ResponseOp *o = m->responses[i];
		struct etcd_op_result *x = &r->ops[r->n_ops++];

		switch (o->response_case) {
		case ETCDSERVERPB__RESPONSE_OP__RESPONSE_RESPONSE_RANGE: {
			int k;

			x->type = ETCD_OP_RANGE;
			k = kvs_append(o->response_range, &x->range);
			if (k < 0)
				return k;
			break;
		}
		case ETCDSERVERPB__RESPONSE_OP__RESPONSE_RESPONSE_PUT: x->type = ETCD_OP_PUT; break;
		case ETCDSERVERPB__RESPONSE_OP__RESPONSE_RESPONSE_DELETE_RANGE:
			x->type = ETCD_OP_DELETE;
			x->deleted = o->response_delete_range->deleted;
			break;
		default: return -EPROTO;
		}
	}
	return 0;
}

int etcd_txn(struct etcd_client *c, const struct etcd_compare *cmp, size_t n_cmp,
	     const struct etcd_op *then, size_t n_then, const struct etcd_op *otherwise,
	     size_t n_otherwise, struct etcd_txn_result *ret)
{
	Etcdserverpb__TxnRequest rq = ETCDSERVERPB__TXN_REQUEST__INIT;
	Etcdserverpb__TxnResponse *m;
	struct txn_msgs t = { 0 };
	struct etcd_txn_result res = { 0 };
	struct etcd_reply rep = { 0 };
	int k;

	k = txn_build(cmp, n_cmp, then, n_then, otherwise, n_otherwise, &t, &rq);
	if (k < 0) {
		txn_msgs_free(&t);
		return k == -ENOMEM
			       ? k
			       : etcd_fail(
					 c, k,
					 "etcd txn: a compare or op without a key, or an unknown kind");
	}
	k = etcd_call(c, ETCD_M_TXN, &rq.base, &rep);
	txn_msgs_free(&t);
	if (k < 0)
		return k;
	m = etcdserverpb__txn_response__unpack(NULL, rep.len, rep.data);
	etcd_reply_clear(&rep);
	if (!m)
		return etcd_fail(c, -EPROTO, "etcd %s: malformed TxnResponse",
				 etcd_client_endpoint(c, etcd_client_current(c)));
	k = txn_result_from(m, &res);
	etcdserverpb__txn_response__free_unpacked(m, NULL);
	if (k < 0) {
		etcd_txn_result_clear(&res);
		return k == -ENOMEM ? k : etcd_fail(c, k, "etcd txn: an answer of an unknown kind");
	}
	k = res.succeeded ? 1 : 0;
	if (ret)
		*ret = res;
	else
		etcd_txn_result_clear(&res);
	return k;
}

/* --- Lease ------------------------------------------------------------------------------- */

int etcd_lease_grant(struct etcd_client *c, int64_t ttl, int64_t *ret_id, int64_t *ret_ttl)
{
	Etcdserverpb__LeaseGrantRequest rq = ETCDSERVERPB__LEASE_GRANT_REQUEST__INIT;
	Etcdserverpb__LeaseGrantResponse *m;
	struct etcd_reply rep = { 0 };
	int k;

	if (ttl <= 0)
		return etcd_fail(c, -EINVAL, "etcd lease: a TTL of %lld seconds", (long long)ttl);
	rq.ttl = ttl;
	k = etcd_call(c, ETCD_M_LEASE_GRANT, &rq.base, &rep);
	if (k < 0)
		return k;
	m = etcdserverpb__lease_grant_response__unpack(NULL, rep.len, rep.data);
	etcd_reply_clear(&rep);
	if (!m || m->id == 0 || (m->error && m->error[0])) {
		k = etcd_fail(c, -EPROTO, "etcd %s: lease not granted%s%s",
			      etcd_client_endpoint(c, etcd_client_current(c)),
			      m && m->error && m->error[0] ? ": " : "",
			      m && m->error ? m->error : "");
		if (m)
			etcdserverpb__lease_grant_response__free_unpacked(m, NULL);
		return k;
	}
	*ret_id = m->id;
	*ret_ttl = m->ttl;
	etcdserverpb__lease_grant_response__free_unpacked(m, NULL);
	return 0;
}

int etcd_lease_ttl(struct etcd_client *c, int64_t id, int64_t *ret_left, int64_t *ret_granted)
{
	Etcdserverpb__LeaseTimeToLiveRequest rq = ETCDSERVERPB__LEASE_TIME_TO_LIVE_REQUEST__INIT;
	Etcdserverpb__LeaseTimeToLiveResponse *m;
	struct etcd_reply rep = { 0 };
	int k;

	rq.id = id;
	k = etcd_call(c, ETCD_M_LEASE_TTL, &rq.base, &rep);
	if (k < 0)
		return k;
	m = etcdserverpb__lease_time_to_live_response__unpack(NULL, rep.len, rep.data);
	etcd_reply_clear(&rep);
	if (!m)
		return etcd_fail(c, -EPROTO, "etcd %s: malformed LeaseTimeToLiveResponse",
				 etcd_client_endpoint(c, etcd_client_current(c)));
	/* etcd answers -1 for a lease that expired or never was */
	k = m->ttl >= 0;
	if (k) {
		*ret_left = m->ttl;
		if (ret_granted)
			*ret_granted = m->granted_ttl;
	}
	etcdserverpb__lease_time_to_live_response__free_unpacked(m, NULL);
	return k;
}

/* --- Maintenance.Status ------------------------------------------------------------------- */

int etcd_member_status(struct etcd_client *c, size_t endpoint, struct etcd_member_status *ret)
{
	Etcdserverpb__StatusRequest rq = ETCDSERVERPB__STATUS_REQUEST__INIT;
	Etcdserverpb__StatusResponse *m;
	struct etcd_member_status st = { 0 };
	struct etcd_reply rep = { 0 };
	int k;

	k = etcd_call_at(c, endpoint, ETCD_M_STATUS, &rq.base, &rep);
	if (k < 0)
		return k;
	m = etcdserverpb__status_response__unpack(NULL, rep.len, rep.data);
	etcd_reply_clear(&rep);
	if (!m)
		return etcd_fail(c, -EPROTO, "etcd %s: malformed StatusResponse",
				 etcd_client_endpoint(c, endpoint));
	snprintf(st.version, sizeof(st.version), "%s", m->version ? m->version : "");
	if (m->header) {
		st.cluster_id = m->header->cluster_id;
		st.member_id = m->header->member_id;
		st.revision = m->header->revision;
	}
	st.leader = m->leader;
	st.raft_term = m->raftterm;
	st.db_size = m->dbsize;
	st.is_learner = m->islearner;
	etcdserverpb__status_response__free_unpacked(m, NULL);
	*ret = st;
	return 0;
}
