/* SPDX-License-Identifier: Apache-2.0 */
/* src/daemon: the one daemon loop, driven the way a ConfigMap volume changes a config (a new
 * ..2026_x folder, a ..data symlink renamed over the old one, config a symlink through ..data),
 * with signals raised at itself and a pipe as the role's extra fd. The role's half (keep the
 * running config when the new one is refused, say each refusal once) is played by a config
 * holder here, through daemon_refusal. Nothing waits on a clock: each step starts the next. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon/daemon.h"
#include "util/fileio.h"

static char dir[64];

struct role {
	char running[64]; /* the running config */
	struct daemon_refusal refusal;
	unsigned said; /* refusals logged */
	int state;
	unsigned changed, signalled, periodic, ticks, fd_reads;
	int pipe_rd;
};

static int setup(void **st)
{
	strcpy(dir, "/tmp/rdmak-daemon.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **st)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Write content as the kubelet updates a ConfigMap volume: a new timestamped folder, then
 * ..data renamed over to point at it. */
static void swap(const char *content)
{
	static int gen;
	char d[128], f[160], tmp[128], data[128], target[32];

	snprintf(target, sizeof(target), "..gen_%d", ++gen);
	snprintf(d, sizeof(d), "%s/%s", dir, target);
	snprintf(f, sizeof(f), "%s/config", d);
	snprintf(tmp, sizeof(tmp), "%s/..data_tmp", dir);
	snprintf(data, sizeof(data), "%s/..data", dir);
	assert_int_equal(mkdir(d, 0755), 0);
	assert_int_equal(fileio_write_atomic_at(AT_FDCWD, f, content, strlen(content), 0644), 0);
	assert_int_equal(symlink(target, tmp), 0);
	assert_int_equal(rename(tmp, data), 0);
}

static void on_reload(void *ud, enum daemon_reload_reason why)
{
	struct role *r = ud;
	char path[128], *text = NULL;

	r->changed += why == DAEMON_RELOAD_CHANGED;
	r->signalled += why == DAEMON_RELOAD_SIGNAL;
	r->periodic += why == DAEMON_RELOAD_PERIODIC;
	snprintf(path, sizeof(path), "%s/config", dir);
	assert_int_equal(fileio_read_at(AT_FDCWD, path, 4096, &text, NULL), 0);
	if (strncmp(text, "ok", 2) != 0) {
		if (daemon_refusal_is_new(&r->refusal, "not ok", text))
			r->said++;
	} else {
		daemon_refusal_clear(&r->refusal);
		snprintf(r->running, sizeof(r->running), "%s", text);
	}
	free(text);
	/* the script: each step is started by the event the one before waits for */
	if (r->state == 0 && why == DAEMON_RELOAD_CHANGED) {
		assert_string_equal(r->running, "ok 1"); /* "bad" refused, the running one kept */
		r->state = 1;
		raise(SIGHUP);
	} else if (r->state == 1 && why == DAEMON_RELOAD_SIGNAL) {
		r->state = 2;
		swap("ok 2");
	} else if (r->state == 2 && why == DAEMON_RELOAD_CHANGED && !strcmp(r->running, "ok 2")) {
		r->state = 3;
		raise(SIGTERM);
	}
}

static int on_tick(void *ud)
{
	struct role *r = ud;

	r->ticks++;
	return 5;
}

static void on_fd(void *ud)
{
	struct role *r = ud;
	char c;

	while (read(r->pipe_rd, &c, 1) == 1)
		r->fd_reads++;
}

static const struct daemon_ops ops = { .reload = on_reload, .tick = on_tick };

static void test_loop(void **st)
{
	struct role r = { .running = "ok 1" };
	/* a guard, not a timing: a lost event would otherwise wait forever */
	alarm(30);
	struct daemon_loop *l = NULL;
	char path[128], link[128];
	int p[2];

	swap("ok 1");
	snprintf(path, sizeof(path), "%s/config", dir);
	snprintf(link, sizeof(link), "..data/config");
	assert_int_equal(symlink(link, path), 0);
	assert_int_equal(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	r.pipe_rd = p[0];

	assert_int_equal(daemon_loop_new(&ops, &r, &l), 0);
	assert_int_equal(daemon_loop_watch(l, path), 0);
	assert_int_equal(daemon_loop_add_fd(l, p[0], on_fd, &r), 0);

	/* before the loop runs: a SIGHUP is dropped, a SIGINT is a stop */
	raise(SIGHUP);
	assert_int_equal(daemon_loop_wait_stop(l, 0), 0);
	raise(SIGPIPE);
	assert_int_equal(daemon_loop_wait_stop(l, 0), 0);
	raise(SIGINT);
	assert_int_equal(daemon_loop_wait_stop(l, 0), SIGINT);
	assert_int_equal(r.signalled, 0);

	assert_int_equal(write(p[1], "xy", 2), 2);
	swap("bad");
	assert_int_equal(daemon_loop_run(l), SIGTERM);
	alarm(0);
	assert_int_equal(r.state, 3);
	assert_string_equal(r.running, "ok 2");
	/* "bad" was read at the change, at the SIGHUP and maybe by the periodic check: said once */
	assert_int_equal(r.said, 1);
	assert_true(r.changed >= 2);
	assert_int_equal(r.signalled, 1);
	assert_int_equal(r.fd_reads, 2);
	assert_true(r.ticks >= 3);
	daemon_loop_free(l);
	daemon_refusal_clear(&r.refusal);
	close(p[0]);
	close(p[1]);
}

static void stop_on_change(void *ud, enum daemon_reload_reason why)
{
	if (why == DAEMON_RELOAD_CHANGED) {
		++*(unsigned *)ud;
		raise(SIGTERM);
	}
}

/* A role that watches through another inotify instance (the plugin's kubelet transport) says
 * so from its own thread; the loop then opens none. */
static void *notify_main(void *l)
{
	daemon_loop_notify_changed(l);
	return NULL;
}

static void test_notify(void **st)
{
	static const struct daemon_ops ops2 = { .reload = stop_on_change };
	struct daemon_loop *l = NULL;
	unsigned changed = 0;
	pthread_t t;

	alarm(30);
	assert_int_equal(daemon_loop_new(&ops2, &changed, &l), 0);
	assert_int_equal(pthread_create(&t, NULL, notify_main, l), 0);
	assert_int_equal(daemon_loop_run(l), SIGTERM);
	alarm(0);
	pthread_join(t, NULL);
	assert_int_equal(changed, 1);
	daemon_loop_free(l);
}

static void test_refusal(void **st)
{
	struct daemon_refusal r = { 0 };

	assert_true(daemon_refusal_is_new(&r, "bad key", NULL));
	assert_false(daemon_refusal_is_new(&r, "bad key", NULL));
	assert_true(daemon_refusal_is_new(&r, "bad key", "text 1")); /* now readable */
	assert_false(daemon_refusal_is_new(&r, "bad key", "text 1"));
	assert_true(
		daemon_refusal_is_new(&r, "bad key", "text 2")); /* another content, same words */
	assert_true(daemon_refusal_is_new(&r, "other", "text 2"));
	daemon_refusal_clear(&r);
	assert_true(
		daemon_refusal_is_new(&r, "other", "text 2")); /* accepted meanwhile: new again */
	daemon_refusal_clear(&r);
	assert_string_equal(daemon_reload_reason_to_string(DAEMON_RELOAD_SIGNAL), "SIGHUP");
	assert_string_equal(daemon_reload_reason_to_string(DAEMON_RELOAD_CHANGED), "file changed");
	assert_string_equal(daemon_reload_reason_to_string(DAEMON_RELOAD_PERIODIC),
			    "periodic check");
}

/* The liveness file: made and touched by the loop, refused through a link or as a FIFO (its
 * folder may be shared with another container), and judged by its age. */
static void test_alive_file(void **st)
{
	static const struct daemon_ops none = { 0 };
	struct daemon_loop *l = NULL;
	char tmp[] = "/tmp/rdmak-alive-XXXXXX", f[64], link[64], fifo[64];
	struct timespec old[2] = { { .tv_sec = 1000 }, { .tv_sec = 1000 } };
	int64_t age = -1;

	(void)st;
	assert_non_null(mkdtemp(tmp));
	snprintf(f, sizeof(f), "%s/alive", tmp);
	snprintf(link, sizeof(link), "%s/link", tmp);
	snprintf(fifo, sizeof(fifo), "%s/fifo", tmp);
	assert_int_equal(daemon_alive_check(f, 5000, &age), -ENOENT);
	assert_int_equal(daemon_loop_new(&none, NULL, &l), 0);
	assert_int_equal(daemon_loop_alive_file(l, f), 0);
	assert_int_equal(daemon_alive_check(f, 5000, &age), 0);
	assert_true(age >= 0 && age < 5000);
	/* a stuck loop: the file ages */
	assert_int_equal(utimensat(AT_FDCWD, f, old, 0), 0);
	assert_int_equal(daemon_alive_check(f, 5000, &age), -ESTALE);
	assert_true(age > 5000);
	assert_int_equal(symlink(f, link), 0);
	assert_int_equal(daemon_loop_alive_file(l, link), -ELOOP);
	assert_int_equal(daemon_alive_check(link, 5000, NULL), -FILEIO_ENOTREG);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(daemon_loop_alive_file(l, fifo), -FILEIO_ENOTREG);
	daemon_loop_free(l);
	unlink(f);
	unlink(link);
	unlink(fifo);
	rmdir(tmp);
}

static void test_config_dir(void **st)
{
	static const char *const cases[][2] = {
		{ "/etc/rdmak/plugin.json", "/etc/rdmak" },
		{ "/plugin.json", "/" },
		{ "plugin.json", "." },
		{ "conf/plugin.json", "conf" },
		{ "/etc/rdmak/", "/etc/rdmak" },
	};

	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *d = daemon_config_dir(cases[i][0]);

		assert_non_null(d);
		if (strcmp(d, cases[i][1]))
			fail_msg("daemon_config_dir(\"%s\") = \"%s\", want \"%s\"", cases[i][0], d,
				 cases[i][1]);
		free(d);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loop),	   cmocka_unit_test(test_notify),
		cmocka_unit_test(test_refusal),	   cmocka_unit_test(test_alive_file),
		cmocka_unit_test(test_config_dir),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
