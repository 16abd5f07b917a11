/* Log lines for CNI plugins: stdout belongs to the protocol, so lines go to stderr (the
 * runtime keeps it in its own log) and, when the config names one, to a file, because
 * containerd and CRI-O drop a successful plugin's stderr. One write() per line with O_APPEND,
 * so concurrent plugin processes never interleave within a line. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cnispec/cnispec.h"
#include "util/cleanup.h"
#include "util/fileio.h"

#define LOG_STATE_NEW ((struct cnispec_log_state){ .prefix = "cni", .fd = -1, .level = CNISPEC_LOG_INFO })

static struct cnispec_log_state log_state = LOG_STATE_NEW;

static const char *const level_names[] = { "error", "warning", "info", "debug" };

void cnispec_log_setup(const char *prog, const struct cnispec_env *env)
{
	if (env && env->cmd != CNISPEC_CMD_NONE && env->container_id && env->ifname)
		snprintf(log_state.prefix, sizeof(log_state.prefix), "%s %s %.12s/%s", prog, cnispec_cmd_name(env->cmd),
			 env->container_id, env->ifname);
	else if (env && env->cmd != CNISPEC_CMD_NONE)
		snprintf(log_state.prefix, sizeof(log_state.prefix), "%s %s", prog, cnispec_cmd_name(env->cmd));
	else
		snprintf(log_state.prefix, sizeof(log_state.prefix), "%s", prog);
}

int cnispec_log_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);

	if (fd < 0)
		return -errno;
	if (log_state.fd >= 0)
		close(log_state.fd);
	log_state.fd = fd;
	return 0;
}

void cnispec_log_close(void)
{
	if (log_state.fd >= 0)
		close(log_state.fd);
	log_state.fd = -1;
}

void cnispec_log_push(struct cnispec_log_state *saved)
{
	*saved = log_state;
	log_state = LOG_STATE_NEW;
}

void cnispec_log_pop(const struct cnispec_log_state *saved)
{
	cnispec_log_close();
	log_state = *saved;
}

void cnispec_log_set_level(enum cnispec_log_level level)
{
	log_state.level = level;
}

int cnispec_log_level_parse(const char *s, enum cnispec_log_level *ret)
{
	static const struct {
		const char *name;
		enum cnispec_log_level level;
	} names[] = {
		{ "error", CNISPEC_LOG_ERROR }, { "panic", CNISPEC_LOG_ERROR }, { "warning", CNISPEC_LOG_WARNING },
		{ "warn", CNISPEC_LOG_WARNING }, { "info", CNISPEC_LOG_INFO }, { "debug", CNISPEC_LOG_DEBUG },
		{ "verbose", CNISPEC_LOG_DEBUG },
	};

	for (size_t i = 0; s && i < ELEMENTSOF(names); i++)
		if (strcasecmp(s, names[i].name) == 0) {
			*ret = names[i].level;
			return 0;
		}
	return -EINVAL;
}

void cnispec_log(enum cnispec_log_level level, const char *fmt, ...)
{
	char line[4096], stamp[64];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n, m;
	int saved = errno;

	if (level > log_state.level)
		return;
	n = snprintf(line, sizeof(line), "%s: %s: ", log_state.prefix, level_names[level]);
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	n = (size_t)(n + m) >= sizeof(line) - 1 ? (int)sizeof(line) - 2 : n + m;
	line[n++] = '\n';
	(void)fileio_write_all(STDERR_FILENO, line, (size_t)n);
	if (log_state.fd >= 0) {
		char full[4200];
		int k;

		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
		k = snprintf(full, sizeof(full), "%s.%03ldZ [%d] %.*s", stamp, ts.tv_nsec / 1000000, (int)getpid(), n, line);
		if (k > 0)
			(void)fileio_write_all(log_state.fd, full, (size_t)k < sizeof(full) ? (size_t)k : sizeof(full) - 1);
	}
	errno = saved;
}
