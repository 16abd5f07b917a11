/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon loop (daemon.h says what it does for a role). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strv.h"

#define CHECK_MS 1000

struct extra_fd {
	int fd;
	void (*fn)(void *ud);
	void *ud;
};

struct daemon_loop {
	const struct daemon_ops *ops;
	void *ud;
	int sfd, ifd, efd; /* signalfd, inotify (or -1), eventfd (daemon_loop_notify_changed) */
	int alive;	   /* daemon_loop_alive_file's file, or -1 */
	char **names;	   /* the file names watched (and "..data") */
	size_t n_names;
	struct extra_fd *fds;
	size_t n_fds;
};

static void signal_mask(sigset_t *mask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGHUP);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGQUIT);
	sigaddset(mask, SIGPIPE);
}

int daemon_loop_new(const struct daemon_ops *ops, void *ud, struct daemon_loop **ret)
{
	struct daemon_loop *l = calloc(1, sizeof(*l));
	sigset_t mask;
	int r;

	if (!l)
		return -ENOMEM;
	*l = (struct daemon_loop){
		.ops = ops, .ud = ud, .sfd = -1, .ifd = -1, .efd = -1, .alive = -1
	};
	signal_mask(&mask);
	r = -pthread_sigmask(SIG_BLOCK, &mask, NULL);
	if (r == 0 && (l->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
		r = -errno;
	if (r == 0 && (l->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
		r = -errno;
	if (r == 0 && strv_extend(&l->names, &l->n_names, "..data") < 0)
		r = -ENOMEM;
	if (r < 0) {
		daemon_loop_free(l);
		return r;
	}
	*ret = l;
	return 0;
}

void daemon_loop_free(struct daemon_loop *l)
{
	if (!l)
		return;
	if (l->sfd >= 0)
		close(l->sfd);
	if (l->ifd >= 0)
		close(l->ifd);
	if (l->efd >= 0)
		close(l->efd);
	if (l->alive >= 0)
		close(l->alive);
	strv_free(l->names);
	free(l->fds);
	free(l);
}

static bool watched(const struct daemon_loop *l, const char *name)
{
	for (size_t i = 0; i < l->n_names; i++)
		if (!strcmp(l->names[i], name))
			return true;
	return false;
}

char *daemon_config_dir(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	return strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

int daemon_loop_watch(struct daemon_loop *l, const char *path)
{
	_cleanup_free_ char *dir = daemon_config_dir(path);
	const char *base = strrchr(path, '/');

	if (!dir)
		return -ENOMEM;
	base = base ? base + 1 : path;
	if (!watched(l, base) && strv_extend(&l->names, &l->n_names, base) < 0)
		return -ENOMEM;
	if (l->ifd < 0 && (l->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
		return -errno;
	/* IN_ATTRIB: a chmod that makes an unreadable file readable is a change worth a read */
	if (inotify_add_watch(l->ifd, dir,
			      IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_ATTRIB) < 0)
		return -errno;
	return 0;
}

void daemon_loop_notify_changed(struct daemon_loop *l)
{
	uint64_t one = 1;

	if (write(l->efd, &one, sizeof(one)) < 0)
		return; /* the counter is full: the loop has an event to read already */
}

int daemon_loop_add_fd(struct daemon_loop *l, int fd, void (*fn)(void *ud), void *ud)
{
	struct extra_fd *n = realloc(l->fds, (l->n_fds + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	l->fds = n;
	l->fds[l->n_fds++] = (struct extra_fd){ .fd = fd, .fn = fn, .ud = ud };
	return 0;
}

const char *daemon_reload_reason_to_string(enum daemon_reload_reason why)
{
	switch (why) {
	case DAEMON_RELOAD_SIGNAL: return "SIGHUP";
	case DAEMON_RELOAD_CHANGED: return "file changed";
	default: return "periodic check";
	}
}

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Read the pending signals: the stopping one's number, else 0 (SIGHUPs reload when reload). */
static int read_signals(struct daemon_loop *l, bool reload)
{
	struct signalfd_siginfo si;
	int stop = 0;

	while (read(l->sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			if (reload && l->ops->reload)
				l->ops->reload(l->ud, DAEMON_RELOAD_SIGNAL);
		} else if (si.ssi_signo != SIGPIPE && !stop) {
			stop = (int)si.ssi_signo;
		}
	}
	return stop;
}

/* Drain the inotify events: whether one named a watched file or ..data. */
static bool read_changes(struct daemon_loop *l)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool changed = false;
	ssize_t n;

	while ((n = read(l->ifd, buf, sizeof(buf))) > 0)
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			/* an overflowed queue lost events: count it as a change */
			if ((ev->mask & IN_Q_OVERFLOW) || (ev->len && watched(l, ev->name)))
				changed = true;
			p += sizeof(*ev) + ev->len;
		}
	return changed;
}

int daemon_loop_wait_stop(struct daemon_loop *l, int timeout_ms)
{
	struct pollfd pfd = { .fd = l->sfd, .events = POLLIN };
	int r = poll(&pfd, 1, timeout_ms);

	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	return r > 0 ? read_signals(l, false) : 0;
}

int daemon_loop_run(struct daemon_loop *l)
{
	const size_t n = 3 + l->n_fds;
	_cleanup_free_ struct pollfd *pfd = calloc(n, sizeof(*pfd));
	int64_t last_check = now_ms(), next_tick = -1;

	if (!pfd)
		return -ENOMEM;
	pfd[0] = (struct pollfd){ .fd = l->sfd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = l->ifd, .events = POLLIN }; /* poll skips -1 */
	pfd[2] = (struct pollfd){ .fd = l->efd, .events = POLLIN };
	for (size_t i = 0; i < l->n_fds; i++)
		pfd[3 + i] = (struct pollfd){ .fd = l->fds[i].fd, .events = POLLIN };
	for (;;) {
		int64_t now = now_ms(), wait = last_check + CHECK_MS - now;
		bool changed = false;
		int r, stop;

		if (next_tick >= 0 && next_tick - now < wait)
			wait = next_tick - now;
		r = poll(pfd, n, wait < 0 ? 0 : (int)(wait > INT_MAX ? INT_MAX : wait));
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0 && (pfd[0].revents & POLLIN) && (stop = read_signals(l, true)) > 0)
			return stop;
		if (r > 0 && (pfd[1].revents & POLLIN))
			changed = read_changes(l);
		if (r > 0 && (pfd[2].revents & POLLIN)) {
			uint64_t k;

			changed |= read(l->efd, &k, sizeof(k)) == (ssize_t)sizeof(k);
		}
		for (size_t i = 0; r > 0 && i < l->n_fds; i++)
			if (pfd[3 + i].revents & (POLLIN | POLLERR | POLLHUP))
				l->fds[i].fn(l->fds[i].ud);
		if (changed || now_ms() - last_check >= CHECK_MS) {
			last_check = now_ms();
			/* the probe's proof that the loop turns: an error here is the probe's to see */
			if (l->alive >= 0)
				(void)futimens(l->alive, NULL);
			if (l->ops->reload)
				l->ops->reload(l->ud, changed ? DAEMON_RELOAD_CHANGED
							      : DAEMON_RELOAD_PERIODIC);
		}
		if (l->ops->tick) {
			int ms = l->ops->tick(l->ud);

			next_tick = ms < 0 ? -1 : now_ms() + ms;
		}
	}
}

struct rounds {
	unsigned interval_s;
	void (*round)(void *ud);
	void *ud;
	bool due;
	int64_t next_ms;
};

static void rounds_changed(void *ud, enum daemon_reload_reason why)
{
	struct rounds *r = ud;

	if (why != DAEMON_RELOAD_PERIODIC)
		r->due = true;
}

static int rounds_tick(void *ud)
{
	struct rounds *r = ud;

	if (r->due || now_ms() >= r->next_ms) {
		r->due = false;
		r->round(r->ud);
		r->next_ms = now_ms() + (int64_t)r->interval_s * 1000;
	}
	return (int)(r->next_ms - now_ms());
}

int daemon_run_rounds(unsigned interval_s, const char *alive_file, char *const *watch,
		      size_t n_watch, void (*round)(void *ud), void *ud, const char **ret_what)
{
	static const struct daemon_ops ops = { .reload = rounds_changed, .tick = rounds_tick };
	struct rounds rs = { .interval_s = interval_s, .round = round, .ud = ud };
	struct daemon_loop *l = NULL;
	const char *what = "the loop";
	int r;

	r = daemon_loop_new(&ops, &rs, &l);
	if (r == 0 && alive_file && (r = daemon_loop_alive_file(l, alive_file)) < 0)
		what = "--alive-file";
	for (size_t i = 0; r == 0 && i < n_watch; i++)
		(void)daemon_loop_watch(l, watch[i]); /* else the interval still comes */
	if (r == 0)
		r = daemon_loop_run(l);
	daemon_loop_free(l);
	if (r < 0 && ret_what)
		*ret_what = what;
	return r;
}

int daemon_loop_alive_file(struct daemon_loop *l, const char *path)
{
	int fd, r;

	/* a folder shared with a pod (an emptyDir) must not redirect the write through a link */
	fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0644);
	if (fd < 0) /* ENXIO: a FIFO without a reader (or a device without its driver) */
		return errno == ENXIO ? -FILEIO_ENOTREG : -errno;
	r = fileio_check_regular(fd);
	if (r == 0 && futimens(fd, NULL) < 0)
		r = -errno;
	if (r < 0) {
		close(fd);
		return r;
	}
	if (l->alive >= 0)
		close(l->alive);
	l->alive = fd;
	return 0;
}

int daemon_alive_check(const char *path, int64_t max_age_ms, int64_t *ret_age_ms)
{
	struct timespec now;
	struct stat st;
	int64_t age;

	if (lstat(path, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -FILEIO_ENOTREG;
	clock_gettime(CLOCK_REALTIME, &now);
	age = (now.tv_sec - st.st_mtim.tv_sec) * 1000 +
	      (now.tv_nsec - st.st_mtim.tv_nsec) / 1000000;
	if (ret_age_ms)
		*ret_age_ms = age;
	return age > max_age_ms ? -ESTALE : 0;
}

bool daemon_refusal_is_new(struct daemon_refusal *r, const char *msg, const char *text)
{
	bool same = !strcmp(msg, r->msg) && (text ? r->text && !strcmp(text, r->text) : !r->text);

	if (!same) {
		snprintf(r->msg, sizeof(r->msg), "%s", msg);
		free(r->text);
		r->text =
			text ? strdup(text) : NULL; /* NULL on ENOMEM: the next one is said again */
	}
	return !same;
}

void daemon_refusal_clear(struct daemon_refusal *r)
{
	r->msg[0] = '\0';
	free(r->text);
	r->text = NULL;
}

/* what DAEMON_CONFIG_REGULAR's refusal says it takes instead */
static const char what_running_reads[] = "a role that keeps running reads a file (a ConfigMap's); "
					 "a pipe is read only by a command that reads it once";

int daemon_config_load(const char *path, size_t max, unsigned flags, const char *once_commands,
		       int (*parse)(const char *buf, size_t len, void *ret, char *err,
				    size_t errlen),
		       void *ret, char **ret_text, char *err, size_t errlen)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = flags & DAEMON_CONFIG_REGULAR ? fileio_read_regular_at(AT_FDCWD, path, max, &buf, &len)
					  : fileio_read_at(AT_FDCWD, path, max, &buf, &len);
	if (r == -EFBIG)
		snprintf(err, errlen, "%s: larger than %zu %s", path,
			 max % (1u << 20) ? max >> 10 : max >> 20,
			 max % (1u << 20) ? "KiB" : "MiB");
	else if (r == -FILEIO_ENOTREG && (flags & DAEMON_CONFIG_REGULAR))
		snprintf(err, errlen, "%s: %s: %s%s%s%s", path, fileio_strerror(r),
			 what_running_reads, once_commands ? " (" : "",
			 once_commands ? once_commands : "", once_commands ? ")" : "");
	else if (r < 0)
		snprintf(err, errlen, "%s: %s", path, fileio_strerror(r));
	if (r < 0)
		return r;
	r = parse(buf, len, ret, err, errlen);
	if (r < 0) {
		_cleanup_free_ char *msg = strdup(err);

		snprintf(err, errlen, "%s: %s", path, msg ? msg : "invalid");
		r = r == -ENOMEM ? r : -EINVAL;
	}
	if (ret_text)
		*ret_text = TAKE_PTR(buf);
	return r;
}
