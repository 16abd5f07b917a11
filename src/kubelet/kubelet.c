/* The kubelet transport's lifecycle: our unix socket, the watch on the device-plugins folder,
 * and the two threads every server runs.
 *
 * - The completion-queue thread drains srv->cq: every gRPC batch (served calls, ListAndWatch
 *   sends, the Register client call, server shutdown) completes there, so the plugin's
 *   callbacks run on it one at a time.
 * - The watch thread polls four fds: inotify on <kubelet_dir>/device-plugins, our listening
 *   socket, a timerfd for Register retries and an eventfd that stop() writes.
 *
 * We accept() connections ourselves and hand each one to gRPC with
 * grpc_server_add_channel_from_fd() instead of letting gRPC own the listener: a kubelet restart
 * then costs one new bind() on the same grpc_server (no server teardown, no lost queued
 * requests), we choose the socket's mode before it exists, and we know the socket's inode, which
 * is how a deletion of *our* file is told apart from the unlink() we do ourselves.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include <grpc/grpc_posix.h>
#include <grpc/support/log.h>

#include "kubelet/internal.h"
#include "util/cleanup.h"

#define KL_LISTEN_BACKLOG 16

/* gRPC core logs through one process-wide hook with no user data. Route it to the oldest live
 * server's log callback (debug level, warnings for gRPC errors) so that the library never
 * writes to stderr on its own. The live servers form a list for that purpose only. */
static pthread_mutex_t grpc_log_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kubelet_server *live_servers; /* oldest first */

static void grpc_log_forward(gpr_log_func_args *args)
{
	pthread_mutex_lock(&grpc_log_lock);
	if (live_servers)
		kl_logf(live_servers, args->severity == GPR_LOG_SEVERITY_ERROR ? 1 : 3, "grpc: %s", args->message);
	pthread_mutex_unlock(&grpc_log_lock);
}

static void live_add(struct kubelet_server *srv)
{
	struct kubelet_server **pp;

	pthread_mutex_lock(&grpc_log_lock);
	if (!live_servers) {
		if (!getenv("GRPC_VERBOSITY")) /* an operator debugging gRPC keeps the level asked for */
			gpr_set_log_verbosity(GPR_LOG_SEVERITY_ERROR);
		gpr_set_log_function(grpc_log_forward); /* stays installed; drops lines while no server lives */
	}
	for (pp = &live_servers; *pp; pp = &(*pp)->next_live)
		;
	*pp = srv;
	pthread_mutex_unlock(&grpc_log_lock);
}

static void live_remove(struct kubelet_server *srv)
{
	pthread_mutex_lock(&grpc_log_lock);
	for (struct kubelet_server **pp = &live_servers; *pp; pp = &(*pp)->next_live)
		if (*pp == srv) {
			*pp = srv->next_live;
			break;
		}
	pthread_mutex_unlock(&grpc_log_lock);
}

void kl_logf(struct kubelet_server *srv, int level, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!srv->log)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	srv->log(level, buf, srv->log_ud);
}

grpc_call_error kl_start_batch_locked(struct kubelet_server *srv, grpc_call *call, const grpc_op *ops,
				      size_t n, struct kl_tag *tag)
{
	grpc_call_error e = grpc_call_start_batch(call, ops, n, tag, NULL);

	if (e == GRPC_CALL_OK)
		srv->pending++;
	return e;
}

void kl_container_alloc_clear(struct kl_container_alloc *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n_envs; i++) {
		free(a->envs[i].key);
		free(a->envs[i].value);
	}
	for (size_t i = 0; i < a->n_mounts; i++) {
		free(a->mounts[i].container_path);
		free(a->mounts[i].host_path);
	}
	for (size_t i = 0; i < a->n_devices; i++) {
		free(a->devices[i].container_path);
		free(a->devices[i].host_path);
	}
	for (size_t i = 0; i < a->n_annotations; i++) {
		free(a->annotations[i].key);
		free(a->annotations[i].value);
	}
	for (size_t i = 0; i < a->n_cdi_devices; i++)
		free(a->cdi_devices[i]);
	free(a->envs);
	free(a->mounts);
	free(a->devices);
	free(a->annotations);
	free(a->cdi_devices);
	*a = (struct kl_container_alloc){0};
}

/* --- defaults for the optional callbacks -------------------------------------------- */

static int default_allocate(void *ud, const char *const *ids, size_t n, struct kl_container_alloc *out, char **msg)
{
	return -EOPNOTSUPP;
}

static bool in_list(const char *id, char **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(id, list[i]) == 0)
			return true;
	return false;
}

/* must_include first, then the first available ones, up to size. */
static int default_preferred(void *ud, const char *const *available, size_t n_available,
			     const char *const *must_include, size_t n_must, size_t size, char ***out, size_t *n_out)
{
	size_t cap = size > n_must ? size : n_must, n = 0;
	char **ids = calloc(cap + 1, sizeof(*ids));

	if (!ids)
		return -ENOMEM;
	for (size_t i = 0; i < n_must && n < cap; i++)
		if (!in_list(must_include[i], ids, n) && !(ids[n++] = strdup(must_include[i])))
			goto oom;
	for (size_t i = 0; i < n_available && n < size; i++)
		if (!in_list(available[i], ids, n) && !(ids[n++] = strdup(available[i])))
			goto oom;
	*out = ids;
	*n_out = n;
	return 0;
oom:
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
	return -ENOMEM;
}

static int default_prestart(void *ud, const char *const *ids, size_t n)
{
	return 0;
}

/* --- construction ---------------------------------------------------------------------- */

/* A name that becomes a path component: no '/', not "." or "..", and not the kubelet's own. */
static bool socket_name_valid(const char *name)
{
	return name && name[0] && !strchr(name, '/') && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
	       strcmp(name, KL_KUBELET_SOCK) != 0 && strlen(name) < NAME_MAX;
}

int kubelet_server_new(const struct kubelet_server_config *cfg, kl_log_fn log, void *log_ud,
		       struct kubelet_server **ret)
{
	const char *kdir = cfg->kubelet_dir ? cfg->kubelet_dir : "/var/lib/kubelet";
	struct kubelet_server *srv;
	struct sockaddr_un sun;

	if (!socket_name_valid(cfg->socket_name) || !cfg->resource_name || !cfg->resource_name[0] || !cfg->ops)
		return -EINVAL;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->listen_fd = srv->inotify_fd = srv->stop_fd = srv->timer_fd = -1;
	pthread_mutex_init(&srv->lock, NULL);
	srv->list_msg = grpc_empty_slice();
	if (asprintf(&srv->plugin_dir, "%s/device-plugins", kdir) < 0)
		srv->plugin_dir = NULL;
	if (asprintf(&srv->sock_path, "%s/device-plugins/%s", kdir, cfg->socket_name) < 0)
		srv->sock_path = NULL;
	if (asprintf(&srv->kubelet_sock, "%s/device-plugins/" KL_KUBELET_SOCK, kdir) < 0)
		srv->kubelet_sock = NULL;
	srv->socket_name = strdup(cfg->socket_name);
	srv->resource_name = strdup(cfg->resource_name);
	if (!srv->plugin_dir || !srv->sock_path || !srv->kubelet_sock || !srv->socket_name || !srv->resource_name) {
		kubelet_server_free(srv);
		return -ENOMEM;
	}
	if (strlen(srv->sock_path) >= sizeof(sun.sun_path) || strlen(srv->kubelet_sock) >= sizeof(sun.sun_path)) {
		kubelet_server_free(srv);
		return -ENAMETOOLONG;
	}
	srv->preferred_allocation = cfg->preferred_allocation;
	srv->prestart_required = cfg->prestart_required;
	srv->ops = (struct kl_ops){
		.allocate = cfg->ops->allocate ? cfg->ops->allocate : default_allocate,
		.preferred = cfg->ops->preferred ? cfg->ops->preferred : default_preferred,
		.prestart = cfg->ops->prestart ? cfg->ops->prestart : default_prestart,
	};
	srv->ud = cfg->userdata;
	srv->log = log;
	srv->log_ud = log_ud;
	srv->retry_ms = KL_RETRY_FIRST_MS;

	live_add(srv); /* first, so that gRPC's start-up lines are routed too */
	grpc_init();
	srv->grpc_up = true;
	srv->server_creds = grpc_insecure_server_credentials_create();
	srv->chan_creds = grpc_insecure_credentials_create();
	if (!srv->server_creds || !srv->chan_creds) {
		kubelet_server_free(srv);
		return -ENOMEM;
	}
	*ret = srv;
	return 0;
}

/* --- our socket ----------------------------------------------------------------------- */

/* Does a live process listen on path? 1 (with its pid, 0 if unknown), 0 when nobody does
 * (no file, or a stale socket left by a process that died), <0 error. */
static int socket_owner(const char *path, pid_t *pid)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -1;
	struct ucred cred;
	socklen_t len = sizeof(cred);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	strcpy(sun.sun_path, path);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		if (errno == ECONNREFUSED || errno == ENOENT || errno == ENOTSOCK)
			return 0;
		if (errno != EAGAIN) /* EAGAIN: its backlog is full, so someone listens */
			return -errno;
	}
	/* the listener's credentials as of its listen() */
	*pid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 ? cred.pid : 0;
	return 1;
}

static int socket_bind(struct kubelet_server *srv)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -1;
	struct stat st;
	pid_t owner = 0;
	int r;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Linux gives the socket file the mode of the socket inode (less the umask) at bind():
	 * set 0600 first, so that the file never exists with a wider mode. */
	if (fchmod(fd, 0600) < 0)
		return -errno;
	strcpy(sun.sun_path, srv->sock_path);
	/* Never take over a socket that another process serves (a second plugin on this kubelet
	 * folder): each would delete the other's file in turn and register again, for ever. */
	r = socket_owner(srv->sock_path, &owner);
	if (r < 0)
		return r;
	if (r > 0) {
		kl_logf(srv, 0, "another process (pid %d) is serving %s: not taking it over", (int)owner, srv->sock_path);
		return -EADDRINUSE;
	}
	if (unlink(srv->sock_path) < 0 && errno != ENOENT) /* a stale socket from an earlier run */
		return -errno;
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
		return -errno;
	if (listen(fd, KL_LISTEN_BACKLOG) < 0)
		return -errno;
	if (stat(srv->sock_path, &st) < 0)
		return -errno;
	srv->sock_dev = st.st_dev;
	srv->sock_ino = st.st_ino;
	if (srv->listen_fd >= 0)
		close(srv->listen_fd);
	srv->listen_fd = TAKE_FD(fd);
	return 0;
}

/* Is the file at sock_path still the socket we bound? */
static bool socket_present(struct kubelet_server *srv)
{
	struct stat st;

	return stat(srv->sock_path, &st) == 0 && st.st_dev == srv->sock_dev && st.st_ino == srv->sock_ino;
}

static void socket_remove(struct kubelet_server *srv)
{
	if (srv->listen_fd < 0)
		return;
	if (socket_present(srv))
		unlink(srv->sock_path);
	close(srv->listen_fd);
	srv->listen_fd = -1;
}

static void accept_all(struct kubelet_server *srv)
{
	for (;;) {
		int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				kl_logf(srv, 0, "accept on %s: %s", srv->sock_path, strerror(errno));
			return;
		}
		kl_logf(srv, 3, "connection on %s", srv->socket_name);
		/* gRPC owns fd from here and closes it with the transport. */
		grpc_server_add_channel_from_fd(srv->server, fd, srv->server_creds);
	}
}

/* --- the watch thread ------------------------------------------------------------------ */

static void handle_inotify(struct kubelet_server *srv)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool check_ours = false, kubelet_new = false;

	for (;;) {
		ssize_t len = read(srv->inotify_fd, buf, sizeof(buf));

		if (len < 0) {
			if (errno == EINTR)
				continue;
			break; /* EAGAIN: drained */
		}
		for (char *p = buf; p < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			p += sizeof(*ev) + ev->len;
			if (ev->mask & IN_Q_OVERFLOW) {
				check_ours = kubelet_new = true;
				continue;
			}
			if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
				kl_logf(srv, 0, "%s went away; no longer watching for kubelet restarts", srv->plugin_dir);
				continue;
			}
			if (!ev->len)
				continue;
			if ((ev->mask & (IN_DELETE | IN_MOVED_FROM)) && strcmp(ev->name, srv->socket_name) == 0)
				check_ours = true;
			else if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) && strcmp(ev->name, KL_KUBELET_SOCK) == 0)
				kubelet_new = true;
		}
	}

	/* Our own unlink() before bind() shows up here too; only a missing or foreign file counts:
	 * the kubelet deletes every socket in this folder when it restarts. */
	if (check_ours && !socket_present(srv)) {
		int r = socket_bind(srv);

		if (r < 0) {
			kl_logf(srv, 0, "%s was removed and cannot be re-created: %s", srv->sock_path, strerror(-r));
			return; /* nothing to register: the kubelet would dial a socket that is not ours */
		}
		kl_logf(srv, 1, "%s was removed (kubelet restart?): re-created it", srv->sock_path);
		kl_register_request(srv);
	} else if (kubelet_new && socket_present(srv)) {
		kl_logf(srv, 2, "%s appeared (kubelet (re)started): registering", srv->kubelet_sock);
		kl_register_request(srv);
	}
}

static void *watch_thread(void *arg)
{
	struct kubelet_server *srv = arg;

	for (;;) {
		struct pollfd pfd[4] = {
			{.fd = srv->stop_fd, .events = POLLIN},
			{.fd = srv->inotify_fd, .events = POLLIN},
			{.fd = srv->timer_fd, .events = POLLIN},
			{.fd = srv->listen_fd, .events = POLLIN},
		};

		if (poll(pfd, ELEMENTSOF(pfd), -1) < 0) {
			if (errno == EINTR)
				continue;
			kl_logf(srv, 0, "poll: %s", strerror(errno));
			break;
		}
		if (pfd[0].revents)
			break;
		if (pfd[1].revents)
			handle_inotify(srv);
		if (pfd[2].revents) {
			uint64_t n;

			if (read(srv->timer_fd, &n, sizeof(n)) == (ssize_t)sizeof(n))
				kl_register_request(srv);
		}
		if (pfd[3].revents)
			accept_all(srv);
	}
	return NULL;
}

/* --- the completion-queue thread -------------------------------------------------------- */

static void shutdown_done(struct kubelet_server *srv, struct kl_tag *tag, bool ok)
{
	pthread_mutex_lock(&srv->lock);
	srv->shutdown_done = true;
	pthread_mutex_unlock(&srv->lock);
}

static void *cq_thread(void *arg)
{
	struct kubelet_server *srv = arg;

	for (;;) {
		grpc_event ev = grpc_completion_queue_next(srv->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
		struct kl_tag *tag;

		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type != GRPC_OP_COMPLETE)
			continue;
		tag = ev.tag;
		tag->done(srv, tag, ev.success);
		pthread_mutex_lock(&srv->lock);
		srv->pending--;
		/* Only once the server has shut down and nothing is in flight can no batch be started on
		 * the queue any more: then it may shut down too. */
		if (srv->stopping && srv->shutdown_done && srv->pending == 0 && !srv->cq_shut) {
			srv->cq_shut = true;
			grpc_completion_queue_shutdown(srv->cq);
		}
		pthread_mutex_unlock(&srv->lock);
	}
	return NULL;
}

/* --- start / stop ----------------------------------------------------------------------- */

static grpc_server *server_create(void)
{
	/* Keep per-connection buffers modest: the only peer is the local kubelet, messages are a
	 * few KiB, and the plugin should idle in a few MiB. */
	grpc_arg args[] = {
		{.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_MAX_CONCURRENT_STREAMS, .value.integer = 32},
		{.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, .value.integer = 4 << 20},
		{.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, .value.integer = 16384},
		{.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_HTTP2_BDP_PROBE, .value.integer = 0},
		{.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_HTTP2_WRITE_BUFFER_SIZE, .value.integer = 16384},
		{.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE, .value.integer = 65536},
		{.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_ENABLE_CHANNELZ, .value.integer = 0},
	};
	grpc_channel_args ca = {.num_args = ELEMENTSOF(args), .args = args};

	return grpc_server_create(&ca, NULL);
}

static int start_fds(struct kubelet_server *srv)
{
	srv->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	srv->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	srv->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (srv->stop_fd < 0 || srv->timer_fd < 0 || srv->inotify_fd < 0)
		return -errno;
	/* Watch before binding and before looking for kubelet.sock, so that no event can fall
	 * between the look and the watch. */
	if (inotify_add_watch(srv->inotify_fd, srv->plugin_dir,
			      IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF |
				      IN_ONLYDIR) < 0)
		return -errno;
	return socket_bind(srv);
}

static void close_fds(struct kubelet_server *srv)
{
	socket_remove(srv);
	closep(&srv->stop_fd);
	closep(&srv->timer_fd);
	closep(&srv->inotify_fd);
	srv->stop_fd = srv->timer_fd = srv->inotify_fd = -1;
}

static void *cq_thread(void *arg);

/* Shut the gRPC server down, let the completion-queue loop drain every tag (on its thread, or
 * on ours when it never started), then destroy the server and the queue. */
static void grpc_teardown(struct kubelet_server *srv, bool cq_thread_running)
{
	pthread_mutex_lock(&srv->lock);
	srv->stopping = true;
	kl_register_cancel_locked(srv);
	if (srv->server) {
		grpc_server_shutdown_and_notify(srv->server, srv->cq, &srv->shutdown_tag);
		srv->pending++;
		grpc_server_cancel_all_calls(srv->server);
	} else {
		srv->shutdown_done = true;
	}
	if (srv->cq && srv->pending == 0 && !srv->cq_shut) {
		srv->cq_shut = true;
		grpc_completion_queue_shutdown(srv->cq);
	}
	pthread_mutex_unlock(&srv->lock);
	if (cq_thread_running)
		pthread_join(srv->cq_thread, NULL);
	else if (srv->cq)
		cq_thread(srv);
	if (srv->server)
		grpc_server_destroy(srv->server);
	if (srv->cq)
		grpc_completion_queue_destroy(srv->cq);
	srv->server = NULL;
	srv->cq = NULL;
}

int kubelet_server_start(struct kubelet_server *srv)
{
	int r;

	if (srv->state != KL_NEW)
		return -EALREADY;
	srv->shutdown_tag.done = shutdown_done;
	srv->cq = grpc_completion_queue_create_for_next(NULL);
	srv->server = server_create();
	if (!srv->cq || !srv->server) {
		r = -ENOMEM;
		goto fail_grpc;
	}
	grpc_server_register_completion_queue(srv->server, srv->cq, NULL);
	r = kl_rpc_register_methods(srv);
	if (r < 0)
		goto fail_grpc;
	grpc_server_start(srv->server);

	r = start_fds(srv);
	if (r < 0) {
		kl_logf(srv, 0, "listening on %s: %s", srv->sock_path, strerror(-r));
		goto fail_fds;
	}
	pthread_mutex_lock(&srv->lock);
	r = kl_rpc_request_all_locked(srv);
	pthread_mutex_unlock(&srv->lock);
	if (r < 0)
		goto fail_fds;
	r = -pthread_create(&srv->cq_thread, NULL, cq_thread, srv);
	if (r < 0)
		goto fail_fds;
	kl_register_request(srv);
	r = -pthread_create(&srv->watch_thread, NULL, watch_thread, srv);
	if (r < 0)
		goto fail_watch;
	srv->state = KL_RUNNING;
	kl_logf(srv, 2, "serving %s on %s", srv->resource_name, srv->sock_path);
	return 0;

fail_watch:
	close_fds(srv);
	grpc_teardown(srv, true);
	srv->state = KL_STOPPED;
	return r;
fail_fds:
	close_fds(srv);
fail_grpc:
	grpc_teardown(srv, false);
	srv->state = KL_STOPPED;
	return r;
}

int kubelet_server_set_devices(struct kubelet_server *srv, const struct kl_device *devs, size_t n)
{
	struct kl_device *copy = NULL;
	int r;

	for (size_t i = 0; i < n; i++)
		if (strnlen(devs[i].id, sizeof(devs[i].id)) == sizeof(devs[i].id) || !devs[i].id[0])
			return -EINVAL;
	if (n) {
		copy = malloc(n * sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		memcpy(copy, devs, n * sizeof(*copy));
	}
	pthread_mutex_lock(&srv->lock);
	free(srv->devs);
	srv->devs = copy;
	srv->n_devs = n;
	srv->dev_gen++;
	r = kl_rpc_devices_changed_locked(srv);
	pthread_mutex_unlock(&srv->lock);
	return r;
}

void kubelet_server_stop(struct kubelet_server *srv)
{
	uint64_t one = 1;

	if (!srv || srv->state != KL_RUNNING)
		return;
	/* From here no callback re-arms the retry timer or starts a batch, so the fds below can
	 * be closed while the completion-queue thread still runs. */
	pthread_mutex_lock(&srv->lock);
	srv->stopping = true;
	pthread_mutex_unlock(&srv->lock);
	if (write(srv->stop_fd, &one, sizeof(one)) < 0)
		kl_logf(srv, 0, "waking the watch thread: %s", strerror(errno));
	pthread_join(srv->watch_thread, NULL);
	/* Remove the socket first: from here on no kubelet can reach us. */
	close_fds(srv);
	grpc_teardown(srv, true);
	srv->state = KL_STOPPED;
	kl_logf(srv, 2, "stopped serving %s", srv->resource_name);
}

void kubelet_server_free(struct kubelet_server *srv)
{
	if (!srv)
		return;
	kubelet_server_stop(srv);
	if (srv->grpc_up) {
		if (srv->server_creds)
			grpc_server_credentials_release(srv->server_creds);
		if (srv->chan_creds)
			grpc_channel_credentials_release(srv->chan_creds);
		grpc_slice_unref(srv->list_msg);
		grpc_shutdown();
		live_remove(srv);
	}
	pthread_mutex_destroy(&srv->lock);
	free(srv->devs);
	free(srv->plugin_dir);
	free(srv->sock_path);
	free(srv->kubelet_sock);
	free(srv->socket_name);
	free(srv->resource_name);
	free(srv);
}

unsigned kubelet_server_registrations(const struct kubelet_server *srv)
{
	return __atomic_load_n(&srv->registrations, __ATOMIC_RELAXED);
}
