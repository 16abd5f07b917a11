/* SPDX-License-Identifier: Apache-2.0 */
/* The logger (log.h says what a line looks like and why it is written the way it is). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "log/log.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strutil.h"

/* the room kept for "…[cut N bytes]" at the end of a cut message */
#define CUT_RESERVE 32

static struct {
	char program[LOG_PROGRAM_MAX];
	int fd;		/* the log file, or -1 */
	int console_fd; /* -1: stderr */
	enum log_level level;
	enum log_format format;
	bool time;
} st = { .program = "rdmak", .fd = -1, .console_fd = -1, .level = LOG_LEVEL_INFO };

static const char *const level_names[] = { "error", "warning", "info", "debug" };

void log_set_program(const char *name)
{
	snprintf(st.program, sizeof(st.program), "%s", name ? name : "rdmak");
}

const char *log_get_program(void)
{
	return st.program;
}

void log_set_max_level(enum log_level level)
{
	st.level = level;
}

enum log_level log_get_max_level(void)
{
	return st.level;
}

void log_set_time(bool on)
{
	st.time = on;
}

void log_set_format(enum log_format format)
{
	st.format = format;
}

void log_set_console_fd(int fd)
{
	st.console_fd = fd;
}

int log_level_from_string(const char *s, enum log_level *ret)
{
	static const struct {
		const char *name;
		enum log_level level;
	} names[] = {
		{ "error", LOG_LEVEL_ERROR },	  { "panic", LOG_LEVEL_ERROR },
		{ "warning", LOG_LEVEL_WARNING }, { "warn", LOG_LEVEL_WARNING },
		{ "info", LOG_LEVEL_INFO },	  { "debug", LOG_LEVEL_DEBUG },
		{ "verbose", LOG_LEVEL_DEBUG },
	};

	for (size_t i = 0; s && i < ELEMENTSOF(names); i++)
		if (strcasecmp(s, names[i].name) == 0) {
			*ret = names[i].level;
			return 0;
		}
	return -EINVAL;
}

const char *log_level_to_string(enum log_level level)
{
	return (unsigned)level < ELEMENTSOF(level_names) ? level_names[level] : "unknown";
}

int log_format_from_string(const char *s, enum log_format *ret)
{
	if (s && !strcmp(s, "text"))
		*ret = LOG_FORMAT_TEXT;
	else if (s && !strcmp(s, "json"))
		*ret = LOG_FORMAT_JSON;
	else
		return -EINVAL;
	return 0;
}

int log_parse_environment(void)
{
	const char *s = getenv("RDMAK_LOG_FORMAT");
	enum log_format f;

	if (!s || !*s)
		return 0;
	if (log_format_from_string(s, &f) < 0)
		return -EINVAL;
	st.format = f;
	return 0;
}

int log_open_file(const char *path)
{
	/* O_NONBLOCK: opening a FIFO without a reader would wait for one forever */
	_cleanup_close_ int fd =
		open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0640);
	int r, flags;

	if (fd < 0)
		return errno == ENXIO ? -FILEIO_ENOTREG
				      : -errno; /* ENXIO: a FIFO or socket nobody reads */
	r = fileio_check_regular(fd);
	if (r < 0)
		return r;
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
		return -errno;
	log_close_file();
	st.fd = TAKE_FD(fd);
	return 0;
}

void log_close_file(void)
{
	if (st.fd >= 0)
		close(st.fd);
	st.fd = -1;
}

void log_push(struct log_saved *saved)
{
	memcpy(saved->program, st.program, sizeof(saved->program));
	saved->fd = st.fd;
	saved->level = st.level;
	log_set_program(NULL);
	st.fd = -1;
	st.level = LOG_LEVEL_INFO;
}

void log_pop(const struct log_saved *saved)
{
	log_close_file();
	memcpy(st.program, saved->program, sizeof(st.program));
	st.fd = saved->fd;
	st.level = saved->level;
}

/* ---- building a line ------------------------------------------------------------------ */

/* Copy src[0..len) to dst (room for cap bytes) escaped for text or a JSON string, never
 * splitting an escape or a UTF-8 sequence. Returns the bytes written; *consumed the bytes of
 * src they stand for. */
static size_t escape(char *dst, size_t cap, const char *src, size_t len, bool json,
		     size_t *consumed)
{
	size_t o = 0, i = 0;

	while (i < len) {
		const unsigned char c = (unsigned char)src[i];
		char e[8];
		const char *piece = e;
		size_t pl, step = 1;

		if (c >= 0x80) {
			step = str_utf8_seq_len((const unsigned char *)src + i, len - i);
			if (step) {
				piece = src + i;
				pl = step;
			} else {
				step = 1;
				pl = json ? (size_t)snprintf(e, sizeof(e), "\\ufffd")
					  : (size_t)snprintf(e, sizeof(e), "\\x%02x", c);
			}
		} else if (c == '\n' || c == '\t' || c == '\r') {
			pl = (size_t)snprintf(e, sizeof(e), "\\%c",
					      c == '\n'	  ? 'n'
					      : c == '\t' ? 't'
							  : 'r');
		} else if (c < 0x20 || c == 0x7f) {
			pl = json ? (size_t)snprintf(e, sizeof(e), "\\u%04x", c)
				  : (size_t)snprintf(e, sizeof(e), "\\x%02x", c);
		} else if (json && (c == '"' || c == '\\')) {
			pl = (size_t)snprintf(e, sizeof(e), "\\%c", c);
		} else {
			piece = src + i;
			pl = 1;
		}
		if (o + pl > cap)
			break;
		memcpy(dst + o, piece, pl);
		o += pl;
		i += step;
	}
	*consumed = i;
	return o;
}

struct line {
	char buf[LOG_LINE_MAX];
	size_t n;
};

__attribute__((format(printf, 2, 3))) static void put(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(l->buf + l->n, sizeof(l->buf) - l->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		l->n += (size_t)k < sizeof(l->buf) - l->n ? (size_t)k : sizeof(l->buf) - l->n - 1;
}

/* The message, escaped, then "…[cut N bytes]" when it did not fit; total is the message's
 * whole length (have, the bytes in msg, may be fewer: vsnprintf's buffer was full). */
static void put_msg(struct line *l, const char *msg, size_t have, size_t total, bool json,
		    size_t tail)
{
	size_t room = sizeof(l->buf) - l->n - 1 - tail, used;
	size_t k = escape(l->buf + l->n, room, msg, have, json, &used);

	if (used == total) {
		l->n += k;
		return;
	}
	k = escape(l->buf + l->n, room - CUT_RESERVE, msg, have, json, &used);
	l->n += k;
	put(l, "\xe2\x80\xa6[cut %zu bytes]", total - used);
}

static void build(struct line *l, enum log_level level, bool file, const struct timespec *ts,
		  const char *msg, size_t have, size_t total)
{
	char stamp[STR_UTC_LEN];
	size_t used;

	str_utc(ts->tv_sec, stamp);
	l->n = 0;
	if (st.format == LOG_FORMAT_JSON) {
		put(l, "{\"time\":\"%.19s.%03ldZ\",\"level\":\"%s\",\"program\":\"", stamp,
		    ts->tv_nsec / 1000000, level_names[level]);
		l->n += escape(l->buf + l->n, LOG_PROGRAM_MAX * 2, st.program, strlen(st.program),
			       true, &used);
		put(l, "\",\"pid\":%d,\"msg\":\"", (int)getpid());
		put_msg(l, msg, have, total, true, 2);
		put(l, "\"}");
	} else if (file) {
		put(l, "%.19s.%03ldZ [%d] %s: %s: ", stamp, ts->tv_nsec / 1000000, (int)getpid(),
		    st.program, level_names[level]);
		put_msg(l, msg, have, total, false, 0);
	} else if (st.time) {
		put(l, "%.19s.%03ldZ %s %s: ", stamp, ts->tv_nsec / 1000000, st.program,
		    level_names[level]);
		put_msg(l, msg, have, total, false, 0);
	} else {
		put(l, "%s: %s: ", st.program, level_names[level]);
		put_msg(l, msg, have, total, false, 0);
	}
	l->buf[l->n++] = '\n';
}

int log_full_errnov(enum log_level level, int err, const char *fmt, va_list ap)
{
	char msg[LOG_LINE_MAX];
	struct timespec ts;
	struct line l;
	int saved = errno, m;
	size_t have;

	err = err < 0 ? -err : err;
	if ((unsigned)level > LOG_LEVEL_DEBUG)
		level = LOG_LEVEL_DEBUG;
	if (level > st.level)
		goto out;
	if (err)
		errno = err; /* for %m */
	m = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (m < 0)
		m = snprintf(msg, sizeof(msg), "(unprintable message: %s)", fmt);
	have = (size_t)m < sizeof(msg) ? (size_t)m : sizeof(msg) - 1;
	clock_gettime(CLOCK_REALTIME, &ts);
	build(&l, level, false, &ts, msg, have, (size_t)m);
	(void)fileio_write_all(st.console_fd >= 0 ? st.console_fd : STDERR_FILENO, l.buf, l.n);
	if (st.fd >= 0) {
		build(&l, level, true, &ts, msg, have, (size_t)m);
		(void)fileio_write_all(st.fd, l.buf, l.n);
	}
out:
	errno = saved;
	return -err;
}

int log_full_errno(enum log_level level, int err, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = log_full_errnov(level, err, fmt, ap);
	va_end(ap);
	return r;
}
