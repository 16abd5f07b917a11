/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet transport's hub and lifecycle: one per process, shared by every served resource.
 *
 * - One inotify instance watches <kubelet_dir>/device-plugins (and the caller's folders, such
 *   as the plugin's config folder): fs.inotify.max_user_instances is 128 per user, shared with
 *   the kubelet and containerd, and one instance per resource ran out at the 127th.
 * - One watch thread polls an epoll set over that instance, a wake eventfd and every server's
 *   listening socket; Register retries are deadlines it sleeps towards.
 * - One completion queue drained by one thread: every gRPC batch of every server (served
 *   calls, ListAndWatch sends, the Register client call, server shutdown) completes there, so
 *   the plugin's callbacks run one at a time; GetPreferredAllocation alone is answered on a
 *   worker thread, so that Allocate never waits for it. gRPC's poller (epoll1) is process-wide: with a
 *   thread per server, the thread that polled a request had to wake the server's own thread
 *   (an eventfd write and two futex calls per Allocate); with one thread nothing is handed on.
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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <grpc/grpc_posix.h>
#include <grpc/support/log.h>

#include "kubelet/internal.h"
#include "util/cleanup.h"
#include "util/strutil.h"
#include "util/strv.h"

#define KL_LISTEN_BACKLOG 16
/* epoll keys below the first server id */
#define KL_KEY_WAKE	   1
#define KL_KEY_INOTIFY	   2
#define KL_FIRST_SERVER_ID 16

/* A folder of the caller's watched on the hub's inotify instance. */
struct kubelet_dir_watch {
	int wd;
	void (*fn)(void *ud);
	void *ud;
	bool fired;
	struct kubelet_dir_watch *next;
};

/* gRPC core logs through one process-wide hook with no user data. Route it to the oldest live
 * sink's log callback (a hub's, or the DRA transport's; debug level, warnings for gRPC errors)
 * so that the library never writes to stderr on its own. */
static pthread_mutex_t grpc_log_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kubelet_log_sink *live_sinks; /* oldest first */

static void grpc_log_forward(gpr_log_func_args *args)
{
	pthread_mutex_lock(&grpc_log_lock);
	if (live_sinks && live_sinks->log) {
		char buf[512];

		snprintf(buf, sizeof(buf), "grpc: %s", args->message);
		live_sinks->log(args->severity == GPR_LOG_SEVERITY_ERROR ? 1 : 3, buf,
				live_sinks->ud);
	}
	pthread_mutex_unlock(&grpc_log_lock);
}

void kubelet_log_sink_add(struct kubelet_log_sink *s)
{
	struct kubelet_log_sink **pp;

	pthread_mutex_lock(&grpc_log_lock);
	if (!live_sinks) {
		if (!getenv("GRPC_VERBOSITY")) /* an operator debugging gRPC keeps the level asked for */
			gpr_set_log_verbosity(GPR_LOG_SEVERITY_ERROR);
		gpr_set_log_function(
			grpc_log_forward); /* stays installed; drops lines while no sink lives */
	}
	s->next = NULL;
	for (pp = &live_sinks; *pp; pp = &(*pp)->next)
		;
	*pp = s;
	pthread_mutex_unlock(&grpc_log_lock);
}

void kubelet_log_sink_remove(struct kubelet_log_sink *s)
{
	pthread_mutex_lock(&grpc_log_lock);
	for (struct kubelet_log_sink **pp = &live_sinks; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	pthread_mutex_unlock(&grpc_log_lock);
}

__attribute__((format(printf, 4, 0))) static void vlog(kubelet_log_fn log, void *ud, int level,
						       const char *fmt, va_list ap)
{
	char buf[512];

	if (!log)
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	log(level, buf, ud);
}

void kubelet_logf(struct kubelet_server *srv, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(srv->log, srv->log_ud, level, fmt, ap);
	va_end(ap);
}

void kubelet_hub_logf(struct kubelet *k, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(k->log, k->log_ud, level, fmt, ap);
	va_end(ap);
}

int64_t kubelet_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void kubelet_hub_wake(struct kubelet *k)
{
	uint64_t one = 1;

	/* an eventfd write fails only when the counter would overflow: it is already readable */
	if (write(k->wake_fd, &one, sizeof(one)) < 0)
		return;
}

grpc_call_error kubelet_start_batch_locked(struct kubelet_server *srv, grpc_call *call,
					   const grpc_op *ops, size_t n, struct kubelet_tag *tag)
{
	grpc_call_error e;

	tag->srv = srv;
	e = grpc_call_start_batch(call, ops, n, tag, NULL);
	if (e == GRPC_CALL_OK)
		srv->pending++;
	return e;
}

void kubelet_container_alloc_clear(struct kubelet_container_alloc *a)
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
	*a = (struct kubelet_container_alloc){ 0 };
}

/* --- defaults for the optional callbacks -------------------------------------------- */

static int default_allocate(void *ud, const char *const *ids, size_t n,
			    struct kubelet_container_alloc *out, char **msg)
{
	return -EOPNOTSUPP;
}

struct id_pos {
	const char *id;
	size_t pos;
};

static int id_pos_cmp(const void *a, const void *b)
{
	const struct id_pos *x = a, *y = b;
	int c = strcmp(x->id, y->id);

	return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* first[i]: v[i] is the first of its value in v. Sorted copies instead of a search per id:
 * the kubelet may offer 100000 ids. */
static void first_occurrences(const char *const *v, size_t n, bool *first, struct id_pos *sorted)
{
	for (size_t i = 0; i < n; i++)
		sorted[i] = (struct id_pos){ v[i], i };
	qsort(sorted, n, sizeof(*sorted), id_pos_cmp);
	for (size_t i = 0; i < n; i++)
		first[sorted[i].pos] = i == 0 || strcmp(sorted[i - 1].id, sorted[i].id) != 0;
}

static bool sorted_has(const struct id_pos *v, size_t n, const char *id)
{
	struct id_pos key = { id, 0 };
	size_t lo = 0, hi = n;

	/* the lowest position of id, if any: binary search on (id, pos) with pos 0 */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (id_pos_cmp(&v[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && strcmp(v[lo].id, id) == 0;
}

/* must_include first (each once), then the first available ones not chosen yet, up to size. */
static int default_preferred(void *ud, const char *const *available, size_t n_available,
			     const char *const *must_include, size_t n_must, size_t size,
			     char ***out, size_t *n_out)
{
	size_t cap = size > n_must ? size : n_must, n = 0;
	_cleanup_free_ struct id_pos *must_sorted = calloc(n_must + 1, sizeof(*must_sorted));
	_cleanup_free_ struct id_pos *avail_sorted = calloc(n_available + 1, sizeof(*avail_sorted));
	_cleanup_free_ bool *must_first = calloc(n_must + 1, sizeof(bool));
	_cleanup_free_ bool *avail_first = calloc(n_available + 1, sizeof(bool));
	char **ids = calloc(cap + 1, sizeof(*ids));

	if (!ids || !must_sorted || !avail_sorted || !must_first || !avail_first) {
		free(ids);
		return -ENOMEM;
	}
	first_occurrences(must_include, n_must, must_first, must_sorted);
	first_occurrences(available, n_available, avail_first, avail_sorted);
	for (size_t i = 0; i < n_must && n < cap; i++)
		if (must_first[i] && !(ids[n++] = strdup(must_include[i])))
			goto oom;
	for (size_t i = 0; i < n_available && n < size; i++)
		if (avail_first[i] && !sorted_has(must_sorted, n_must, available[i]) &&
		    !(ids[n++] = strdup(available[i])))
			goto oom;
	*out = ids;
	*n_out = n;
	return 0;
oom:
	strv_free(ids);
	return -ENOMEM;
}

static int default_prestart(void *ud, const char *const *ids, size_t n)
{
	return 0;
}

/* --- the hub ------------------------------------------------------------------------------ */

static void *watch_thread(void *arg);
static void *cq_thread(void *arg);

void kubelet_work_push(struct kubelet *k, struct kubelet_work *w)
{
	w->next = NULL;
	pthread_mutex_lock(&k->work_lock);
	*k->work_tail = w;
	k->work_tail = &w->next;
	pthread_cond_signal(&k->work_cond);
	pthread_mutex_unlock(&k->work_lock);
}

/* Once every server is gone, so that the queue is empty. */
static void worker_stop(struct kubelet *k)
{
	pthread_mutex_lock(&k->work_lock);
	k->work_stop = true;
	pthread_cond_signal(&k->work_cond);
	pthread_mutex_unlock(&k->work_lock);
	pthread_join(k->worker_thread, NULL);
}

static void *worker_thread(void *arg)
{
	struct kubelet *k = arg;

	for (;;) {
		struct kubelet_work *w;

		pthread_mutex_lock(&k->work_lock);
		while (!k->work_head && !k->work_stop)
			pthread_cond_wait(&k->work_cond, &k->work_lock);
		w = k->work_head;
		if (w) {
			k->work_head = w->next;
			if (!k->work_head)
				k->work_tail = &k->work_head;
		}
		pthread_mutex_unlock(&k->work_lock);
		if (!w)
			break; /* stopping, queue empty: every server waited for its jobs */
		w->run(w);
	}
	return NULL;
}

static int epoll_add(struct kubelet *k, int fd, uint64_t key)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = key };

	return epoll_ctl(k->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int kubelet_new(const char *kubelet_dir, kubelet_log_fn log, void *log_ud, struct kubelet **ret)
{
	const char *kdir = kubelet_dir ? kubelet_dir : "/var/lib/kubelet";
	struct sockaddr_un sun;
	struct kubelet *k;
	int r;

	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->epoll_fd = k->inotify_fd = k->wake_fd = k->plugin_wd = -1;
	k->next_id = KL_FIRST_SERVER_ID;
	k->log = log;
	k->log_ud = log_ud;
	pthread_mutex_init(&k->lock, NULL);
	pthread_mutex_init(&k->work_lock, NULL);
	pthread_cond_init(&k->work_cond, NULL);
	k->work_tail = &k->work_head;
	if (asprintf(&k->plugin_dir, "%s/device-plugins", kdir) < 0)
		k->plugin_dir = NULL;
	if (asprintf(&k->kubelet_sock, "%s/device-plugins/" KL_KUBELET_SOCK, kdir) < 0)
		k->kubelet_sock = NULL;
	if (!k->plugin_dir || !k->kubelet_sock) {
		kubelet_free(k);
		return -ENOMEM;
	}
	if (strlen(k->kubelet_sock) >= sizeof(sun.sun_path)) {
		kubelet_free(k);
		return -ENAMETOOLONG;
	}

	k->sink = (struct kubelet_log_sink){ .log = log, .ud = log_ud };
	kubelet_log_sink_add(&k->sink); /* first, so that gRPC's start-up lines are routed too */
	grpc_init();
	k->grpc_up = true;
	k->server_creds = grpc_insecure_server_credentials_create();
	k->chan_creds = grpc_insecure_credentials_create();
	k->cq = grpc_completion_queue_create_for_next(NULL);
	if (!k->server_creds || !k->chan_creds || !k->cq) {
		kubelet_free(k);
		return -ENOMEM;
	}
	k->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	k->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	k->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (k->epoll_fd < 0 || k->wake_fd < 0 || k->inotify_fd < 0) {
		r = -errno;
		kubelet_free(k);
		return r;
	}
	if ((r = epoll_add(k, k->wake_fd, KL_KEY_WAKE)) < 0 ||
	    (r = epoll_add(k, k->inotify_fd, KL_KEY_INOTIFY)) < 0) {
		kubelet_free(k);
		return r;
	}
	r = -pthread_create(&k->cq_thread, NULL, cq_thread, k);
	if (r < 0) {
		kubelet_free(k);
		return r;
	}
	r = -pthread_create(&k->worker_thread, NULL, worker_thread, k);
	if (r < 0) {
		grpc_completion_queue_shutdown(k->cq);
		pthread_join(k->cq_thread, NULL);
		kubelet_free(k);
		return r;
	}
	r = -pthread_create(&k->watch_thread, NULL, watch_thread, k);
	if (r < 0) {
		worker_stop(k);
		grpc_completion_queue_shutdown(k->cq);
		pthread_join(k->cq_thread, NULL);
		kubelet_free(k);
		return r;
	}
	k->threads_up = true;
	*ret = k;
	return 0;
}

int kubelet_watch_dir(struct kubelet *k, const char *dir, void (*fn)(void *ud), void *ud)
{
	struct kubelet_dir_watch *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	/* IN_MASK_ADD: the same folder watched twice keeps both masks under one descriptor */
	w->wd = inotify_add_watch(k->inotify_fd, dir,
				  IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_ATTRIB |
					  IN_ONLYDIR | IN_MASK_ADD);
	if (w->wd < 0) {
		int r = -errno;

		free(w);
		return r;
	}
	w->fn = fn;
	w->ud = ud;
	pthread_mutex_lock(&k->lock);
	w->next = k->watches;
	k->watches = w;
	pthread_mutex_unlock(&k->lock);
	return 0;
}

void kubelet_free(struct kubelet *k)
{
	if (!k)
		return;
	if (k->threads_up) {
		/* Every server is gone (the caller freed them first): nothing is pending on the queue. */
		pthread_mutex_lock(&k->lock);
		k->stopping = true;
		if (k->servers)
			kubelet_hub_logf(k, 0, "kubelet_free() with servers left: %s",
					 k->servers->resource_name);
		pthread_mutex_unlock(&k->lock);
		kubelet_hub_wake(k);
		pthread_join(k->watch_thread, NULL);
		worker_stop(k);
		grpc_completion_queue_shutdown(k->cq);
		pthread_join(k->cq_thread, NULL);
	}
	while (k->watches) {
		struct kubelet_dir_watch *w = k->watches;

		k->watches = w->next;
		free(w);
	}
	closep(&k->epoll_fd);
	closep(&k->inotify_fd);
	closep(&k->wake_fd);
	if (k->grpc_up) {
		if (k->cq)
			grpc_completion_queue_destroy(k->cq);
		if (k->server_creds)
			grpc_server_credentials_release(k->server_creds);
		if (k->chan_creds)
			grpc_channel_credentials_release(k->chan_creds);
		grpc_shutdown();
		kubelet_log_sink_remove(&k->sink);
	}
	pthread_mutex_destroy(&k->lock);
	pthread_mutex_destroy(&k->work_lock);
	pthread_cond_destroy(&k->work_cond);
	free(k->plugin_dir);
	free(k->kubelet_sock);
	free(k);
}

/* --- construction ---------------------------------------------------------------------- */

/* A name that becomes a path component: no '/', not "." or "..", and not the kubelet's own. */
static bool socket_name_valid(const char *name)
{
	return str_is_path_name(name) && strcmp(name, KL_KUBELET_SOCK) != 0 &&
	       strlen(name) < NAME_MAX;
}

int kubelet_server_new(struct kubelet *k, const struct kubelet_server_config *cfg,
		       kubelet_log_fn log, void *log_ud, struct kubelet_server **ret)
{
	struct kubelet_server *srv;
	struct sockaddr_un sun;

	if (!k || !socket_name_valid(cfg->socket_name) || !cfg->resource_name ||
	    !cfg->resource_name[0] || !cfg->ops)
		return -EINVAL;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->k = k;
	srv->listen_fd = -1;
	pthread_mutex_init(&srv->lock, NULL);
	pthread_cond_init(&srv->idle, NULL);
	kubelet_rpc_streams_init(srv);
	if (asprintf(&srv->sock_path, "%s/%s", k->plugin_dir, cfg->socket_name) < 0)
		srv->sock_path = NULL;
	srv->socket_name = strdup(cfg->socket_name);
	srv->resource_name = strdup(cfg->resource_name);
	if (!srv->sock_path || !srv->socket_name || !srv->resource_name) {
		kubelet_server_free(srv);
		return -ENOMEM;
	}
	if (strlen(srv->sock_path) >= sizeof(sun.sun_path)) {
		kubelet_server_free(srv);
		return -ENAMETOOLONG;
	}
	srv->preferred_allocation = cfg->preferred_allocation;
	srv->prestart_required = cfg->prestart_required;
	srv->ops = (struct kubelet_ops){
		.allocate = cfg->ops->allocate ? cfg->ops->allocate : default_allocate,
		.preferred = cfg->ops->preferred ? cfg->ops->preferred : default_preferred,
		.prestart = cfg->ops->prestart ? cfg->ops->prestart : default_prestart,
	};
	srv->ud = cfg->userdata;
	srv->log = log;
	srv->log_ud = log_ud;
	srv->retry_ms = KL_RETRY_FIRST_MS;
	*ret = srv;
	return 0;
}

/* --- our socket ----------------------------------------------------------------------- */

int kubelet_socket_owner(const char *path, pid_t *pid)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	struct ucred cred;
	socklen_t len = sizeof(cred);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (str_copy(sun.sun_path, sizeof(sun.sun_path), path) < 0)
		return -ENAMETOOLONG;
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

int kubelet_socket_live(const char *path, int *pid)
{
	struct sockaddr_un sun;
	pid_t p = 0;
	int r;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	r = kubelet_socket_owner(path, &p);
	if (r > 0)
		*pid = (int)p;
	return r;
}

/* Bind and listen on sock_path (replacing a stale file, never a live one) and put the new
 * socket in the watch thread's set. Caller holds k->lock. */
static int socket_bind(struct kubelet_server *srv)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
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
	if (str_copy(sun.sun_path, sizeof(sun.sun_path), srv->sock_path) < 0)
		return -ENAMETOOLONG;
	/* Never take over a socket that another process serves (a second plugin on this kubelet
	 * folder): each would delete the other's file in turn and register again, for ever. */
	r = kubelet_socket_owner(srv->sock_path, &owner);
	if (r < 0)
		return r;
	if (r > 0) {
		kubelet_logf(srv, 0, "another process (pid %d) is serving %s: not taking it over",
			     (int)owner, srv->sock_path);
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
	if ((r = epoll_add(srv->k, fd, srv->id)) < 0)
		return r;
	srv->sock_dev = st.st_dev;
	srv->sock_ino = st.st_ino;
	if (srv->listen_fd >= 0)
		close(srv->listen_fd); /* which also takes it out of the epoll set */
	srv->listen_fd = TAKE_FD(fd);
	return 0;
}

/* Is the file at sock_path still the socket we bound? */
static bool socket_present(struct kubelet_server *srv)
{
	struct stat st;

	return srv->listen_fd >= 0 && stat(srv->sock_path, &st) == 0 &&
	       st.st_dev == srv->sock_dev && st.st_ino == srv->sock_ino;
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
				kubelet_logf(srv, 0, "accept on %s: %s", srv->sock_path,
					     strerror(errno));
			return;
		}
		kubelet_logf(srv, 3, "connection on %s", srv->socket_name);
		/* gRPC owns fd from here and closes it with the transport. */
		grpc_server_add_channel_from_fd(srv->server, fd, srv->k->server_creds);
	}
}

/* --- the watch thread ------------------------------------------------------------------ */

static struct kubelet_server *server_by_name_locked(struct kubelet *k, const char *name)
{
	for (struct kubelet_server *s = k->servers; s; s = s->next)
		if (strcmp(s->socket_name, name) == 0)
			return s;
	return NULL;
}

static struct kubelet_server *server_by_id_locked(struct kubelet *k, uint64_t id)
{
	for (struct kubelet_server *s = k->servers; s; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

/* After the events of one read: re-create the sockets that went away and register. */
static void kubelet_folder_changed_locked(struct kubelet *k, bool kubelet_new)
{
	for (struct kubelet_server *srv = k->servers; srv; srv = srv->next) {
		bool gone = srv->ev_ours_gone;

		srv->ev_ours_gone = false;
		/* A new kubelet: what the old one refused says nothing about it. A Register the old
		 * one took but never answered (it restarted first) counts as a failure, so a kubelet
		 * restarting over and over had pushed the back-off to its 5 s: one refused first
		 * attempt (connect() between its bind() and listen()) then cost 5 s. */
		if (kubelet_new) {
			pthread_mutex_lock(&srv->lock);
			srv->retry_ms = KL_RETRY_FIRST_MS;
			pthread_mutex_unlock(&srv->lock);
		}
		/* Our own unlink() before bind() shows up here too; only a missing or foreign file
		 * counts: the kubelet deletes every socket in this folder when it restarts. */
		if (gone && !socket_present(srv)) {
			int r = socket_bind(srv);

			if (r < 0) {
				kubelet_logf(srv, 0, "%s was removed and cannot be re-created: %s",
					     srv->sock_path, strerror(-r));
				continue; /* nothing to register: the kubelet would dial a socket that is not ours */
			}
			kubelet_logf(srv, 1, "%s was removed (kubelet restart?): re-created it",
				     srv->sock_path);
			kubelet_register_request(srv);
		} else if (kubelet_new && socket_present(srv)) {
			kubelet_register_request(srv);
		}
	}
}

static void handle_inotify(struct kubelet *k)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool kubelet_new = false, overflow = false, folder = false;

	pthread_mutex_lock(&k->lock);
	for (;;) {
		ssize_t len = read(k->inotify_fd, buf, sizeof(buf));

		if (len < 0) {
			if (errno == EINTR)
				continue;
			break; /* EAGAIN: drained */
		}
		for (char *p = buf; p < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			p += sizeof(*ev) + ev->len;
			if (ev->mask & IN_Q_OVERFLOW) {
				overflow = true;
				continue;
			}
			/* one folder may be both (a config beside the sockets): both hear of it */
			for (struct kubelet_dir_watch *w = k->watches; w; w = w->next)
				w->fired |= w->wd == ev->wd;
			if (ev->wd != k->plugin_wd || k->plugin_wd < 0)
				continue;
			if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
				kubelet_hub_logf(
					k, 0,
					"%s went away; no longer watching for kubelet restarts",
					k->plugin_dir);
				if (ev->mask & IN_IGNORED)
					k->plugin_wd =
						-1; /* the next server started watches again */
				continue;
			}
			if (!ev->len)
				continue;
			folder = true;
			if (ev->mask & (IN_DELETE | IN_MOVED_FROM)) {
				struct kubelet_server *srv = server_by_name_locked(k, ev->name);

				if (srv)
					srv->ev_ours_gone = true;
			} else if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) &&
				   strcmp(ev->name, KL_KUBELET_SOCK) == 0) {
				kubelet_new = true;
			}
		}
	}
	if (overflow) {
		folder = kubelet_new = true;
		for (struct kubelet_server *srv = k->servers; srv; srv = srv->next)
			srv->ev_ours_gone = true;
		for (struct kubelet_dir_watch *w = k->watches; w; w = w->next)
			w->fired = true;
	}
	if (kubelet_new)
		kubelet_hub_logf(k, 2, "%s appeared (kubelet (re)started): registering",
				 k->kubelet_sock);
	if (folder)
		kubelet_folder_changed_locked(k, kubelet_new);
	pthread_mutex_unlock(&k->lock);

	/* The callers' callbacks run without the hub's lock: they may call back into the hub. */
	for (;;) {
		struct kubelet_dir_watch *fired = NULL;

		pthread_mutex_lock(&k->lock);
		for (struct kubelet_dir_watch *w = k->watches; w && !fired; w = w->next)
			if (w->fired) {
				w->fired = false;
				fired = w;
			}
		pthread_mutex_unlock(&k->lock);
		if (!fired)
			break;
		fired->fn(
			fired->ud); /* watches live until kubelet_free(), which joins this thread */
	}
}

/* Register the servers whose retry is due; returns the epoll timeout to the next one. */
static int retries_locked(struct kubelet *k)
{
	int64_t now = kubelet_now_ms(), next = -1;

	for (struct kubelet_server *srv = k->servers; srv; srv = srv->next) {
		int64_t at;

		pthread_mutex_lock(&srv->lock);
		at = srv->retry_at;
		if (at && at <= now)
			srv->retry_at = 0;
		pthread_mutex_unlock(&srv->lock);
		if (at && at <= now)
			kubelet_register_request(srv); /* may schedule the next retry */
	}
	for (struct kubelet_server *srv = k->servers; srv; srv = srv->next) {
		int64_t at;

		pthread_mutex_lock(&srv->lock);
		at = srv->retry_at;
		pthread_mutex_unlock(&srv->lock);
		if (at && (next < 0 || at < next))
			next = at;
	}
	if (next < 0)
		return -1;
	return next <= now ? 0 : (int)(next - now > INT_MAX ? INT_MAX : next - now);
}

static void *watch_thread(void *arg)
{
	struct kubelet *k = arg;
	int timeout = -1;

	for (;;) {
		struct epoll_event ev[32];
		int n = epoll_wait(k->epoll_fd, ev, ELEMENTSOF(ev), timeout);
		bool stop;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			kubelet_hub_logf(k, 0, "epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			uint64_t key = ev[i].data.u64, cnt;

			if (key == KL_KEY_WAKE) {
				if (read(k->wake_fd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
					kubelet_hub_logf(k, 0, "reading the wake eventfd: %s",
							 strerror(errno));
			} else if (key == KL_KEY_INOTIFY) {
				handle_inotify(k);
			} else {
				struct kubelet_server *srv;

				pthread_mutex_lock(&k->lock);
				srv = server_by_id_locked(k, key);
				if (srv && srv->listen_fd >= 0)
					accept_all(srv);
				pthread_mutex_unlock(&k->lock);
			}
		}
		pthread_mutex_lock(&k->lock);
		stop = k->stopping;
		if (!stop)
			timeout = retries_locked(k);
		pthread_mutex_unlock(&k->lock);
		if (stop)
			break;
	}
	return NULL;
}

/* --- the completion-queue thread -------------------------------------------------------- */

static void shutdown_done(struct kubelet_server *srv, struct kubelet_tag *tag, bool ok)
{
}

static void *cq_thread(void *arg)
{
	struct kubelet *k = arg;

	for (;;) {
		grpc_event ev = grpc_completion_queue_next(
			k->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
		struct kubelet_server *srv;
		struct kubelet_tag *tag;

		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type != GRPC_OP_COMPLETE)
			continue;
		tag = ev.tag;
		srv = tag->srv;
		tag->done(srv, tag, ev.success); /* may free the tag */
		pthread_mutex_lock(&srv->lock);
		/* stop() waits for the last one; srv is not touched after this unlock */
		if (--srv->pending == 0 && srv->stopping)
			pthread_cond_broadcast(&srv->idle);
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
		{ .type = GRPC_ARG_INTEGER,
		  .key = GRPC_ARG_MAX_CONCURRENT_STREAMS,
		  .value.integer = 32 },
		{ .type = GRPC_ARG_INTEGER,
		  .key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
		  .value.integer = 4 << 20 },
		{ .type = GRPC_ARG_INTEGER,
		  .key = GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES,
		  .value.integer = 16384 },
		{ .type = GRPC_ARG_INTEGER, .key = GRPC_ARG_HTTP2_BDP_PROBE, .value.integer = 0 },
		{ .type = GRPC_ARG_INTEGER,
		  .key = GRPC_ARG_HTTP2_WRITE_BUFFER_SIZE,
		  .value.integer = 16384 },
		{ .type = GRPC_ARG_INTEGER,
		  .key = GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE,
		  .value.integer = 65536 },
		{ .type = GRPC_ARG_INTEGER, .key = GRPC_ARG_ENABLE_CHANNELZ, .value.integer = 0 },
	};
	grpc_channel_args ca = { .num_args = ELEMENTSOF(args), .args = args };

	return grpc_server_create(&ca, NULL);
}

/* Shut the gRPC server down and wait until every batch of ours has completed on the shared
 * queue; then no callback can run for srv any more. */
static void server_teardown(struct kubelet_server *srv)
{
	pthread_mutex_lock(&srv->lock);
	srv->stopping = true;
	srv->retry_at = 0;
	kubelet_register_cancel_locked(srv);
	if (srv->server) {
		srv->shutdown_tag = (struct kubelet_tag){ .done = shutdown_done, .srv = srv };
		grpc_server_shutdown_and_notify(srv->server, srv->k->cq, &srv->shutdown_tag);
		srv->pending++;
		grpc_server_cancel_all_calls(srv->server);
	}
	while (srv->pending)
		pthread_cond_wait(&srv->idle, &srv->lock);
	pthread_mutex_unlock(&srv->lock);
	if (srv->server)
		grpc_server_destroy(srv->server);
	srv->server = NULL;
}

static void unlist_locked(struct kubelet_server *srv)
{
	for (struct kubelet_server **pp = &srv->k->servers; *pp; pp = &(*pp)->next)
		if (*pp == srv) {
			*pp = srv->next;
			break;
		}
	srv->next = NULL;
}

int kubelet_server_listen(struct kubelet_server *srv)
{
	struct kubelet *k = srv->k;
	int r;

	if (srv->state != KL_NEW)
		return srv->state == KL_STOPPED ? -ESHUTDOWN : 0;
	srv->state = KL_STOPPED; /* unless all goes well */
	srv->server = server_create();
	if (!srv->server)
		return -ENOMEM;
	grpc_server_register_completion_queue(srv->server, k->cq, NULL);
	r = kubelet_rpc_register_methods(srv);
	if (r < 0) {
		server_teardown(srv);
		return r;
	}
	grpc_server_start(srv->server);

	/* Under the hub's lock from the watch to the listing, so that no event about our socket
	 * is handled before we are listed (nor lost in between). */
	pthread_mutex_lock(&k->lock);
	if (k->plugin_wd < 0) {
		/* Watch before binding and before looking for kubelet.sock, so that no event can
		 * fall between the look and the watch. */
		k->plugin_wd = inotify_add_watch(k->inotify_fd, k->plugin_dir,
						 IN_CREATE | IN_DELETE | IN_MOVED_FROM |
							 IN_MOVED_TO | IN_DELETE_SELF |
							 IN_MOVE_SELF | IN_ONLYDIR | IN_MASK_ADD);
		if (k->plugin_wd < 0) {
			r = -errno;
			goto fail;
		}
	}
	srv->id = k->next_id++;
	r = socket_bind(srv);
	if (r < 0)
		goto fail;
	pthread_mutex_lock(&srv->lock);
	r = kubelet_rpc_request_all_locked(srv);
	pthread_mutex_unlock(&srv->lock);
	if (r < 0)
		goto fail;
	srv->next = k->servers;
	k->servers = srv;
	srv->state = KL_RUNNING;
	pthread_mutex_unlock(&k->lock);
	kubelet_logf(srv, 2, "serving %s on %s", srv->resource_name, srv->sock_path);
	return 0;

fail:
	kubelet_logf(srv, 0, "listening on %s: %s", srv->sock_path, strerror(-r));
	socket_remove(srv);
	pthread_mutex_unlock(&k->lock);
	server_teardown(srv);
	return r;
}

int kubelet_server_start(struct kubelet_server *srv)
{
	int r;

	if (srv->registering)
		return -EALREADY;
	r = kubelet_server_listen(srv);
	if (r < 0)
		return r;
	pthread_mutex_lock(&srv->k->lock);
	srv->registering = true;
	kubelet_register_request(srv);
	pthread_mutex_unlock(&srv->k->lock);
	return 0;
}

int kubelet_server_set_devices(struct kubelet_server *srv, const struct kubelet_device *devs,
			       size_t n)
{
	struct kubelet_device *copy = NULL;
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
	r = kubelet_rpc_devices_changed_locked(srv);
	pthread_mutex_unlock(&srv->lock);
	return r;
}

void kubelet_server_stop(struct kubelet_server *srv)
{
	struct kubelet *k;

	if (!srv || srv->state != KL_RUNNING)
		return;
	k = srv->k;
	/* Out of the watch thread's reach first; then remove the socket: from here on no kubelet
	 * can reach us. */
	pthread_mutex_lock(&k->lock);
	unlist_locked(srv);
	socket_remove(srv);
	pthread_mutex_unlock(&k->lock);
	server_teardown(srv);
	srv->state = KL_STOPPED;
	kubelet_logf(srv, 2, "stopped serving %s", srv->resource_name);
}

void kubelet_server_free(struct kubelet_server *srv)
{
	if (!srv)
		return;
	kubelet_server_stop(srv);
	kubelet_stream_set_clear(&srv->streams);
	pthread_cond_destroy(&srv->idle);
	pthread_mutex_destroy(&srv->lock);
	free(srv->devs);
	free(srv->sock_path);
	free(srv->socket_name);
	free(srv->resource_name);
	free(srv);
}

unsigned kubelet_server_registrations(const struct kubelet_server *srv)
{
	return __atomic_load_n(&srv->registrations, __ATOMIC_RELAXED);
}
