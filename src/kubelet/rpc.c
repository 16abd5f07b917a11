/* SPDX-License-Identifier: Apache-2.0 */
/* The DevicePlugin service: one kubelet_rpc per served call, from the request that waits for it to
 * the batch that answers it. Unary calls are answered on the completion-queue thread in one
 * batch; a ListAndWatch call stays open as a stream (stream.c) that gets the packed device list
 * again whenever set_devices() changes it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>

#include "kubelet/deviceplugin.pb-c.h"
#include "kubelet/internal.h"
#include "util/strv.h"

struct kubelet_answer {
	grpc_status_code code;
	char *msg;		 /* malloc'd, NULL for none */
	grpc_byte_buffer *reply; /* NULL with an error code */
};

struct kubelet_rpc {
	struct kubelet_tag
		tag; /* the call arrived; then: the answer went out / the stream closed */
	struct kubelet_work work;    /* answered on the worker thread (GetPreferredAllocation) */
	struct kubelet_tag send_tag; /* ListAndWatch: one message went out */
	const struct kubelet_method *method;
	grpc_call *call;
	gpr_timespec deadline;
	grpc_metadata_array md;
	grpc_call_details details; /* for the catch-all request only */
	grpc_byte_buffer *payload;
	grpc_byte_buffer *out;
	int cancelled;
	struct kubelet_stream stream; /* ListAndWatch */
};

struct kubelet_method {
	const char *path; /* NULL: the catch-all for methods we do not serve */
	void (*arrived)(struct kubelet_server *srv, struct kubelet_rpc *rpc);
	void (*answer)(struct kubelet_server *srv, const uint8_t *req, size_t len,
		       struct kubelet_answer *ans);
};

/* --- helpers ------------------------------------------------------------------------------ */

static grpc_status_code status_from_errno(int r)
{
	switch (-r) {
	case EINVAL:
	case ERANGE: return GRPC_STATUS_INVALID_ARGUMENT;
	case ENOENT:
	case ENODEV: return GRPC_STATUS_NOT_FOUND;
	case EBUSY:
	case ENOSPC:
	case ENOMEM: return GRPC_STATUS_RESOURCE_EXHAUSTED;
	case EPERM:
	case EACCES: return GRPC_STATUS_PERMISSION_DENIED;
	case EOPNOTSUPP: return GRPC_STATUS_UNIMPLEMENTED;
	default: return GRPC_STATUS_UNKNOWN;
	}
}

static void answer_error(struct kubelet_answer *ans, grpc_status_code code, const char *msg)
{
	ans->code = code;
	ans->msg = strdup(msg);
}

/* An error from the plugin: its message if it gave one, else strerror. */
static void answer_errno(struct kubelet_answer *ans, int r, char *msg)
{
	ans->code = status_from_errno(r);
	ans->msg = msg ? msg : strdup(strerror(-r));
}

static grpc_slice pack_slice(const ProtobufCMessage *m)
{
	grpc_slice s = grpc_slice_malloc(protobuf_c_message_get_packed_size(m));

	protobuf_c_message_pack(m, GRPC_SLICE_START_PTR(s));
	return s;
}

static void answer_message(struct kubelet_answer *ans, const ProtobufCMessage *m)
{
	grpc_slice s = pack_slice(m);

	ans->reply = grpc_raw_byte_buffer_create(&s, 1);
	grpc_slice_unref(s);
}

/* Every node of a response is freed at once after packing: a list of callocs. */
struct arena {
	void **p;
	size_t n, cap;
	bool failed;
};

static void *arena_new(struct arena *a, size_t n, size_t size)
{
	void *m;

	if (a->failed)
		return NULL;
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 16;
		void **p = realloc(a->p, cap * sizeof(*p));

		if (!p)
			goto fail;
		a->p = p;
		a->cap = cap;
	}
	m = calloc(n ? n : 1, size);
	if (!m)
		goto fail;
	return a->p[a->n++] = m;
fail:
	a->failed = true;
	return NULL;
}

static void arena_free(struct arena *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->p[i]);
	free(a->p);
}

/* --- GetDevicePluginOptions --------------------------------------------------------------- */

static void answer_options(struct kubelet_server *srv, const uint8_t *req, size_t len,
			   struct kubelet_answer *ans)
{
	V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;

	o.pre_start_required = srv->prestart_required;
	o.get_preferred_allocation_available = srv->preferred_allocation;
	answer_message(ans, &o.base);
}

/* --- Allocate ----------------------------------------------------------------------------- */

static V1beta1__ContainerAllocateResponse__EnvsEntry **
pack_kvs_env(struct arena *a, const struct kubelet_kv *kv, size_t n)
{
	V1beta1__ContainerAllocateResponse__EnvsEntry **pp = arena_new(a, n, sizeof(*pp));
	V1beta1__ContainerAllocateResponse__EnvsEntry *e = arena_new(a, n, sizeof(*e));

	if (!pp || !e)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		e[i] = (V1beta1__ContainerAllocateResponse__EnvsEntry)
			V1BETA1__CONTAINER_ALLOCATE_RESPONSE__ENVS_ENTRY__INIT;
		e[i].key = kv[i].key;
		e[i].value = kv[i].value;
		pp[i] = &e[i];
	}
	return pp;
}

static V1beta1__ContainerAllocateResponse__AnnotationsEntry **
pack_kvs_annotation(struct arena *a, const struct kubelet_kv *kv, size_t n)
{
	V1beta1__ContainerAllocateResponse__AnnotationsEntry **pp = arena_new(a, n, sizeof(*pp));
	V1beta1__ContainerAllocateResponse__AnnotationsEntry *e = arena_new(a, n, sizeof(*e));

	if (!pp || !e)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		e[i] = (V1beta1__ContainerAllocateResponse__AnnotationsEntry)
			V1BETA1__CONTAINER_ALLOCATE_RESPONSE__ANNOTATIONS_ENTRY__INIT;
		e[i].key = kv[i].key;
		e[i].value = kv[i].value;
		pp[i] = &e[i];
	}
	return pp;
}

/* One ContainerAllocateResponse; its strings stay in *c until the response is packed. */
static V1beta1__ContainerAllocateResponse *pack_container(struct arena *a,
							  struct kubelet_container_alloc *c)
{
	V1beta1__ContainerAllocateResponse *r = arena_new(a, 1, sizeof(*r));
	V1beta1__Mount *m = arena_new(a, c->n_mounts, sizeof(*m));
	V1beta1__Mount **mp = arena_new(a, c->n_mounts, sizeof(*mp));
	V1beta1__DeviceSpec *d = arena_new(a, c->n_devices, sizeof(*d));
	V1beta1__DeviceSpec **dp = arena_new(a, c->n_devices, sizeof(*dp));
	V1beta1__CDIDevice *cdi = arena_new(a, c->n_cdi_devices, sizeof(*cdi));
	V1beta1__CDIDevice **cdip = arena_new(a, c->n_cdi_devices, sizeof(*cdip));

	if (!r || !m || !mp || !d || !dp || !cdi || !cdip)
		return NULL;
	*r = (V1beta1__ContainerAllocateResponse)V1BETA1__CONTAINER_ALLOCATE_RESPONSE__INIT;
	r->n_envs = c->n_envs;
	r->envs = pack_kvs_env(a, c->envs, c->n_envs);
	r->n_annotations = c->n_annotations;
	r->annotations = pack_kvs_annotation(a, c->annotations, c->n_annotations);
	for (size_t i = 0; i < c->n_mounts; i++) {
		m[i] = (V1beta1__Mount)V1BETA1__MOUNT__INIT;
		m[i].container_path = c->mounts[i].container_path;
		m[i].host_path = c->mounts[i].host_path;
		m[i].read_only = c->mounts[i].read_only;
		mp[i] = &m[i];
	}
	r->n_mounts = c->n_mounts;
	r->mounts = mp;
	for (size_t i = 0; i < c->n_devices; i++) {
		d[i] = (V1beta1__DeviceSpec)V1BETA1__DEVICE_SPEC__INIT;
		d[i].container_path = c->devices[i].container_path;
		d[i].host_path = c->devices[i].host_path;
		d[i].permissions = c->devices[i].permissions;
		dp[i] = &d[i];
	}
	r->n_devices = c->n_devices;
	r->devices = dp;
	for (size_t i = 0; i < c->n_cdi_devices; i++) {
		cdi[i] = (V1beta1__CDIDevice)V1BETA1__CDIDEVICE__INIT;
		cdi[i].name = c->cdi_devices[i];
		cdip[i] = &cdi[i];
	}
	r->n_cdi_devices = c->n_cdi_devices;
	r->cdi_devices = cdip;
	if (!r->envs || !r->annotations)
		return NULL;
	/* protobuf-c packs a NULL string as "" only for proto3 optional-less fields it knows are
	 * set; make sure none is NULL so that a sloppy callback cannot crash the packer. */
	for (size_t i = 0; i < c->n_envs; i++)
		if (!c->envs[i].key || !c->envs[i].value)
			return NULL;
	for (size_t i = 0; i < c->n_annotations; i++)
		if (!c->annotations[i].key || !c->annotations[i].value)
			return NULL;
	for (size_t i = 0; i < c->n_mounts; i++)
		if (!m[i].container_path || !m[i].host_path)
			return NULL;
	for (size_t i = 0; i < c->n_devices; i++)
		if (!d[i].container_path || !d[i].host_path)
			return NULL;
	for (size_t i = 0; i < c->n_cdi_devices; i++)
		if (!cdi[i].name)
			return NULL;
	return r;
}

static void answer_allocate(struct kubelet_server *srv, const uint8_t *req, size_t len,
			    struct kubelet_answer *ans)
{
	V1beta1__AllocateRequest *rq = v1beta1__allocate_request__unpack(NULL, len, req);
	V1beta1__AllocateResponse resp = V1BETA1__ALLOCATE_RESPONSE__INIT;
	struct kubelet_container_alloc *allocs = NULL;
	struct arena a = { 0 };
	size_t n;

	if (!rq) {
		answer_error(ans, GRPC_STATUS_INVALID_ARGUMENT, "malformed AllocateRequest");
		return;
	}
	n = rq->n_container_requests;
	allocs = calloc(n ? n : 1, sizeof(*allocs));
	resp.container_responses = arena_new(&a, n, sizeof(*resp.container_responses));
	if (!allocs || !resp.container_responses)
		goto oom;
	resp.n_container_responses = n;
	for (size_t i = 0; i < n; i++) {
		const V1beta1__ContainerAllocateRequest *cr = rq->container_requests[i];
		char *msg = NULL;
		int r = srv->ops.allocate(srv->ud, (const char *const *)cr->devices_ids,
					  cr->n_devices_ids, &allocs[i], &msg);

		if (r < 0) {
			answer_errno(ans, r, msg);
			goto out;
		}
		free(msg);
		resp.container_responses[i] = pack_container(&a, &allocs[i]);
		if (!resp.container_responses[i]) {
			answer_error(ans, GRPC_STATUS_INTERNAL,
				     "allocate: incomplete or unpackable container response");
			goto out;
		}
	}
	answer_message(ans, &resp.base);
	goto out;
oom:
	answer_error(ans, GRPC_STATUS_RESOURCE_EXHAUSTED, strerror(ENOMEM));
out:
	for (size_t i = 0; allocs && i < n; i++)
		kubelet_container_alloc_clear(&allocs[i]);
	free(allocs);
	arena_free(&a);
	v1beta1__allocate_request__free_unpacked(rq, NULL);
}

/* --- GetPreferredAllocation --------------------------------------------------------------- */

static void answer_preferred(struct kubelet_server *srv, const uint8_t *req, size_t len,
			     struct kubelet_answer *ans)
{
	V1beta1__PreferredAllocationRequest *rq =
		v1beta1__preferred_allocation_request__unpack(NULL, len, req);
	V1beta1__PreferredAllocationResponse resp = V1BETA1__PREFERRED_ALLOCATION_RESPONSE__INIT;
	V1beta1__ContainerPreferredAllocationResponse *cr = NULL;
	size_t n = 0;

	if (!rq) {
		answer_error(ans, GRPC_STATUS_INVALID_ARGUMENT,
			     "malformed PreferredAllocationRequest");
		return;
	}
	n = rq->n_container_requests;
	cr = calloc(n ? n : 1, sizeof(*cr));
	resp.container_responses = calloc(n ? n : 1, sizeof(*resp.container_responses));
	if (!cr || !resp.container_responses) {
		answer_error(ans, GRPC_STATUS_RESOURCE_EXHAUSTED, strerror(ENOMEM));
		goto out;
	}
	resp.n_container_responses = n;
	for (size_t i = 0; i < n; i++) {
		const V1beta1__ContainerPreferredAllocationRequest *q = rq->container_requests[i];
		int r;

		cr[i] = (V1beta1__ContainerPreferredAllocationResponse)
			V1BETA1__CONTAINER_PREFERRED_ALLOCATION_RESPONSE__INIT;
		resp.container_responses[i] = &cr[i];
		if (q->allocation_size < 0) {
			answer_error(ans, GRPC_STATUS_INVALID_ARGUMENT, "negative allocation_size");
			goto out;
		}
		r = srv->ops.preferred(srv->ud, (const char *const *)q->available_deviceids,
				       q->n_available_deviceids,
				       (const char *const *)q->must_include_deviceids,
				       q->n_must_include_deviceids, (size_t)q->allocation_size,
				       &cr[i].deviceids, &cr[i].n_deviceids);
		if (r < 0) {
			answer_errno(ans, r, NULL);
			goto out;
		}
	}
	answer_message(ans, &resp.base);
out:
	for (size_t i = 0; cr && i < n; i++)
		strv_free(cr[i].deviceids);
	free(cr);
	free(resp.container_responses);
	v1beta1__preferred_allocation_request__free_unpacked(rq, NULL);
}

/* --- PreStartContainer -------------------------------------------------------------------- */

static void answer_prestart(struct kubelet_server *srv, const uint8_t *req, size_t len,
			    struct kubelet_answer *ans)
{
	V1beta1__PreStartContainerRequest *rq =
		v1beta1__pre_start_container_request__unpack(NULL, len, req);
	V1beta1__PreStartContainerResponse resp = V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;
	int r;

	if (!rq) {
		answer_error(ans, GRPC_STATUS_INVALID_ARGUMENT,
			     "malformed PreStartContainerRequest");
		return;
	}
	r = srv->ops.prestart(srv->ud, (const char *const *)rq->devices_ids, rq->n_devices_ids);
	if (r < 0)
		answer_errno(ans, r, NULL);
	else
		answer_message(ans, &resp.base);
	v1beta1__pre_start_container_request__free_unpacked(rq, NULL);
}

static void answer_unimplemented(struct kubelet_server *srv, const uint8_t *req, size_t len,
				 struct kubelet_answer *ans)
{
	answer_error(ans, GRPC_STATUS_UNIMPLEMENTED, "method not served by this device plugin");
}

/* --- served calls ------------------------------------------------------------------------- */

static void unary_arrived(struct kubelet_server *srv, struct kubelet_rpc *rpc);
static void offload_arrived(struct kubelet_server *srv, struct kubelet_rpc *rpc);
static void stream_arrived(struct kubelet_server *srv, struct kubelet_rpc *rpc);

enum { M_OPTIONS, M_LIST_AND_WATCH, M_PREFERRED, M_ALLOCATE, M_PRESTART, M_OTHER, M__MAX };

static const struct kubelet_method methods[M__MAX] = {
	[M_OPTIONS] = { "/v1beta1.DevicePlugin/GetDevicePluginOptions", unary_arrived,
			answer_options },
	[M_LIST_AND_WATCH] = { "/v1beta1.DevicePlugin/ListAndWatch", stream_arrived,
			       answer_unimplemented },
	[M_PREFERRED] = { "/v1beta1.DevicePlugin/GetPreferredAllocation", offload_arrived,
			  answer_preferred },
	[M_ALLOCATE] = { "/v1beta1.DevicePlugin/Allocate", unary_arrived, answer_allocate },
	[M_PRESTART] = { "/v1beta1.DevicePlugin/PreStartContainer", unary_arrived,
			 answer_prestart },
	[M_OTHER] = { NULL, unary_arrived, answer_unimplemented },
};

static void rpc_free(struct kubelet_rpc *rpc)
{
	grpc_metadata_array_destroy(&rpc->md);
	grpc_call_details_destroy(&rpc->details);
	if (rpc->payload)
		grpc_byte_buffer_destroy(rpc->payload);
	if (rpc->out)
		grpc_byte_buffer_destroy(rpc->out);
	if (rpc->call)
		grpc_call_unref(rpc->call);
	free(rpc);
}

static void rpc_arrived(struct kubelet_server *srv, struct kubelet_tag *tag, bool ok);

/* Ask gRPC for the next call of method m. */
static int rpc_request_locked(struct kubelet_server *srv, const struct kubelet_method *m)
{
	struct kubelet_rpc *rpc = calloc(1, sizeof(*rpc));
	grpc_call_error e;

	if (!rpc)
		return -ENOMEM;
	rpc->tag.done = rpc_arrived;
	rpc->tag.srv = srv;
	rpc->method = m;
	grpc_metadata_array_init(&rpc->md);
	grpc_call_details_init(&rpc->details);
	if (m->path)
		e = grpc_server_request_registered_call(
			srv->server, srv->methods[m - methods], &rpc->call, &rpc->deadline,
			&rpc->md, &rpc->payload, srv->k->cq, srv->k->cq, &rpc->tag);
	else
		e = grpc_server_request_call(srv->server, &rpc->call, &rpc->details, &rpc->md,
					     srv->k->cq, srv->k->cq, &rpc->tag);
	if (e != GRPC_CALL_OK) {
		rpc_free(rpc);
		return -EIO;
	}
	srv->pending++;
	return 0;
}

int kubelet_rpc_register_methods(struct kubelet_server *srv)
{
	for (size_t i = 0; i < M__MAX; i++) {
		if (!methods[i].path)
			continue;
		srv->methods[i] =
			grpc_server_register_method(srv->server, methods[i].path, NULL,
						    GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
		if (!srv->methods[i])
			return -EINVAL;
	}
	return 0;
}

int kubelet_rpc_request_all_locked(struct kubelet_server *srv)
{
	for (size_t i = 0; i < M__MAX; i++) {
		int r = rpc_request_locked(srv, &methods[i]);

		if (r < 0)
			return r;
	}
	return 0;
}

static void rpc_arrived(struct kubelet_server *srv, struct kubelet_tag *tag, bool ok)
{
	struct kubelet_rpc *rpc = kubelet_container_of(tag, struct kubelet_rpc, tag);
	int r = 0;

	if (!ok) { /* the server is shutting down */
		rpc_free(rpc);
		return;
	}
	pthread_mutex_lock(&srv->lock);
	if (!srv->stopping)
		r = rpc_request_locked(srv, rpc->method);
	pthread_mutex_unlock(&srv->lock);
	if (r < 0)
		kubelet_logf(srv, 0, "cannot wait for the next %s call: %s",
			     rpc->method->path ? rpc->method->path : "other", strerror(-r));
	rpc->method->arrived(srv, rpc);
}

static void unary_answered(struct kubelet_server *srv, struct kubelet_tag *tag, bool ok)
{
	rpc_free(kubelet_container_of(tag, struct kubelet_rpc, tag));
}

/* The request's bytes, flattened (a server gets one message per unary or server-stream call). */
static grpc_slice payload_slice(grpc_byte_buffer *bb)
{
	grpc_byte_buffer_reader rd;
	grpc_slice s;

	if (!bb || !grpc_byte_buffer_reader_init(&rd, bb))
		return grpc_empty_slice();
	s = grpc_byte_buffer_reader_readall(&rd);
	grpc_byte_buffer_reader_destroy(&rd);
	return s;
}

static void unary_arrived(struct kubelet_server *srv, struct kubelet_rpc *rpc)
{
	struct kubelet_answer ans = { .code = GRPC_STATUS_OK };
	grpc_slice req = payload_slice(rpc->payload);
	grpc_slice details;
	grpc_op ops[4] = { 0 };
	size_t n = 0;
	grpc_call_error e;

	rpc->method->answer(srv, GRPC_SLICE_START_PTR(req), GRPC_SLICE_LENGTH(req), &ans);
	grpc_slice_unref(req);
	if (ans.code != GRPC_STATUS_OK)
		kubelet_logf(srv, 1, "%s: %s",
			     rpc->method->path ? rpc->method->path : "unknown method",
			     ans.msg ? ans.msg : "error");
	details = ans.msg ? grpc_slice_from_copied_string(ans.msg) : grpc_empty_slice();
	free(ans.msg);
	rpc->out = ans.reply;

	ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
	if (rpc->out) {
		ops[n].op = GRPC_OP_SEND_MESSAGE;
		ops[n++].data.send_message.send_message = rpc->out;
	}
	ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	ops[n].data.send_status_from_server.status = ans.code;
	ops[n++].data.send_status_from_server.status_details = &details;
	ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops[n++].data.recv_close_on_server.cancelled = &rpc->cancelled;
	rpc->tag.done = unary_answered;
	pthread_mutex_lock(&srv->lock);
	e = kubelet_start_batch_locked(srv, rpc->call, ops, n, &rpc->tag);
	pthread_mutex_unlock(&srv->lock);
	grpc_slice_unref(details); /* not retained past start_batch */
	if (e != GRPC_CALL_OK) {
		kubelet_logf(srv, 0, "answering a call: %s", grpc_call_error_to_string(e));
		rpc_free(rpc);
	}
}

/* GetPreferredAllocation: answered on the worker thread. The job counts as pending, so that
 * stop() waits for it as for a batch. */
static void offload_run(struct kubelet_work *w)
{
	struct kubelet_rpc *rpc = kubelet_container_of(w, struct kubelet_rpc, work);
	struct kubelet_server *srv = rpc->tag.srv;

	unary_arrived(srv, rpc);
	pthread_mutex_lock(&srv->lock);
	if (--srv->pending == 0 && srv->stopping)
		pthread_cond_broadcast(&srv->idle);
	pthread_mutex_unlock(&srv->lock); /* srv may be gone from here */
}

static void offload_arrived(struct kubelet_server *srv, struct kubelet_rpc *rpc)
{
	pthread_mutex_lock(&srv->lock);
	srv->pending++;
	pthread_mutex_unlock(&srv->lock);
	rpc->work.run = offload_run;
	kubelet_work_push(srv->k, &rpc->work);
}

/* --- ListAndWatch ------------------------------------------------------------------------- */

static grpc_call_error stream_start(void *owner, grpc_call *call, const grpc_op *ops, size_t n,
				    void *tag)
{
	struct kubelet_server *srv = owner;

	if (srv->stopping)
		return GRPC_CALL_ERROR;
	return kubelet_start_batch_locked(srv, call, ops, n, tag);
}

void kubelet_rpc_streams_init(struct kubelet_server *srv)
{
	/* an empty ListAndWatchResponse packs to no bytes: the list before set_devices() */
	kubelet_stream_set_init(&srv->streams, true, stream_start, srv);
}

static void stream_sent(struct kubelet_server *srv, struct kubelet_tag *tag, bool ok)
{
	struct kubelet_rpc *rpc = kubelet_container_of(tag, struct kubelet_rpc, send_tag);
	bool gone;

	pthread_mutex_lock(&srv->lock);
	gone = kubelet_stream_sent_locked(&srv->streams, &rpc->stream, ok);
	pthread_mutex_unlock(&srv->lock);
	if (gone)
		rpc_free(rpc);
}

static void stream_closed(struct kubelet_server *srv, struct kubelet_tag *tag, bool ok)
{
	struct kubelet_rpc *rpc = kubelet_container_of(tag, struct kubelet_rpc, tag);
	bool gone;

	pthread_mutex_lock(&srv->lock);
	gone = kubelet_stream_closed_locked(&srv->streams, &rpc->stream);
	pthread_mutex_unlock(&srv->lock);
	kubelet_logf(srv, 3, "ListAndWatch stream closed");
	if (gone)
		rpc_free(rpc);
}

static void stream_arrived(struct kubelet_server *srv, struct kubelet_rpc *rpc)
{
	grpc_op op = { .op = GRPC_OP_RECV_CLOSE_ON_SERVER };
	grpc_call_error e;

	op.data.recv_close_on_server.cancelled = &rpc->cancelled;
	rpc->tag.done = stream_closed;
	rpc->send_tag.done = stream_sent;
	rpc->stream.call = rpc->call;
	rpc->stream.send_tag = &rpc->send_tag;
	pthread_mutex_lock(&srv->lock);
	e = kubelet_start_batch_locked(srv, rpc->call, &op, 1, &rpc->tag);
	if (e == GRPC_CALL_OK)
		kubelet_stream_add_locked(&srv->streams, &rpc->stream);
	pthread_mutex_unlock(&srv->lock);
	if (e != GRPC_CALL_OK) {
		kubelet_logf(srv, 0, "ListAndWatch: %s", grpc_call_error_to_string(e));
		rpc_free(rpc);
		return;
	}
	kubelet_logf(srv, 2, "ListAndWatch stream opened");
}

static int pack_device_list(const struct kubelet_device *devs, size_t n, grpc_slice *ret)
{
	V1beta1__ListAndWatchResponse resp = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
	struct arena a = { 0 };
	V1beta1__Device *d = arena_new(&a, n, sizeof(*d));
	V1beta1__Device **dp = arena_new(&a, n, sizeof(*dp));
	V1beta1__TopologyInfo *t = arena_new(&a, n, sizeof(*t));
	V1beta1__NUMANode *nn = arena_new(&a, n, sizeof(*nn));
	V1beta1__NUMANode **np = arena_new(&a, n, sizeof(*np));

	if (a.failed) {
		arena_free(&a);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		d[i] = (V1beta1__Device)V1BETA1__DEVICE__INIT;
		d[i].id = (char *)devs[i].id;
		d[i].health = devs[i].healthy ? "Healthy" : "Unhealthy";
		if (devs[i].numa_node >= 0) {
			nn[i] = (V1beta1__NUMANode)V1BETA1__NUMANODE__INIT;
			nn[i].id = devs[i].numa_node;
			np[i] = &nn[i];
			t[i] = (V1beta1__TopologyInfo)V1BETA1__TOPOLOGY_INFO__INIT;
			t[i].n_nodes = 1;
			t[i].nodes = &np[i];
			d[i].topology = &t[i];
		}
		dp[i] = &d[i];
	}
	resp.n_devices = n;
	resp.devices = dp;
	*ret = pack_slice(&resp.base);
	arena_free(&a);
	return 0;
}

int kubelet_rpc_devices_changed_locked(struct kubelet_server *srv)
{
	grpc_slice s;
	int r = pack_device_list(srv->devs, srv->n_devs, &s);

	if (r < 0)
		return r;
	kubelet_stream_publish_locked(&srv->streams, s);
	return 0;
}
