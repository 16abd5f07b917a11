/* SPDX-License-Identifier: Apache-2.0 */
/* The one logger of every role, after systemd's src/basic/log.h: levels, one line per event,
 * -errno returned so that `return log_error_errno(r, "...")` is one step.
 *
 * A line is built whole in a buffer of LOG_LINE_MAX bytes and written with one write(2), to
 * stderr and, when one is open, to a log file (O_APPEND): threads (the plugin's transport, the
 * webhook's workers) and concurrent processes (CNI plugins exec'd in parallel) never interleave
 * within a line, and LOG_LINE_MAX is PIPE_BUF, the most a pipe takes in one piece. A message
 * that does not fit is cut and ends with "…[cut N bytes]"; control characters are escaped
 * (\n, \t, \xNN) so that one event stays one line whatever a request carried.
 *
 * Text lines (the default):
 *   stderr, daemons (log_set_time(true)):  2026-01-02T03:04:05.678Z plugin info: msg
 *   stderr, CNI plugins:                   rdmak-cni ADD 0123456789ab/net1: info: msg
 *   the log file:                          2026-01-02T03:04:05.678Z [pid] rdmak-cni ...: info: msg
 * JSON lines (RDMAK_LOG_FORMAT=json, for log collectors), on both targets, one object a line:
 *   {"time":"2026-01-02T03:04:05.678Z","level":"info","program":"plugin","pid":1,"msg":"..."}
 *
 * The state is process-wide, set up by a role's main before its threads start; logging itself
 * may happen from any thread. errno is preserved, and %m works (log_*_errno set errno first). */
#ifndef RDMAK_LOG_LOG_H
#define RDMAK_LOG_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>

#define LOG_LINE_MAX	4096
#define LOG_PROGRAM_MAX 320

/* The numbers are the kubelet transport's and the HTTP server's hook levels (0 to 3). */
enum log_level {
	LOG_LEVEL_ERROR,
	LOG_LEVEL_WARNING,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG,
};

enum log_format {
	LOG_FORMAT_TEXT,
	LOG_FORMAT_JSON,
};

/* The program's name in every line ("plugin", "rdmak-ipam ADD <id>/<if>"); cut to fit. */
void log_set_program(const char *name);
const char *log_get_program(void);
/* Lines above level are dropped; default LOG_LEVEL_INFO. */
void log_set_max_level(enum log_level level);
enum log_level log_get_max_level(void);
/* Whether stderr's text lines start with a timestamp (daemons: yes; CNI plugins, whose stderr
 * the runtime keeps with its own stamps: no, the default). */
void log_set_time(bool on);
void log_set_format(enum log_format format);
/* "error", "warning"/"warn", "info", "debug"; whereabouts' "panic" (error) and "verbose"
 * (debug) too. Case-insensitive. 0 or -EINVAL; *ret written only on success. */
int log_level_from_string(const char *s, enum log_level *ret);
const char *log_level_to_string(enum log_level level);
/* "text" or "json". 0 or -EINVAL. */
int log_format_from_string(const char *s, enum log_format *ret);
/* RDMAK_LOG_FORMAT (text, json): 0, or -EINVAL for another value (the format is left). */
int log_parse_environment(void);

/* Where stderr's lines go instead of fd 2 (tests); -1 puts fd 2 back. Not owned. */
void log_set_console_fd(int fd);

/* Also append every line to path (created 0640), replacing a file opened before. Opened
 * without blocking and refused unless it is a regular file: a FIFO would hang the open (no
 * reader) or every line (a reader that stops). -FILEIO_ENOTREG (util/fileio.h) for a FIFO,
 * device or socket, -EISDIR, or open's -errno. */
int log_open_file(const char *path);
void log_close_file(void);

/* The whole state, for a plugin run in this process (cnispec_delegate_in_process): push saves
 * it and resets the program, the file and the level to a new process's defaults (the format
 * and the timestamps stay); pop closes a file opened meanwhile and puts the saved state back. */
struct log_saved {
	char program[LOG_PROGRAM_MAX];
	int fd;
	enum log_level level;
};
void log_push(struct log_saved *saved);
void log_pop(const struct log_saved *saved);

/* The line; returns -abs(err) (0 when err is 0), errno set to abs(err) for %m meanwhile. */
__attribute__((format(printf, 3, 4))) int log_full_errno(enum log_level level, int err,
							 const char *fmt, ...);
__attribute__((format(printf, 3, 0))) int log_full_errnov(enum log_level level, int err,
							  const char *fmt, va_list ap);

#define log_full(level, ...)	    ((void)log_full_errno((level), 0, __VA_ARGS__))
#define log_error(...)		    log_full(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warning(...)	    log_full(LOG_LEVEL_WARNING, __VA_ARGS__)
#define log_info(...)		    log_full(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...)		    log_full(LOG_LEVEL_DEBUG, __VA_ARGS__)
#define log_error_errno(err, ...)   log_full_errno(LOG_LEVEL_ERROR, (err), __VA_ARGS__)
#define log_warning_errno(err, ...) log_full_errno(LOG_LEVEL_WARNING, (err), __VA_ARGS__)
#define log_info_errno(err, ...)    log_full_errno(LOG_LEVEL_INFO, (err), __VA_ARGS__)
#define log_debug_errno(err, ...)   log_full_errno(LOG_LEVEL_DEBUG, (err), __VA_ARGS__)

#endif
