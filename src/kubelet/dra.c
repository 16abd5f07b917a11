/* SPDX-License-Identifier: Apache-2.0 */
/* The DRA plugin's side of the kubelet: the Registration service on the plugin watcher's
 * socket and the DRAPlugin service (v1 and v1beta1, the same messages) on the endpoint it names,
 * with the resource health stream (v1alpha1.DRAResourceHealth) beside it: a stream of stream.c,
 * as the device plugin's ListAndWatch.
 *
 * One gRPC server serves both sockets; as the device plugin's hub does, we bind and accept
 * ourselves and hand each connection to gRPC (grpc_server_add_channel_from_fd): the socket gets
 * mode 0600 before it exists, a live process's socket is never taken over, and a socket whose
 * file went away can be bound again on the same server. One thread accepts, one drains the
 * completion queue and answers every call in turn, so that the driver's callbacks run one at a
 * time (the kubelet's own plugin helper serializes them by default). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc_posix.h>

#include "kubelet/dra.pb-c.h"
#include "kubelet/drahealth.pb-c.h"
#include "kubelet/internal.h"
#include "kubelet/pluginregistration.pb-c.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/strv.h"

/* the generated names, shorter */
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesRequest PrepareReq;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesResponse PrepareResp;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesResponse__ClaimsEntry
	PrepareEntry;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourceResponse PrepareOne;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Device Device;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesRequest UnprepareReq;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesResponse UnprepareResp;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesResponse__ClaimsEntry
	UnprepareEntry;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourceResponse UnprepareOne;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Claim Claim;
typedef V1alpha1__NodeWatchResourcesResponse HealthResp;
typedef V1alpha1__DeviceHealth HealthOne;
typedef V1alpha1__DeviceIdentifier HealthId;

#define DRA_API "k8s.io.kubelet.pkg.apis.dra."

enum { S_REG, S_EP, S__MAX };
enum {
	M_INFO,
	M_NOTIFY,
	M_PREPARE,
	M_UNPREPARE,
	M_PREPARE_B,
	M_UNPREPARE_B,
	M_HEALTH,
	M_OTHER,
	M__MAX
};

struct dra_answer {
	grpc_status_code code;
	char *msg; /* malloc'd, NULL for none */
	grpc_slice reply;
	bool has_reply;
};

struct kubelet_dra;
struct dra_call;

struct dra_tag {
	void (*done)(struct kubelet_dra *d, struct dra_tag *tag, bool ok);
};

struct dra_call {
	struct dra_tag tag;
	int method;
	grpc_call *call;
	gpr_timespec deadline;
	grpc_metadata_array md;
	grpc_call_details details;
	grpc_byte_buffer *payload, *out;
	int cancelled;
	/* NodeWatchResources */
	struct kubelet_stream stream;
	struct dra_tag send_tag;
};

/* One device's health as last sent, with the time it last changed. */
struct dra_health {
	char *pool, *device;
	enum kubelet_dra_health health;
	int64_t since;
};

struct dra_sock {
	char *path;
	int fd;
	dev_t dev;
	ino_t ino;
};

struct kubelet_dra {
	char *driver, *ep_dir;
	struct kubelet_dra_ops ops;
	void *ud;
	kubelet_log_fn log;
	void *log_ud;
	struct kubelet_log_sink sink;
	bool grpc_up;
	grpc_server *server;
	grpc_completion_queue *cq;
	grpc_server_credentials *creds;
	void *methods[M__MAX];
	struct dra_tag shutdown_tag;
	bool cq_up, accept_up;
	pthread_t cq_thread, accept_thread;
	int wake_fd;
	pthread_mutex_t lock; /* socks, stopping */
	struct dra_sock socks[S__MAX];
	bool stopping;
	/* the health streams and what they were sent: set_health on the caller's thread, the
	 * streams' completions on the queue's */
	pthread_mutex_t hlock;
	struct kubelet_stream_set health;
	struct dra_health *hv; /* sorted by pool, then device */
	size_t hn;
	bool health_stop;
};

static const char *const method_paths[M__MAX] = {
	[M_INFO] = "/pluginregistration.Registration/GetInfo",
	[M_NOTIFY] = "/pluginregistration.Registration/NotifyRegistrationStatus",
	[M_PREPARE] = "/" DRA_API "v1.DRAPlugin/NodePrepareResources",
	[M_UNPREPARE] = "/" DRA_API "v1.DRAPlugin/NodeUnprepareResources",
	[M_PREPARE_B] = "/" DRA_API "v1beta1.DRAPlugin/NodePrepareResources",
	[M_UNPREPARE_B] = "/" DRA_API "v1beta1.DRAPlugin/NodeUnprepareResources",
	[M_HEALTH] = "/" KUBELET_DRA_HEALTH_SERVICE "/NodeWatchResources",
	[M_OTHER] = NULL,
};

__attribute__((format(printf, 3, 4))) static void logf_(struct kubelet_dra *d, int level,
							const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!d->log)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	d->log(level, buf, d->log_ud);
}

void kubelet_dra_result_clear(struct kubelet_dra_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		strv_free(r->v[i].requests);
		strv_free(r->v[i].cdi_ids);
		free(r->v[i].pool);
		free(r->v[i].device);
	}
	free(r->v);
	free(r->error);
	*r = (struct kubelet_dra_result){ 0 };
}

/* ---- answers ---------------------------------------------------------------------------- */

static void answer_error(struct dra_answer *a, grpc_status_code code, const char *msg)
{
	a->code = code;
	a->msg = strdup(msg);
}

static void answer_message(struct dra_answer *a, const ProtobufCMessage *m)
{
	a->reply = grpc_slice_malloc(protobuf_c_message_get_packed_size(m));
	protobuf_c_message_pack(m, GRPC_SLICE_START_PTR(a->reply));
	a->has_reply = true;
}

static void answer_info(struct kubelet_dra *d, const uint8_t *req, size_t len, struct dra_answer *a)
{
	Pluginregistration__PluginInfo info = PLUGINREGISTRATION__PLUGIN_INFO__INIT;
	/* the kubelet opens the health stream only where the plugin names its service here */
	char *versions[] = { "v1.DRAPlugin", "v1beta1.DRAPlugin", KUBELET_DRA_HEALTH_SERVICE };

	info.type = "DRAPlugin";
	info.name = d->driver;
	pthread_mutex_lock(&d->lock);
	info.endpoint = d->socks[S_EP].path;
	pthread_mutex_unlock(&d->lock);
	info.n_supported_versions = ELEMENTSOF(versions);
	info.supported_versions = versions;
	answer_message(a, &info.base);
}

static void answer_notify(struct kubelet_dra *d, const uint8_t *req, size_t len,
			  struct dra_answer *a)
{
	Pluginregistration__RegistrationStatus *st =
		pluginregistration__registration_status__unpack(NULL, len, req);
	Pluginregistration__RegistrationStatusResponse resp =
		PLUGINREGISTRATION__REGISTRATION_STATUS_RESPONSE__INIT;

	if (!st) {
		answer_error(a, GRPC_STATUS_INVALID_ARGUMENT, "malformed RegistrationStatus");
		return;
	}
	if (d->ops.registered)
		d->ops.registered(d->ud, st->plugin_registered, st->error ? st->error : "");
	pluginregistration__registration_status__free_unpacked(st, NULL);
	answer_message(a, &resp.base);
}

static bool claim_valid(const Claim *c)
{
	return c && c->uid && c->uid[0] && c->name && c->name[0] && c->namespace_ &&
	       c->namespace_[0];
}

static void answer_prepare(struct kubelet_dra *d, const uint8_t *req, size_t len,
			   struct dra_answer *a)
{
	PrepareReq *rq =
		k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_request__unpack(
			NULL, len, req);
	PrepareResp resp =
		K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_PREPARE_RESOURCES_RESPONSE__INIT;
	struct kubelet_dra_result *res = NULL;
	PrepareEntry *entries = NULL, **ep = NULL;
	PrepareOne *ones = NULL;
	Device **devp = NULL, *devs = NULL;
	size_t n, n_devs = 0, k = 0;

	if (!rq) {
		answer_error(a, GRPC_STATUS_INVALID_ARGUMENT,
			     "malformed NodePrepareResourcesRequest");
		return;
	}
	n = rq->n_claims;
	for (size_t i = 0; i < n; i++)
		if (!claim_valid(rq->claims[i])) {
			answer_error(a, GRPC_STATUS_INVALID_ARGUMENT,
				     "a claim without namespace, uid or name");
			goto out;
		}
	res = calloc(n + 1, sizeof(*res));
	entries = calloc(n + 1, sizeof(*entries));
	ep = calloc(n + 1, sizeof(*ep));
	ones = calloc(n + 1, sizeof(*ones));
	if (!res || !entries || !ep || !ones)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		const Claim *c = rq->claims[i];
		struct kubelet_dra_claim cl = { c->namespace_, c->uid, c->name };

		d->ops.prepare(d->ud, &cl, &res[i]);
		n_devs += res[i].error ? 0 : res[i].n;
	}
	devs = calloc(n_devs + 1, sizeof(*devs));
	devp = calloc(n_devs + 1, sizeof(*devp));
	if (!devs || !devp)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		PrepareOne *o = &ones[i];

		*o = (PrepareOne)
			K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_PREPARE_RESOURCE_RESPONSE__INIT;
		if (res[i].error) {
			o->error = res[i].error;
		} else {
			o->devices = &devp[k];
			o->n_devices = res[i].n;
			for (size_t j = 0; j < res[i].n; j++, k++) {
				const struct kubelet_dra_device *dv = &res[i].v[j];

				devs[k] =
					(Device)K8S__IO__KUBELET__PKG__APIS__DRA__V1__DEVICE__INIT;
				devs[k].pool_name = dv->pool;
				devs[k].device_name = dv->device;
				devs[k].request_names = dv->requests;
				devs[k].n_request_names = strv_length(dv->requests);
				devs[k].cdi_device_ids = dv->cdi_ids;
				devs[k].n_cdi_device_ids = strv_length(dv->cdi_ids);
				devp[k] = &devs[k];
			}
		}
		entries[i] = (PrepareEntry)
			K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_PREPARE_RESOURCES_RESPONSE__CLAIMS_ENTRY__INIT;
		entries[i].key = rq->claims[i]->uid;
		entries[i].value = o;
		ep[i] = &entries[i];
	}
	resp.n_claims = n;
	resp.claims = ep;
	answer_message(a, &resp.base);
	goto out;
oom:
	answer_error(a, GRPC_STATUS_RESOURCE_EXHAUSTED, strerror(ENOMEM));
out:
	for (size_t i = 0; res && i < n; i++)
		kubelet_dra_result_clear(&res[i]);
	free(res);
	free(entries);
	free(ep);
	free(ones);
	free(devs);
	free(devp);
	k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_request__free_unpacked(rq,
											    NULL);
}

static void answer_unprepare(struct kubelet_dra *d, const uint8_t *req, size_t len,
			     struct dra_answer *a)
{
	UnprepareReq *rq =
		k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_request__unpack(
			NULL, len, req);
	UnprepareResp resp =
		K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_UNPREPARE_RESOURCES_RESPONSE__INIT;
	UnprepareEntry *entries = NULL, **ep = NULL;
	UnprepareOne *ones = NULL;
	char **errors = NULL;
	size_t n;

	if (!rq) {
		answer_error(a, GRPC_STATUS_INVALID_ARGUMENT,
			     "malformed NodeUnprepareResourcesRequest");
		return;
	}
	n = rq->n_claims;
	for (size_t i = 0; i < n; i++)
		if (!claim_valid(rq->claims[i])) {
			answer_error(a, GRPC_STATUS_INVALID_ARGUMENT,
				     "a claim without namespace, uid or name");
			goto out;
		}
	entries = calloc(n + 1, sizeof(*entries));
	ep = calloc(n + 1, sizeof(*ep));
	ones = calloc(n + 1, sizeof(*ones));
	errors = calloc(n + 1, sizeof(*errors));
	if (!entries || !ep || !ones || !errors) {
		answer_error(a, GRPC_STATUS_RESOURCE_EXHAUSTED, strerror(ENOMEM));
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const Claim *c = rq->claims[i];
		struct kubelet_dra_claim cl = { c->namespace_, c->uid, c->name };

		d->ops.unprepare(d->ud, &cl, &errors[i]);
		ones[i] = (UnprepareOne)
			K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_UNPREPARE_RESOURCE_RESPONSE__INIT;
		if (errors[i])
			ones[i].error = errors[i];
		entries[i] = (UnprepareEntry)
			K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_UNPREPARE_RESOURCES_RESPONSE__CLAIMS_ENTRY__INIT;
		entries[i].key = c->uid;
		entries[i].value = &ones[i];
		ep[i] = &entries[i];
	}
	resp.n_claims = n;
	resp.claims = ep;
	answer_message(a, &resp.base);
out:
	for (size_t i = 0; errors && i < n; i++)
		free(errors[i]);
	free(errors);
	free(entries);
	free(ep);
	free(ones);
	k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_request__free_unpacked(rq,
											      NULL);
}

static void answer(struct kubelet_dra *d, int method, const uint8_t *req, size_t len,
		   struct dra_answer *a)
{
	switch (method) {
	case M_INFO: answer_info(d, req, len, a); break;
	case M_NOTIFY: answer_notify(d, req, len, a); break;
	case M_PREPARE:
	case M_PREPARE_B: answer_prepare(d, req, len, a); break;
	case M_UNPREPARE:
	case M_UNPREPARE_B: answer_unprepare(d, req, len, a); break;
	default: answer_error(a, GRPC_STATUS_UNIMPLEMENTED, "method not served by this DRA plugin");
	}
}

/* ---- calls ---------------------------------------------------------------------------------- */

static void call_free(struct dra_call *c)
{
	grpc_metadata_array_destroy(&c->md);
	grpc_call_details_destroy(&c->details);
	if (c->payload)
		grpc_byte_buffer_destroy(c->payload);
	if (c->out)
		grpc_byte_buffer_destroy(c->out);
	if (c->call)
		grpc_call_unref(c->call);
	free(c);
}

static void health_arrived(struct kubelet_dra *d, struct dra_call *c);

static void call_arrived(struct kubelet_dra *d, struct dra_tag *tag, bool ok);

/* Ask gRPC for the next call of a method. */
static int call_request(struct kubelet_dra *d, int method)
{
	struct dra_call *c = calloc(1, sizeof(*c));
	grpc_call_error e;

	if (!c)
		return -ENOMEM;
	c->tag.done = call_arrived;
	c->method = method;
	grpc_metadata_array_init(&c->md);
	grpc_call_details_init(&c->details);
	if (method_paths[method])
		e = grpc_server_request_registered_call(d->server, d->methods[method], &c->call,
							&c->deadline, &c->md, &c->payload, d->cq,
							d->cq, &c->tag);
	else
		e = grpc_server_request_call(d->server, &c->call, &c->details, &c->md, d->cq, d->cq,
					     &c->tag);
	if (e != GRPC_CALL_OK) {
		call_free(c);
		return -EIO;
	}
	return 0;
}

static void call_answered(struct kubelet_dra *d, struct dra_tag *tag, bool ok)
{
	call_free((struct dra_call *)tag);
}

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

static void call_arrived(struct kubelet_dra *d, struct dra_tag *tag, bool ok)
{
	struct dra_call *c = (struct dra_call *)tag;
	struct dra_answer a = { .code = GRPC_STATUS_OK };
	grpc_slice req, details;
	grpc_op ops[4] = { 0 };
	size_t n = 0;
	int r;

	if (!ok) { /* the server is shutting down */
		call_free(c);
		return;
	}
	if ((r = call_request(d, c->method)) < 0)
		logf_(d, 0, "cannot wait for the next %s call: %s",
		      method_paths[c->method] ? method_paths[c->method] : "other", strerror(-r));
	if (c->method == M_HEALTH) {
		health_arrived(d, c);
		return;
	}
	req = payload_slice(c->payload);
	answer(d, c->method, GRPC_SLICE_START_PTR(req), GRPC_SLICE_LENGTH(req), &a);
	grpc_slice_unref(req);
	if (a.code != GRPC_STATUS_OK)
		logf_(d, 1, "%s: %s", method_paths[c->method] ? method_paths[c->method] : "unknown",
		      a.msg ? a.msg : "error");
	details = a.msg ? grpc_slice_from_copied_string(a.msg) : grpc_empty_slice();
	free(a.msg);
	if (a.has_reply) {
		c->out = grpc_raw_byte_buffer_create(&a.reply, 1);
		grpc_slice_unref(a.reply);
	}
	ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
	if (c->out) {
		ops[n].op = GRPC_OP_SEND_MESSAGE;
		ops[n++].data.send_message.send_message = c->out;
	}
	ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	ops[n].data.send_status_from_server.status = a.code;
	ops[n++].data.send_status_from_server.status_details = &details;
	ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
	c->tag.done = call_answered;
	if (grpc_call_start_batch(c->call, ops, n, &c->tag, NULL) != GRPC_CALL_OK) {
		logf_(d, 0, "answering a call failed");
		call_free(c);
	}
	grpc_slice_unref(details);
}

/* ---- the health stream ---------------------------------------------------------------------- */

static grpc_call_error health_start(void *owner, grpc_call *call, const grpc_op *ops, size_t n,
				    void *tag)
{
	struct kubelet_dra *d = owner;

	if (d->health_stop)
		return GRPC_CALL_ERROR;
	return grpc_call_start_batch(call, ops, n, tag, NULL);
}

static void health_sent(struct kubelet_dra *d, struct dra_tag *tag, bool ok)
{
	struct dra_call *c = kubelet_container_of(tag, struct dra_call, send_tag);
	bool gone;

	pthread_mutex_lock(&d->hlock);
	gone = kubelet_stream_sent_locked(&d->health, &c->stream, ok);
	pthread_mutex_unlock(&d->hlock);
	if (gone)
		call_free(c);
}

static void health_closed(struct kubelet_dra *d, struct dra_tag *tag, bool ok)
{
	struct dra_call *c = (struct dra_call *)tag;
	size_t open;
	bool gone;

	pthread_mutex_lock(&d->hlock);
	gone = kubelet_stream_closed_locked(&d->health, &c->stream);
	open = kubelet_stream_count_locked(&d->health);
	pthread_mutex_unlock(&d->hlock);
	logf_(d, 2, "NodeWatchResources stream closed (%zu open)", open);
	if (gone)
		call_free(c);
}

/* The request has no field: nothing to read. The stream gets the devices' health at once if
 * set_health() was called, else at its first call. */
static void health_arrived(struct kubelet_dra *d, struct dra_call *c)
{
	grpc_op op = { .op = GRPC_OP_RECV_CLOSE_ON_SERVER };
	grpc_call_error e;
	size_t open = 0;

	op.data.recv_close_on_server.cancelled = &c->cancelled;
	c->tag.done = health_closed;
	c->send_tag.done = health_sent;
	c->stream.call = c->call;
	c->stream.send_tag = &c->send_tag;
	pthread_mutex_lock(&d->hlock);
	e = grpc_call_start_batch(c->call, &op, 1, &c->tag, NULL);
	if (e == GRPC_CALL_OK) {
		kubelet_stream_add_locked(&d->health, &c->stream);
		open = kubelet_stream_count_locked(&d->health);
	}
	pthread_mutex_unlock(&d->hlock);
	if (e != GRPC_CALL_OK) {
		logf_(d, 0, "NodeWatchResources: %s", grpc_call_error_to_string(e));
		call_free(c);
		return;
	}
	logf_(d, 2, "NodeWatchResources stream opened (%zu open)", open);
}

static int health_cmp(const void *a, const void *b)
{
	const struct dra_health *x = a, *y = b;
	int r = strcmp(x->pool, y->pool);

	return r ? r : strcmp(x->device, y->device);
}

static void health_free(struct dra_health *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].pool);
		free(v[i].device);
	}
	free(v);
}

static grpc_slice health_pack(const struct dra_health *v, size_t n, int *err)
{
	HealthResp resp = V1ALPHA1__NODE_WATCH_RESOURCES_RESPONSE__INIT;
	HealthOne *one = calloc(n + 1, sizeof(*one));
	HealthOne **pp = calloc(n + 1, sizeof(*pp));
	HealthId *id = calloc(n + 1, sizeof(*id));
	grpc_slice s = grpc_empty_slice();
	static const V1alpha1__HealthStatus status[] = {
		[KUBELET_DRA_HEALTH_UNKNOWN] = V1ALPHA1__HEALTH_STATUS__UNKNOWN,
		[KUBELET_DRA_HEALTH_HEALTHY] = V1ALPHA1__HEALTH_STATUS__HEALTHY,
		[KUBELET_DRA_HEALTH_UNHEALTHY] = V1ALPHA1__HEALTH_STATUS__UNHEALTHY,
	};

	*err = 0;
	if (!one || !pp || !id) {
		*err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		id[i] = (HealthId)V1ALPHA1__DEVICE_IDENTIFIER__INIT;
		id[i].pool_name = v[i].pool;
		id[i].device_name = v[i].device;
		one[i] = (HealthOne)V1ALPHA1__DEVICE_HEALTH__INIT;
		one[i].device = &id[i];
		one[i].health = status[v[i].health];
		one[i].last_updated_time = v[i].since;
		pp[i] = &one[i];
	}
	resp.n_devices = n;
	resp.devices = pp;
	s = grpc_slice_malloc(protobuf_c_message_get_packed_size(&resp.base));
	protobuf_c_message_pack(&resp.base, GRPC_SLICE_START_PTR(s));
out:
	free(one);
	free(pp);
	free(id);
	return s;
}

int kubelet_dra_set_health(struct kubelet_dra *d, const struct kubelet_dra_device_health *v,
			   size_t n)
{
	struct dra_health *nv = calloc(n + 1, sizeof(*nv));
	int64_t now = (int64_t)time(NULL);
	bool changed;
	grpc_slice msg;
	int r = 0;

	if (!nv)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!v[i].pool || !v[i].device ||
		    (unsigned)v[i].health > KUBELET_DRA_HEALTH_UNHEALTHY) {
			health_free(nv, i);
			return -EINVAL;
		}
		nv[i].pool = strdup(v[i].pool);
		nv[i].device = strdup(v[i].device);
		nv[i].health = v[i].health;
		nv[i].since = now;
		if (!nv[i].pool || !nv[i].device) {
			health_free(nv, i + 1);
			return -ENOMEM;
		}
	}
	qsort(nv, n, sizeof(*nv), health_cmp);
	pthread_mutex_lock(&d->hlock);
	changed = !d->health.ready || n != d->hn;
	for (size_t i = 0; i < n; i++) {
		const struct dra_health *old =
			d->hv ? bsearch(&nv[i], d->hv, d->hn, sizeof(*d->hv), health_cmp) : NULL;

		if (old && old->health == nv[i].health)
			nv[i].since = old->since;
		else
			changed = true;
	}
	msg = health_pack(nv, n, &r);
	if (r >= 0) {
		kubelet_stream_publish_locked(&d->health, msg);
		health_free(d->hv, d->hn);
		d->hv = TAKE_PTR(nv);
		d->hn = n;
	}
	pthread_mutex_unlock(&d->hlock);
	health_free(nv, nv ? n : 0);
	return r < 0 ? r : changed;
}

/* ---- the queue ------------------------------------------------------------------------------ */

static void shutdown_done(struct kubelet_dra *d, struct dra_tag *tag, bool ok)
{
	/* every call's tag came back before this one: nothing of ours is on the queue now */
	grpc_completion_queue_shutdown(d->cq);
}

static void *cq_thread(void *arg)
{
	struct kubelet_dra *d = arg;

	for (;;) {
		grpc_event ev = grpc_completion_queue_next(
			d->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);

		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type == GRPC_OP_COMPLETE)
			((struct dra_tag *)ev.tag)->done(d, ev.tag, ev.success);
	}
	return NULL;
}

/* ---- sockets -------------------------------------------------------------------------------- */

/* Bind and listen on s->path (replacing a stale file, never a live one). Caller holds d->lock
 * or no thread runs yet. */
static int sock_bind(struct kubelet_dra *d, struct dra_sock *s)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	struct stat st;
	pid_t owner = 0;
	int r;

	if (strlen(s->path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* the file gets the socket inode's mode at bind(): 0600 before it exists */
	if (fchmod(fd, 0600) < 0)
		return -errno;
	memcpy(sun.sun_path, s->path, strlen(s->path) + 1);
	r = kubelet_socket_owner(s->path, &owner);
	if (r < 0)
		return r;
	if (r > 0) {
		logf_(d, 0, "another process (pid %d) is serving %s: not taking it over",
		      (int)owner, s->path);
		return -EADDRINUSE;
	}
	if (unlink(s->path) < 0 && errno != ENOENT)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || listen(fd, 16) < 0 ||
	    stat(s->path, &st) < 0)
		return -errno;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = TAKE_FD(fd);
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	return 0;
}

static bool sock_present(const struct dra_sock *s)
{
	struct stat st;

	return s->fd >= 0 && stat(s->path, &st) == 0 && st.st_dev == s->dev && st.st_ino == s->ino;
}

static void *accept_thread(void *arg)
{
	struct kubelet_dra *d = arg;

	for (;;) {
		struct pollfd p[S__MAX + 1];
		bool stop;

		pthread_mutex_lock(&d->lock);
		stop = d->stopping;
		for (int i = 0; i < S__MAX; i++)
			p[i] = (struct pollfd){ .fd = d->socks[i].fd, .events = POLLIN };
		pthread_mutex_unlock(&d->lock);
		if (stop)
			break;
		p[S__MAX] = (struct pollfd){ .fd = d->wake_fd, .events = POLLIN };
		if (poll(p, S__MAX + 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			logf_(d, 0, "poll: %s", strerror(errno));
			break;
		}
		if (p[S__MAX].revents) {
			uint64_t v;

			if (read(d->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				logf_(d, 0, "reading the wake eventfd: %s", strerror(errno));
			continue; /* the sockets may have changed */
		}
		pthread_mutex_lock(&d->lock);
		for (int i = 0; i < S__MAX; i++) {
			int fd;

			/* the fd polled is still the socket's (a swap wakes us first) */
			if (!(p[i].revents & POLLIN) || p[i].fd != d->socks[i].fd)
				continue;
			while ((fd = accept4(p[i].fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >=
			       0)
				/* gRPC owns fd from here and closes it with the transport */
				grpc_server_add_channel_from_fd(d->server, fd, d->creds);
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED)
				logf_(d, 0, "accept on %s: %s", d->socks[i].path, strerror(errno));
		}
		pthread_mutex_unlock(&d->lock);
	}
	return NULL;
}

static void wake(struct kubelet_dra *d)
{
	uint64_t one = 1;

	if (write(d->wake_fd, &one, sizeof(one)) < 0)
		return; /* the counter is already readable */
}

/* ---- lifecycle ------------------------------------------------------------------------------ */

static bool name_valid(const char *s)
{
	return str_is_path_name(s) && strlen(s) < NAME_MAX - 16;
}

int kubelet_dra_start(const struct kubelet_dra_config *cfg, struct kubelet_dra **ret)
{
	struct kubelet_dra *d;
	int r;

	if (!name_valid(cfg->driver) || !cfg->registry_dir || !cfg->plugin_dir || !cfg->ops ||
	    !cfg->ops->prepare || !cfg->ops->unprepare)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->wake_fd = -1;
	for (int i = 0; i < S__MAX; i++)
		d->socks[i].fd = -1;
	pthread_mutex_init(&d->lock, NULL);
	pthread_mutex_init(&d->hlock, NULL);
	kubelet_stream_set_init(&d->health, false, health_start, d);
	d->ops = *cfg->ops;
	d->ud = cfg->userdata;
	d->log = cfg->log;
	d->log_ud = cfg->log_ud;
	d->driver = strdup(cfg->driver);
	if (asprintf(&d->socks[S_REG].path, "%s/%s-reg.sock", cfg->registry_dir, cfg->driver) < 0)
		d->socks[S_REG].path = NULL;
	if (asprintf(&d->ep_dir, "%s/%s", cfg->plugin_dir, cfg->driver) < 0)
		d->ep_dir = NULL;
	if (d->ep_dir && asprintf(&d->socks[S_EP].path, "%s/dra.sock", d->ep_dir) < 0)
		d->socks[S_EP].path = NULL;
	if (!d->driver || !d->socks[S_REG].path || !d->ep_dir || !d->socks[S_EP].path) {
		kubelet_dra_free(d);
		return -ENOMEM;
	}
	if ((r = fileio_mkdir_p(cfg->registry_dir, 0755, 0755)) < 0 ||
	    (r = fileio_mkdir_p(d->ep_dir, 0755, 0750)) < 0) {
		kubelet_dra_free(d);
		return r;
	}
	d->sink = (struct kubelet_log_sink){ .log = d->log, .ud = d->log_ud };
	kubelet_log_sink_add(&d->sink);
	grpc_init();
	d->grpc_up = true;
	d->creds = grpc_insecure_server_credentials_create();
	d->cq = grpc_completion_queue_create_for_next(NULL);
	d->server = grpc_server_create(NULL, NULL);
	d->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!d->creds || !d->cq || !d->server || d->wake_fd < 0) {
		kubelet_dra_free(d);
		return -ENOMEM;
	}
	grpc_server_register_completion_queue(d->server, d->cq, NULL);
	for (int i = 0; i < M__MAX; i++)
		if (method_paths[i] && !(d->methods[i] = grpc_server_register_method(
						 d->server, method_paths[i], NULL,
						 GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0))) {
			kubelet_dra_free(d);
			return -EINVAL;
		}
	grpc_server_start(d->server);
	for (int i = 0; i < M__MAX; i++)
		if ((r = call_request(d, i)) < 0) {
			kubelet_dra_free(d);
			return r;
		}
	/* the endpoint first: the kubelet dials it once it has seen the registration socket */
	if ((r = sock_bind(d, &d->socks[S_EP])) < 0 || (r = sock_bind(d, &d->socks[S_REG])) < 0) {
		logf_(d, 0, "listening on %s: %s",
		      d->socks[S_EP].fd < 0 ? d->socks[S_EP].path : d->socks[S_REG].path,
		      strerror(-r));
		kubelet_dra_free(d);
		return r;
	}
	if ((r = -pthread_create(&d->cq_thread, NULL, cq_thread, d)) < 0) {
		kubelet_dra_free(d);
		return r;
	}
	d->cq_up = true;
	if ((r = -pthread_create(&d->accept_thread, NULL, accept_thread, d)) < 0) {
		kubelet_dra_free(d);
		return r;
	}
	d->accept_up = true;
	logf_(d, 2, "serving DRA driver %s: registration %s, endpoint %s", d->driver,
	      d->socks[S_REG].path, d->socks[S_EP].path);
	*ret = d;
	return 0;
}

int kubelet_dra_check(struct kubelet_dra *d)
{
	int done = 0, r = 0;

	pthread_mutex_lock(&d->lock);
	for (int i = 0; i < S__MAX && r >= 0; i++) {
		if (sock_present(&d->socks[i]))
			continue;
		if (i == S_EP && (r = fileio_mkdir_p(d->ep_dir, 0755, 0750)) < 0)
			break;
		r = sock_bind(d, &d->socks[i]);
		if (r >= 0) {
			logf_(d, 1, "%s was removed: re-created it", d->socks[i].path);
			done = 1;
		}
	}
	pthread_mutex_unlock(&d->lock);
	if (done)
		wake(d);
	return r < 0 ? r : done;
}

void kubelet_dra_free(struct kubelet_dra *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->stopping = true;
	pthread_mutex_unlock(&d->lock);
	if (d->accept_up) {
		wake(d);
		pthread_join(d->accept_thread, NULL);
	}
	/* the registration socket first: the kubelet's plugin watcher then deregisters us */
	for (int i = 0; i < S__MAX; i++) {
		if (sock_present(&d->socks[i]))
			unlink(d->socks[i].path);
		closep(&d->socks[i].fd);
	}
	pthread_mutex_lock(&d->hlock);
	d->health_stop = true; /* no send starts on a call being cancelled */
	pthread_mutex_unlock(&d->hlock);
	if (d->server) {
		if (d->cq_up) {
			d->shutdown_tag.done = shutdown_done;
			grpc_server_shutdown_and_notify(d->server, d->cq, &d->shutdown_tag);
			grpc_server_cancel_all_calls(d->server);
			pthread_join(d->cq_thread, NULL);
		} else {
			/* never served: its requested calls come back on a queue nobody drains */
			grpc_server_shutdown_and_notify(d->server, d->cq, &d->shutdown_tag);
			grpc_server_cancel_all_calls(d->server);
			grpc_completion_queue_shutdown(d->cq);
			for (;;) {
				grpc_event ev = grpc_completion_queue_next(
					d->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);

				if (ev.type == GRPC_QUEUE_SHUTDOWN)
					break;
				if (ev.type == GRPC_OP_COMPLETE && ev.tag != &d->shutdown_tag)
					call_free(ev.tag);
			}
		}
		grpc_server_destroy(d->server);
	}
	if (d->cq)
		grpc_completion_queue_destroy(d->cq);
	if (d->creds)
		grpc_server_credentials_release(d->creds);
	if (d->grpc_up) {
		grpc_shutdown();
		kubelet_log_sink_remove(&d->sink);
	}
	closep(&d->wake_fd);
	for (int i = 0; i < S__MAX; i++)
		free(d->socks[i].path);
	pthread_mutex_destroy(&d->lock);
	pthread_mutex_destroy(&d->hlock);
	kubelet_stream_set_clear(&d->health);
	health_free(d->hv, d->hn);
	free(d->driver);
	free(d->ep_dir);
	free(d);
}

const char *kubelet_dra_registration_socket(const struct kubelet_dra *d)
{
	return d->socks[S_REG].path;
}

const char *kubelet_dra_endpoint(const struct kubelet_dra *d)
{
	return d->socks[S_EP].path;
}
