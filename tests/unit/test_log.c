/* SPDX-License-Identifier: Apache-2.0 */
/* src/log: the one logger. Levels filter, a line is never longer than LOG_LINE_MAX and says
 * how much it cut, control characters and bad UTF-8 stay inside one escaped line, JSON lines
 * parse (jansson), a FIFO or a directory is refused as a log file without hanging, and
 * log_*_errno returns -abs(err) with %m naming err. Lines are read back through a pipe that
 * stands for stderr (log_set_console_fd). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "log/log.h"
#include "util/fileio.h"

static int pipefd[2] = { -1, -1 };
static char dir[64];

static int setup(void **st)
{
	if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	log_set_console_fd(pipefd[1]);
	log_set_program("test");
	log_set_time(false);
	log_set_format(LOG_FORMAT_TEXT);
	log_set_max_level(LOG_LEVEL_INFO);
	strcpy(dir, "/tmp/rdmak-log.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **st)
{
	char cmd[128];

	log_close_file();
	log_set_console_fd(-1);
	close(pipefd[0]);
	close(pipefd[1]);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Everything logged since the last call, NUL-terminated (static). */
static const char *drain(void)
{
	static char buf[1 << 16];
	ssize_t n = read(pipefd[0], buf, sizeof(buf) - 1);

	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static size_t count_lines(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void test_levels(void **st)
{
	log_set_max_level(LOG_LEVEL_WARNING);
	log_error("e %d", 1);
	log_warning("w");
	log_info("dropped");
	log_debug("dropped");
	assert_string_equal(drain(), "test: error: e 1\ntest: warning: w\n");
	log_set_max_level(LOG_LEVEL_DEBUG);
	log_debug("d");
	assert_string_equal(drain(), "test: debug: d\n");
	log_set_max_level(LOG_LEVEL_INFO);
	log_debug("dropped");
	assert_string_equal(drain(), "");

	log_set_time(true);
	log_info("stamped");
	{
		const char *l = drain();
		int y, mo, d, h, mi, s, ms, k = 0;

		assert_int_equal(sscanf(l, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ %n", &y, &mo, &d, &h, &mi,
					&s, &ms, &k),
				 7);
		assert_string_equal(l + k, "test info: stamped\n");
	}
	log_set_time(false);
}

static void test_level_names(void **st)
{
	static const struct {
		const char *s;
		enum log_level l;
	} ok[] = { { "error", LOG_LEVEL_ERROR },  { "PANIC", LOG_LEVEL_ERROR },
		   { "warn", LOG_LEVEL_WARNING }, { "Warning", LOG_LEVEL_WARNING },
		   { "info", LOG_LEVEL_INFO },	  { "debug", LOG_LEVEL_DEBUG },
		   { "verbose", LOG_LEVEL_DEBUG } };
	enum log_level l = LOG_LEVEL_INFO;
	enum log_format f = LOG_FORMAT_TEXT;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(log_level_from_string(ok[i].s, &l), 0);
		assert_int_equal(l, ok[i].l);
	}
	assert_int_equal(log_level_from_string("notice", &l), -EINVAL);
	assert_int_equal(log_level_from_string(NULL, &l), -EINVAL);
	assert_int_equal(l, LOG_LEVEL_DEBUG); /* untouched on failure */
	assert_string_equal(log_level_to_string(LOG_LEVEL_WARNING), "warning");
	assert_int_equal(log_format_from_string("json", &f), 0);
	assert_int_equal(f, LOG_FORMAT_JSON);
	assert_int_equal(log_format_from_string("JSON", &f), -EINVAL);

	setenv("RDMAK_LOG_FORMAT", "yaml", 1);
	assert_int_equal(log_parse_environment(), -EINVAL);
	log_info("still text");
	assert_string_equal(drain(), "test: info: still text\n");
	setenv("RDMAK_LOG_FORMAT", "json", 1);
	assert_int_equal(log_parse_environment(), 0);
	log_info("x");
	{
		json_t *o = json_loads(drain(), 0, NULL);

		assert_non_null(o);
		json_decref(o);
	}
	log_set_format(LOG_FORMAT_TEXT);
	unsetenv("RDMAK_LOG_FORMAT");
}

static void test_errno(void **st)
{
	errno = EAGAIN;
	assert_int_equal(log_error_errno(-ENOENT, "open %s: %m", "x"), -ENOENT);
	assert_int_equal(errno, EAGAIN); /* preserved */
	assert_string_equal(drain(), "test: error: open x: No such file or directory\n");
	assert_int_equal(log_warning_errno(EACCES, "positive"), -EACCES);
	assert_int_equal(log_debug_errno(-EIO, "below the level, still returned"), -EIO);
	assert_int_equal(log_info_errno(0, "zero"), 0);
	assert_string_equal(drain(), "test: warning: positive\ntest: info: zero\n");
}

/* The cut count: how many bytes of the message a line left out. */
static size_t cut_of(const char *line)
{
	const char *m = strstr(line, "\xe2\x80\xa6[cut ");
	size_t n = 0;

	assert_non_null(m);
	assert_int_equal(sscanf(m, "\xe2\x80\xa6[cut %zu bytes]", &n), 1);
	return n;
}

static void test_bound(void **st)
{
	static char big[100 * 1024 + 1];
	const char *l;
	size_t len, kept;

	memset(big, 'a', sizeof(big) - 1);
	log_info("%s", big);
	l = drain();
	len = strlen(l);
	assert_int_equal(count_lines(l), 1);
	assert_true(len <= LOG_LINE_MAX);
	assert_true(len > LOG_LINE_MAX - 64); /* cut near the bound, not far below it */
	assert_true(strncmp(l, "test: info: aaaa", 16) == 0);
	assert_string_equal(strstr(l, " bytes]\n"), " bytes]\n");
	kept = (size_t)(strstr(l, "\xe2\x80\xa6") - l) - strlen("test: info: ");
	assert_int_equal(kept + cut_of(l), sizeof(big) - 1);

	/* just fitting is not cut: the longest message that fits ends the line as it is */
	memset(big, 'b', LOG_LINE_MAX - strlen("test: info: ") - 1);
	big[LOG_LINE_MAX - strlen("test: info: ") - 1] = '\0';
	log_info("%s", big);
	l = drain();
	assert_int_equal(strlen(l), LOG_LINE_MAX);
	assert_null(strstr(l, "[cut"));
	big[strlen(big)] = 'b';
	big[LOG_LINE_MAX - strlen("test: info: ")] = '\0';
	log_info("%s", big);
	l = drain();
	assert_true(strlen(l) <= LOG_LINE_MAX);
	assert_non_null(strstr(l, "[cut"));

	/* escapes are not split: a message of newlines cuts between two "\n" */
	memset(big, '\n', 3000);
	big[3000] = '\0';
	log_info("%s", big);
	l = drain();
	assert_int_equal(count_lines(l), 1);
	assert_true(strlen(l) <= LOG_LINE_MAX);
	kept = (size_t)(strstr(l, "\xe2\x80\xa6") - l) - strlen("test: info: ");
	assert_int_equal(kept % 2, 0);
	assert_int_equal(kept / 2 + cut_of(l), 3000);
}

static void test_escape(void **st)
{
	log_info("a\nb\tc\rd\x01"
		 "e\x7f"
		 "f\\g \xc3\xa9 \xff \xe2\x82");
	assert_string_equal(drain(),
			    "test: info: a\\nb\\tc\\rd\\x01e\\x7ff\\g \xc3\xa9 \\xff \\xe2\\x82\n");
}

static void test_json(void **st)
{
	static char big[20000];
	const char *msgs[] = { "plain", "q\"uote \\ back\nnew\ttab \x01 \xc3\xa9 bad \xff\xfe end",
			       big };
	json_error_t jerr;

	memset(big, '"', sizeof(big) - 1);
	log_set_format(LOG_FORMAT_JSON);
	log_set_program("webhook \"x\"");
	for (size_t i = 0; i < 3; i++) {
		json_t *o, *msg;
		const char *l;

		log_warning("%s", msgs[i]);
		l = drain();
		assert_int_equal(count_lines(l), 1);
		assert_true(strlen(l) <= LOG_LINE_MAX);
		o = json_loads(l, JSON_REJECT_DUPLICATES, &jerr);
		if (!o)
			fail_msg("not JSON (%s): %s", jerr.text, l);
		assert_int_equal(json_object_size(o), 5);
		assert_string_equal(json_string_value(json_object_get(o, "level")), "warning");
		assert_string_equal(json_string_value(json_object_get(o, "program")),
				    "webhook \"x\"");
		assert_int_equal(json_integer_value(json_object_get(o, "pid")), getpid());
		assert_int_equal(strlen(json_string_value(json_object_get(o, "time"))),
				 strlen("2026-01-02T03:04:05.678Z"));
		msg = json_object_get(o, "msg");
		if (i == 0)
			assert_string_equal(json_string_value(msg), "plain");
		else if (i == 1)
			assert_string_equal(json_string_value(msg),
					    "q\"uote \\ back\nnew\ttab \x01 "
					    "\xc3\xa9 bad "
					    "\xef\xbf\xbd\xef\xbf\xbd end");
		else
			assert_int_equal(strspn(json_string_value(msg), "\"") +
						 cut_of(json_string_value(msg)),
					 sizeof(big) - 1);
		json_decref(o);
	}
	log_set_format(LOG_FORMAT_TEXT);
	log_set_program("test");
}

static char *slurp(const char *path)
{
	char *buf = NULL;

	assert_int_equal(fileio_read_at(AT_FDCWD, path, 1 << 20, &buf, NULL), 0);
	return buf;
}

static void test_file(void **st)
{
	char path[128], fifo[128], *text;
	struct log_saved saved;
	int pid = 0, k = 0;

	snprintf(path, sizeof(path), "%s/a.log", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* without a reader the open would wait forever; with O_NONBLOCK it is refused at once */
	assert_int_equal(log_open_file(fifo), -FILEIO_ENOTREG);
	{
		/* a reader present: the open succeeds, the type check refuses */
		int rd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

		assert_true(rd >= 0);
		assert_int_equal(log_open_file(fifo), -FILEIO_ENOTREG);
		close(rd);
	}
	assert_int_equal(log_open_file(dir), -EISDIR);
	assert_int_equal(log_open_file("/dev/null"), -FILEIO_ENOTREG);

	assert_int_equal(log_open_file(path), 0);
	log_info("to both");
	assert_string_equal(drain(), "test: info: to both\n");
	text = slurp(path);
	assert_int_equal(sscanf(text, "%*4d-%*2d-%*2dT%*2d:%*2d:%*2d.%*3dZ [%d] %n", &pid, &k), 1);
	assert_int_equal(pid, getpid());
	assert_string_equal(text + k, "test: info: to both\n");
	free(text);
	/* the file's descriptor is blocking again: a full disk is an error, not EAGAIN */
	assert_int_equal(log_open_file(path), 0);

	/* a plugin run in this process: its own name, file and level, then ours back */
	log_set_max_level(LOG_LEVEL_DEBUG);
	log_push(&saved);
	assert_string_equal(log_get_program(), "rdmak");
	assert_int_equal(log_get_max_level(), LOG_LEVEL_INFO);
	log_set_program("inner");
	snprintf(path, sizeof(path), "%s/b.log", dir);
	assert_int_equal(log_open_file(path), 0);
	log_info("inner line");
	log_pop(&saved);
	log_debug("outer again");
	assert_string_equal(drain(), "inner: info: inner line\ntest: debug: outer again\n");
	text = slurp(path);
	assert_non_null(strstr(text, "inner: info: inner line\n"));
	assert_null(strstr(text, "outer"));
	free(text);
	snprintf(path, sizeof(path), "%s/a.log", dir);
	text = slurp(path);
	assert_non_null(strstr(text, "test: debug: outer again\n"));
	assert_null(strstr(text, "inner"));
	free(text);
	log_set_max_level(LOG_LEVEL_INFO);
	log_close_file();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_levels), cmocka_unit_test(test_level_names),
		cmocka_unit_test(test_errno),  cmocka_unit_test(test_bound),
		cmocka_unit_test(test_escape), cmocka_unit_test(test_json),
		cmocka_unit_test(test_file),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
