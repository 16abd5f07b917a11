/* SPDX-License-Identifier: Apache-2.0 */
/* Registration.Register, the one call we make to the kubelet.
 *
 * The call runs asynchronously on the hub's queue: a real kubelet dials our socket back and calls
 * GetDevicePluginOptions *before* it answers Register, so the watch thread, which accepts those
 * connections, must never wait for the answer. Each attempt gets a fresh channel (the kubelet
 * at the other end may be a new process) and a new attempt cancels the one in flight.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <grpc/grpc_posix.h>

#include "kubelet/deviceplugin.pb-c.h"
#include "kubelet/internal.h"
#include "util/cleanup.h"
#include "util/strutil.h"

#define KL_REGISTER_PATH "/v1beta1.Registration/Register"
/* A real kubelet connects back to us before it answers: leave it time for that. */
#define KL_REGISTER_DEADLINE_S 10

struct kubelet_reg {
	struct kubelet_tag tag;
	grpc_channel *ch;
	grpc_call *call;
	grpc_metadata_array init_md;
	grpc_metadata_array trailing_md;
	grpc_byte_buffer *req;
	grpc_byte_buffer *resp;
	grpc_status_code status;
	grpc_slice details;
};

static void reg_free(struct kubelet_reg *reg)
{
	if (!reg)
		return;
	if (reg->call)
		grpc_call_unref(reg->call);
	if (reg->ch)
		grpc_channel_destroy(reg->ch);
	grpc_metadata_array_destroy(&reg->init_md);
	grpc_metadata_array_destroy(&reg->trailing_md);
	if (reg->req)
		grpc_byte_buffer_destroy(reg->req);
	if (reg->resp)
		grpc_byte_buffer_destroy(reg->resp);
	grpc_slice_unref(reg->details);
	free(reg);
}

/* Schedule the next Register attempt in ms (0: none); the watch thread sleeps towards it. */
static void timer_arm_locked(struct kubelet_server *srv, unsigned ms)
{
	srv->retry_at = ms ? kubelet_now_ms() + ms : 0;
	if (ms)
		kubelet_hub_wake(srv->k);
}

/* Arm the Register retry after a failed attempt, doubling the back-off; returns the delay. */
static unsigned retry_later_locked(struct kubelet_server *srv)
{
	unsigned delay = srv->retry_ms;

	srv->retry_ms = srv->retry_ms * 2 > KL_RETRY_MAX_MS ? KL_RETRY_MAX_MS : srv->retry_ms * 2;
	timer_arm_locked(srv, delay);
	return delay;
}

static void reg_done(struct kubelet_server *srv, struct kubelet_tag *tag, bool ok)
{
	struct kubelet_reg *reg = kubelet_container_of(tag, struct kubelet_reg, tag);
	bool current, success = ok && reg->status == GRPC_STATUS_OK;
	unsigned delay = 0;
	_cleanup_free_ char *details = grpc_slice_to_c_string(reg->details);

	pthread_mutex_lock(&srv->lock);
	current = srv->reg == reg;
	if (current)
		srv->reg = NULL;
	if (success) {
		__atomic_add_fetch(&srv->registrations, 1, __ATOMIC_RELAXED);
		srv->retry_ms = KL_RETRY_FIRST_MS;
	} else if (current && !srv->stopping) {
		delay = retry_later_locked(srv);
	}
	pthread_mutex_unlock(&srv->lock);

	if (success)
		kubelet_logf(srv, 2, "registered %s with the kubelet (endpoint %s)",
			     srv->resource_name, srv->socket_name);
	else if (delay)
		kubelet_logf(srv, 1, "Register %s: status %d: %s; retrying in %u ms",
			     srv->resource_name, reg->status, details ? details : "", delay);
	else
		kubelet_logf(srv, 3, "Register %s: attempt superseded", srv->resource_name);
	reg_free(reg);
}

static grpc_byte_buffer *register_request_message(struct kubelet_server *srv)
{
	V1beta1__RegisterRequest rq = V1BETA1__REGISTER_REQUEST__INIT;
	V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
	grpc_slice s;
	grpc_byte_buffer *bb;

	o.pre_start_required = srv->prestart_required;
	o.get_preferred_allocation_available = srv->preferred_allocation;
	rq.version = KL_API_VERSION;
	rq.endpoint = srv->socket_name; /* relative to the device-plugins folder */
	rq.resource_name = srv->resource_name;
	rq.options = &o;
	s = grpc_slice_malloc(protobuf_c_message_get_packed_size(&rq.base));
	protobuf_c_message_pack(&rq.base, GRPC_SLICE_START_PTR(s));
	bb = grpc_raw_byte_buffer_create(&s, 1);
	grpc_slice_unref(s);
	return bb;
}

/* A channel over a connection we make ourselves. gRPC's own client channel (resolver,
 * subchannel, reconnect back-off) kept the connection of a Register attempt open after the
 * channel was destroyed when the attempt was cancelled or the kubelet went away mid-connect:
 * a socket leaked now and then across kubelet restarts. A channel made from an fd has no
 * subchannel and no reconnection: destroying it closes the transport and the fd with it.
 * -ECONNREFUSED / -ENOENT: nobody listens on kubelet.sock (a stale file, a kubelet restarting). */
static int kubelet_channel(struct kubelet_server *srv, grpc_channel **ret)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	grpc_arg args[] = {
		{ .type = GRPC_ARG_INTEGER, .key = GRPC_ARG_ENABLE_RETRIES, .value.integer = 0 },
		{ .type = GRPC_ARG_INTEGER, .key = GRPC_ARG_ENABLE_CHANNELZ, .value.integer = 0 },
		{ .type = GRPC_ARG_INTEGER, .key = GRPC_ARG_HTTP2_BDP_PROBE, .value.integer = 0 },
	};
	grpc_channel_args ca = { .num_args = ELEMENTSOF(args), .args = args };
	int fd;

	/* checked at kubelet_new() */
	if (str_copy(sun.sun_path, sizeof(sun.sun_path), srv->k->kubelet_sock) < 0)
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
	/* gRPC owns fd from here. */
	*ret = grpc_channel_create_from_fd("localhost", fd, srv->k->chan_creds, &ca);
	return *ret ? 0 : -ENOMEM;
}

static int reg_new(struct kubelet_server *srv, struct kubelet_reg **ret)
{
	struct kubelet_reg *reg = calloc(1, sizeof(*reg));
	int r;
	gpr_timespec deadline =
		gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
			     gpr_time_from_seconds(KL_REGISTER_DEADLINE_S, GPR_TIMESPAN));

	if (!reg)
		return -ENOMEM;
	reg->tag.done = reg_done;
	reg->details = grpc_empty_slice();
	grpc_metadata_array_init(&reg->init_md);
	grpc_metadata_array_init(&reg->trailing_md);
	r = kubelet_channel(srv, &reg->ch);
	if (r < 0) {
		reg_free(reg);
		return r;
	}
	reg->call = grpc_channel_create_call(reg->ch, NULL, GRPC_PROPAGATE_DEFAULTS, srv->k->cq,
					     grpc_slice_from_static_string(KL_REGISTER_PATH), NULL,
					     deadline, NULL);
	reg->req = register_request_message(srv);
	if (!reg->call || !reg->req) {
		reg_free(reg);
		return -ENOMEM;
	}
	*ret = reg;
	return 0;
}

void kubelet_register_cancel_locked(struct kubelet_server *srv)
{
	if (!srv->reg)
		return;
	grpc_call_cancel(srv->reg->call, NULL);
	srv->reg = NULL; /* reg_done() frees it */
}

void kubelet_register_request(struct kubelet_server *srv)
{
	struct kubelet_reg *reg = NULL;
	grpc_op ops[6] = { 0 };
	grpc_call_error e;
	int r;

	if (!srv->registering) /* listening only: the caller registers once its files are written */
		return;
	if (access(srv->k->kubelet_sock, F_OK) < 0) {
		/* The watch thread registers when the kubelet creates it (IN_CREATE). */
		pthread_mutex_lock(&srv->lock);
		timer_arm_locked(srv, 0);
		pthread_mutex_unlock(&srv->lock);
		kubelet_logf(srv, 2, "waiting for %s", srv->k->kubelet_sock);
		return;
	}
	r = reg_new(srv, &reg);
	if (r < 0) {
		unsigned delay = 0;

		/* kubelet.sock exists but nobody answers: a stale file, or a kubelet between its
		 * unlink() and listen(). Try again with the same back-off as a refused Register. */
		pthread_mutex_lock(&srv->lock);
		if (!srv->stopping) {
			kubelet_register_cancel_locked(srv);
			delay = retry_later_locked(srv);
		}
		pthread_mutex_unlock(&srv->lock);
		if (delay)
			kubelet_logf(srv, 1, "Register %s: %s: %s; retrying in %u ms",
				     srv->resource_name, srv->k->kubelet_sock, strerror(-r), delay);
		return;
	}
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = reg->req;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &reg->init_md;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &reg->resp;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &reg->trailing_md;
	ops[5].data.recv_status_on_client.status = &reg->status;
	ops[5].data.recv_status_on_client.status_details = &reg->details;

	pthread_mutex_lock(&srv->lock);
	if (srv->stopping) {
		pthread_mutex_unlock(&srv->lock);
		reg_free(reg);
		return;
	}
	kubelet_register_cancel_locked(srv);
	timer_arm_locked(srv, 0);
	e = kubelet_start_batch_locked(srv, reg->call, ops, ELEMENTSOF(ops), &reg->tag);
	if (e == GRPC_CALL_OK)
		srv->reg = reg;
	pthread_mutex_unlock(&srv->lock);
	if (e != GRPC_CALL_OK) {
		kubelet_logf(srv, 0, "Register %s: %s", srv->resource_name,
			     grpc_call_error_to_string(e));
		reg_free(reg);
	}
}
