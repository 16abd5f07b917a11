/* SPDX-License-Identifier: Apache-2.0 */
/* The one daemon loop of the long-running roles (plugin, webhook, the exporter to come):
 * signals through a signalfd (SIGTERM, SIGINT, SIGQUIT stop; SIGHUP reloads; SIGPIPE is
 * swallowed), inotify on the folders of the files a role reads (a ConfigMap or Secret volume
 * swaps its ..data symlink and never writes the file that was opened, so the folder is watched
 * and an event naming the file or ..data counts), a periodic check every second as well (an
 * inotify watch can be missing or overflow), extra fds (a builder thread's eventfd) and a tick
 * whose period the role may change at every call (the plugin's health interval).
 *
 * The role keeps its running config when a new one is refused: reload() decides, the loop only
 * says when and why. daemon_refusal helps it say each refusal once rather than every second.
 *
 * Create the loop before any thread starts: it blocks its signals in the calling thread, and
 * threads started afterwards inherit the mask, so that only the signalfd sees them. */
#ifndef RDMAK_DAEMON_DAEMON_H
#define RDMAK_DAEMON_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum daemon_reload_reason {
	DAEMON_RELOAD_SIGNAL,	/* SIGHUP */
	DAEMON_RELOAD_CHANGED,	/* a watched file (or its folder's ..data) changed */
	DAEMON_RELOAD_PERIODIC, /* the check every second */
};

struct daemon_ops {
	/* May be NULL (nothing to reload). */
	void (*reload)(void *ud, enum daemon_reload_reason why);
	/* Called once per wake-up of the loop, whatever woke it; returns the most milliseconds
	 * until it wants to be called again (< 0: no tick of its own, the periodic check's second).
	 * May be NULL. */
	int (*tick)(void *ud);
};

struct daemon_loop;

/* Blocks SIGHUP, SIGTERM, SIGINT, SIGQUIT and SIGPIPE in this thread and opens their
 * signalfd. -errno. */
int daemon_loop_new(const struct daemon_ops *ops, void *ud, struct daemon_loop **ret);
void daemon_loop_free(struct daemon_loop *l);

/* The folder to watch for path's changes (a ConfigMap update swaps the ..data symlink of the
 * folder and never writes the file itself): "/" for "/x", "." for a bare name. malloc'd; NULL
 * when out of memory. */
char *daemon_config_dir(const char *path);
/* Watch the folder of path for changes to path's file name or to ..data (on an inotify
 * instance opened at the first call). -errno (the periodic check still notices changes; the
 * caller says so). */
int daemon_loop_watch(struct daemon_loop *l, const char *path);
/* From any thread: a watched file changed, seen by the role through another inotify instance
 * (the plugin's kubelet transport has one; fs.inotify.max_user_instances is 128 per user,
 * shared with the kubelet and containerd, so a role does not open a second one). */
void daemon_loop_notify_changed(struct daemon_loop *l);
/* Call fn(ud) when fd is readable (fn reads it). -ENOMEM. */
int daemon_loop_add_fd(struct daemon_loop *l, int fd, void (*fn)(void *ud), void *ud);

/* Touch path (created mode 0644 if missing) now and at every pass of the loop, at least once a
 * second: a liveness probe (`rdmak probe FILE`) sees from its age that the loop still turns.
 * Opened O_NOFOLLOW and refused unless a regular file (-ELOOP, -FILEIO_ENOTREG): the folder may
 * be shared with other containers of the pod. -errno. */
int daemon_loop_alive_file(struct daemon_loop *l, const char *path);
/* 0 when path (a daemon_loop_alive_file) was touched at most max_age_ms ago, -ESTALE when
 * longer, -errno when it cannot be looked at (-ENOENT: the daemon has not started its loop).
 * *ret_age_ms (may be NULL): the age, written when the file was found. */
int daemon_alive_check(const char *path, int64_t max_age_ms, int64_t *ret_age_ms);

/* Run until a stopping signal: its number (> 0), or -errno when poll failed. */
int daemon_loop_run(struct daemon_loop *l);
/* Wait up to timeout_ms for a stopping signal, before the loop runs (waiting for something the
 * role needs): its number, 0 when none came (a SIGHUP meanwhile is dropped: the config is read
 * when the loop starts), -errno. */
int daemon_loop_wait_stop(struct daemon_loop *l, int timeout_ms);

/* The loop of a role that works in rounds (the doctor's checks, fabric gc, vf apply): round(ud)
 * at once, then every interval_s seconds, and at once after a change of one of watch[] (each
 * watched as daemon_loop_watch; one that cannot be is looked at by the interval only), until a
 * stopping signal: its number. alive_file (may be NULL) as daemon_loop_alive_file. -errno when
 * the loop cannot start; *ret_what (may be NULL) then names what failed ("the loop",
 * "--alive-file"). A failed round is the round's to say; the next comes at the interval. */
int daemon_run_rounds(unsigned interval_s, const char *alive_file, char *const *watch,
		      size_t n_watch, void (*round)(void *ud), void *ud, const char **ret_what);

/* "SIGHUP", "file changed", "periodic check". */
const char *daemon_reload_reason_to_string(enum daemon_reload_reason why);

/* The last refusal said, so that a file re-read every second is refused in one log line. */
struct daemon_refusal {
	char msg[512];
	char *text; /* the content refused; NULL when not compared or unreadable */
};
/* True when msg (and text, when given) differ from the last refusal; remembers them either
 * way (text is copied). */
bool daemon_refusal_is_new(struct daemon_refusal *r, const char *msg, const char *text);
/* A config was accepted: the next refusal is new again. */
void daemon_refusal_clear(struct daemon_refusal *r);

/* daemon_config_load() flags: what kind of file is taken. */
enum {
	/* Only a regular file (a symbolic link to one, as a ConfigMap's): opened O_NONBLOCK and
	 * anything else refused by name before any read, -FILEIO_ENOTREG or -EISDIR. For what a
	 * role that keeps running reads: a FIFO would block its open until a writer came, and a
	 * pipe has nothing left to read at the next reload. Without it a pipe or FIFO is read to
	 * its end (`--config <(...)`), which only a command that reads the file once can use. */
	DAEMON_CONFIG_REGULAR = 1 << 0,
};

/* A role's config file, read as every daemon reads it: at most max bytes, of the kind flags
 * say, parsed by parse (which writes "<json path>: <why>" to err and its result to ret). On
 * failure err says "<path>: <why>" ("larger than 4 MiB" for a file over max; for a file that
 * DAEMON_CONFIG_REGULAR refuses, also what a running role takes and once_commands (NULL: none),
 * the role's commands that read the file once and so take a pipe). *ret_text (when not NULL)
 * gets the file's text whenever it was read, refused or not, so that a refusal can be said once
 * per content (daemon_refusal_is_new). 0, -EINVAL (refused), -ENOMEM, or the read's -errno. */
int daemon_config_load(const char *path, size_t max, unsigned flags, const char *once_commands,
		       int (*parse)(const char *buf, size_t len, void *ret, char *err,
				    size_t errlen),
		       void *ret, char **ret_text, char *err, size_t errlen);

#endif
