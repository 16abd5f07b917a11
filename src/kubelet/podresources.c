/* SPDX-License-Identifier: Apache-2.0 */
/* A client of the kubelet's PodResources API v1: one unary List call per request, on a
 * connection made for it and closed after it, bounded by a deadline on the call.
 *
 * Like Register (register.c), the channel is made from a connection we open ourselves: no
 * resolver, no reconnect back-off, nothing left open when the call is over. The call runs on a
 * pluck completion queue of its own, so that it needs no thread and no struct kubelet. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_posix.h>
#include <grpc/grpc_security.h>

#include "kubelet/kubelet.h"
#include "kubelet/podresources.pb-c.h"
#include "util/cleanup.h"
#include "util/strutil.h"
#include "util/strv.h"

#define PODRES_LIST_PATH "/v1.PodResourcesLister/List"
/* The kubelet's own limit for this API's messages (podresources.DefaultMaxMsgSize): a node with
 * hundreds of pods answers more than gRPC's default 4 MiB. */
#define PODRES_MAX_MSG (16 * 1024 * 1024)

struct kubelet_pod_resources {
	char *socket;
	bool grpc_up; /* grpc_init() done: free() owes a grpc_shutdown() */
	grpc_channel_credentials *creds;
};

/* ---- the answer --------------------------------------------------------------------------- */

static void row_clear(struct kubelet_pod_device *d)
{
	free(d->namespace_);
	free(d->pod);
	free(d->container);
	free(d->resource);
	strv_free(d->ids);
}

void kubelet_pod_devices_clear(struct kubelet_pod_devices *d)
{
	for (size_t i = 0; i < d->n; i++)
		row_clear(&d->v[i]);
	free(d->v);
	*d = (struct kubelet_pod_devices){ 0 };
}

static int row_add(struct kubelet_pod_devices *out, size_t *cap, const V1__PodResources *p,
		   const V1__ContainerResources *c, const V1__ContainerDevices *dev)
{
	struct kubelet_pod_device *d;

	if (out->n == *cap) {
		size_t ncap = *cap ? 2 * *cap : 16;
		struct kubelet_pod_device *v = realloc(out->v, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		out->v = v;
		*cap = ncap;
	}
	d = &out->v[out->n++];
	*d = (struct kubelet_pod_device){
		.namespace_ = strdup(p->namespace_),
		.pod = strdup(p->name),
		.container = strdup(c->name),
		.resource = strdup(dev->resource_name),
	};
	if (!d->namespace_ || !d->pod || !d->container || !d->resource)
		return -ENOMEM;
	for (size_t i = 0; i < dev->n_device_ids; i++) {
		int r = strv_extend(&d->ids, &d->n_ids, dev->device_ids[i]);

		if (r < 0)
			return r;
	}
	return 0;
}

int kubelet_pod_resources_parse(const void *buf, size_t len, struct kubelet_pod_devices *ret)
{
	V1__ListPodResourcesResponse *m = v1__list_pod_resources_response__unpack(NULL, len, buf);
	struct kubelet_pod_devices out = { 0 };
	size_t cap = 0;
	int r = 0;

	if (!m)
		return -EBADMSG;
	for (size_t i = 0; i < m->n_pod_resources && r == 0; i++) {
		const V1__PodResources *p = m->pod_resources[i];

		for (size_t j = 0; j < p->n_containers && r == 0; j++) {
			const V1__ContainerResources *c = p->containers[j];

			for (size_t k = 0; k < c->n_devices && r == 0; k++)
				r = row_add(&out, &cap, p, c, c->devices[k]);
		}
	}
	v1__list_pod_resources_response__free_unpacked(m, NULL);
	if (r < 0) {
		kubelet_pod_devices_clear(&out);
		return r;
	}
	*ret = out;
	return 0;
}

/* ---- the client --------------------------------------------------------------------------- */

int kubelet_pod_resources_new(const char *socket_path, struct kubelet_pod_resources **ret)
{
	struct sockaddr_un sun;
	struct kubelet_pod_resources *c;

	if (!socket_path)
		socket_path = KUBELET_POD_RESOURCES_SOCKET;
	if (!socket_path[0] || strlen(socket_path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->socket = strdup(socket_path);
	if (!c->socket) {
		kubelet_pod_resources_free(c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

void kubelet_pod_resources_free(struct kubelet_pod_resources *c)
{
	if (!c)
		return;
	if (c->creds)
		grpc_channel_credentials_release(c->creds);
	if (c->grpc_up)
		grpc_shutdown();
	free(c->socket);
	free(c);
}

const char *kubelet_pod_resources_socket(const struct kubelet_pod_resources *c)
{
	return c->socket;
}

static void whyf(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void whyf(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

static int connect_unix(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	if (str_copy(sun.sun_path, sizeof(sun.sun_path), path) < 0) /* checked at new() */
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A unix stream connect() completes at once or fails (EAGAIN: the backlog is full). */
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

static int status_to_errno(grpc_status_code s)
{
	switch (s) {
	case GRPC_STATUS_OK: return 0;
	case GRPC_STATUS_DEADLINE_EXCEEDED: return -ETIMEDOUT;
	case GRPC_STATUS_UNIMPLEMENTED: return -EOPNOTSUPP;
	case GRPC_STATUS_UNAVAILABLE: return -ECONNREFUSED;
	default: return -EPROTO;
	}
}

/* The answer's bytes, flattened. */
static grpc_slice message_slice(grpc_byte_buffer *bb)
{
	grpc_byte_buffer_reader rd;
	grpc_slice s;

	if (!bb || !grpc_byte_buffer_reader_init(&rd, bb))
		return grpc_empty_slice();
	s = grpc_byte_buffer_reader_readall(&rd);
	grpc_byte_buffer_reader_destroy(&rd);
	return s;
}

int kubelet_pod_resources_list(struct kubelet_pod_resources *c, unsigned timeout_ms,
			       struct kubelet_pod_devices *ret, char *why, size_t why_len)
{
	grpc_arg args[] = {
		{ .type = GRPC_ARG_INTEGER, .key = GRPC_ARG_ENABLE_RETRIES, .value.integer = 0 },
		{ .type = GRPC_ARG_INTEGER, .key = GRPC_ARG_ENABLE_CHANNELZ, .value.integer = 0 },
		{ .type = GRPC_ARG_INTEGER,
		  .key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
		  .value.integer = PODRES_MAX_MSG },
	};
	grpc_channel_args ca = { .num_args = ELEMENTSOF(args), .args = args };
	gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
					     gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
	grpc_metadata_array init_md, trailing_md;
	grpc_status_code status = GRPC_STATUS_UNKNOWN;
	grpc_slice details = grpc_empty_slice(), empty = grpc_empty_slice(), body;
	grpc_byte_buffer *req = NULL, *resp = NULL;
	grpc_completion_queue *cq = NULL;
	grpc_channel *ch = NULL;
	grpc_call *call = NULL;
	grpc_op ops[6] = { 0 };
	grpc_event ev;
	int fd, r;

	/* gRPC starts its threads at the first call, not at new(): a daemon blocks the signals its
	 * loop reads (signalfd) after new(), and a thread started before that would take SIGTERM */
	if (!c->grpc_up) {
		grpc_init();
		c->grpc_up = true;
		c->creds = grpc_insecure_credentials_create();
	}
	grpc_metadata_array_init(&init_md);
	grpc_metadata_array_init(&trailing_md);
	if (!c->creds) {
		r = -ENOMEM;
		whyf(why, why_len, "%s", strerror(ENOMEM));
		goto out;
	}
	fd = connect_unix(c->socket);
	if (fd < 0) {
		r = fd;
		whyf(why, why_len, "%s: %s", c->socket, strerror(-r));
		goto out;
	}
	/* gRPC owns fd from here. */
	ch = grpc_channel_create_from_fd("localhost", fd, c->creds, &ca);
	cq = grpc_completion_queue_create_for_pluck(NULL);
	req = grpc_raw_byte_buffer_create(&empty, 1); /* ListPodResourcesRequest has no field */
	if (!ch || !cq || !req) {
		r = -ENOMEM;
		whyf(why, why_len, "%s", strerror(ENOMEM));
		goto out;
	}
	call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
					grpc_slice_from_static_string(PODRES_LIST_PATH), NULL,
					deadline, NULL);
	if (!call) {
		r = -ENOMEM;
		whyf(why, why_len, "%s", strerror(ENOMEM));
		goto out;
	}
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = req;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &init_md;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &resp;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &trailing_md;
	ops[5].data.recv_status_on_client.status = &status;
	ops[5].data.recv_status_on_client.status_details = &details;
	if (grpc_call_start_batch(call, ops, ELEMENTSOF(ops), call, NULL) != GRPC_CALL_OK) {
		r = -EPROTO;
		whyf(why, why_len, "List: the call could not start");
		goto out;
	}
	/* The call's deadline ends the batch (DEADLINE_EXCEEDED) when the kubelet does not answer:
	 * waiting for the tag cannot outlast it. */
	ev = grpc_completion_queue_pluck(cq, call, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	if (ev.type != GRPC_OP_COMPLETE || !ev.success) {
		r = -EPROTO;
		whyf(why, why_len, "List: the call failed");
		goto out;
	}
	r = status_to_errno(status);
	if (r < 0) {
		_cleanup_free_ char *d = grpc_slice_to_c_string(details);

		whyf(why, why_len, "%s: List: gRPC status %d%s%s", c->socket, (int)status,
		     d && d[0] ? ": " : "", d ? d : "");
		goto out;
	}
	body = message_slice(resp);
	r = kubelet_pod_resources_parse(GRPC_SLICE_START_PTR(body), GRPC_SLICE_LENGTH(body), ret);
	grpc_slice_unref(body);
	if (r < 0)
		whyf(why, why_len, "%s: List: %s", c->socket,
		     r == -EBADMSG ? "the answer is not a ListPodResourcesResponse" : strerror(-r));
out:
	if (call)
		grpc_call_unref(call);
	if (cq) {
		grpc_completion_queue_shutdown(cq);
		grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		grpc_completion_queue_destroy(cq);
	}
	if (ch)
		grpc_channel_destroy(ch);
	if (req)
		grpc_byte_buffer_destroy(req);
	if (resp)
		grpc_byte_buffer_destroy(resp);
	grpc_slice_unref(details);
	grpc_metadata_array_destroy(&init_md);
	grpc_metadata_array_destroy(&trailing_md);
	return r;
}
