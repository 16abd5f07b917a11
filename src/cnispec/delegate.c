/* SPDX-License-Identifier: Apache-2.0 */
/* Delegation (SPEC.md section 4): the delegated plugin gets the same environment and the same
 * stdin; its stderr is ours; its stdout is a result or an error object that we pass on. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cnispec/cnispec.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/spawn.h"

#define OUTPUT_MAX (4u << 20) /* a result is a few KiB; past this it is not one */

int cnispec_find_plugin(const char *cni_path, const char *type, char **ret)
{
	const char *cur = cni_path;

	if (!cnispec_plugin_type_valid(type, NULL))
		return -EINVAL;
	while (cur && *cur) {
		const char *end = strchrnul(cur, ':');
		size_t n = (size_t)(end - cur);

		/* an empty or relative element would search the current directory: skipped */
		if (n > 0 && cur[0] == '/') {
			char *p = NULL;
			struct stat st;

			if (asprintf(&p, "%.*s/%s", (int)n, cur, type) < 0)
				return -ENOMEM;
			if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0) {
				*ret = p;
				return 1;
			}
			free(p);
		}
		cur = *end ? end + 1 : end;
	}
	return 0;
}

int cnispec_plugin_is_self(const char *cni_path, const char *type)
{
	_cleanup_free_ char *path = NULL;
	struct stat a, b;

	if (!cni_path || cnispec_find_plugin(cni_path, type, &path) != 1)
		return 0;
	if (stat(path, &a) < 0 || stat("/proc/self/exe", &b) < 0)
		return 0;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* envp with CNI_COMMAND=cmd in place of the caller's (added when absent). */
static char **env_with_command(char *const *envp, enum cnispec_cmd cmd)
{
	size_t n = 0, j = 0;
	char **v;

	while (envp && envp[n])
		n++;
	v = calloc(n + 2, sizeof(char *));
	if (!v)
		return NULL;
	if (asprintf(&v[j++], "CNI_COMMAND=%s", cnispec_cmd_name(cmd)) < 0) {
		free(v);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		if (strncmp(envp[i], "CNI_COMMAND=", 12) != 0)
			v[j++] = envp[i];
	return v;
}

/* All of fd, at most OUTPUT_MAX bytes: past that the rest is read and dropped, so that the child
 * never blocks on a full pipe, and *truncated says so (*ret then holds nothing). */
static int slurp(int fd, char **ret, size_t *ret_len, bool *truncated)
{
	int r = fileio_read_fd(fd, OUTPUT_MAX, ret, ret_len);
	char drop[4096];
	ssize_t k;

	*truncated = r == -EFBIG;
	if (!*truncated)
		return r;
	while ((k = read(fd, drop, sizeof(drop))) > 0 || (k < 0 && errno == EINTR))
		;
	if (!(*ret = strdup("")))
		return -ENOMEM;
	*ret_len = 0;
	return 0;
}

/* Run path with the request on stdin (spawn_input_memfd) and stdout into *out. */
static int run(const char *path, char **envv, const char *buf, size_t len, char **out,
	       size_t *out_len, bool *truncated, int *status)
{
	_cleanup_close_ int in = spawn_input_memfd(buf, len);
	int pipefd[2] = { -1, -1 };
	char *argv[] = { (char *)path, NULL };
	struct spawn_opts so = { .argv = argv, .envp = envv, .in = in, .err = -1 };
	pid_t pid;
	int r, k;

	if (in < 0)
		return in;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	so.out = pipefd[1];
	r = spawn_start(&so, &pid);
	close(pipefd[1]);
	if (r < 0) {
		close(pipefd[0]);
		return r;
	}
	r = slurp(pipefd[0], out, out_len, truncated);
	close(pipefd[0]);
	k = spawn_wait(pid, status);
	return r < 0 ? r : k;
}

/* The delegated plugin's error object, passed on as it wrote it. */
static int pass_error(const char *type, const char *out, size_t len, bool truncated, int status,
		      struct cnispec_error *err)
{
	json_t *o = json_loadb(out, len, 0, NULL);
	const json_t *code = json_object_get(o, "code"), *msg = json_object_get(o, "msg"),
		     *details = json_object_get(o, "details");

	if (json_is_integer(code) && json_integer_value(code) > 0 &&
	    json_integer_value(code) <= UINT32_MAX) {
		cnispec_fail(err, -EPROTO, (unsigned)json_integer_value(code),
			     json_is_string(msg) ? json_string_value(msg) : "error", "%s",
			     json_is_string(details) ? json_string_value(details) : "");
	} else if (WIFEXITED(status) && truncated) {
		cnispec_fail(err, -EPROTO, CNISPEC_E_INTERNAL, "delegated plugin failed",
			     "%s exited with status %d and printed more than %u bytes", type,
			     WEXITSTATUS(status), OUTPUT_MAX);
	} else if (WIFEXITED(status)) {
		cnispec_fail(err, -EPROTO, CNISPEC_E_INTERNAL, "delegated plugin failed",
			     "%s exited with status %d and printed no error object: %.200s", type,
			     WEXITSTATUS(status), out);
	} else {
		cnispec_fail(err, -EPROTO, CNISPEC_E_INTERNAL, "delegated plugin failed",
			     "%s was killed by signal %d", type,
			     WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	}
	json_decref(o);
	return -EPROTO;
}

int cnispec_delegate(const char *type, enum cnispec_cmd cmd, const char *cni_path,
		     char *const *envp, const char *buf, size_t len, enum cnispec_version v,
		     struct cnispec_result **ret, struct cnispec_error *err)
{
	_cleanup_free_ char *path = NULL, *out = NULL;
	_cleanup_free_ char **envv = NULL;
	size_t out_len = 0;
	bool truncated = false;
	int status = 0, r;

	if (!cni_path)
		return cnispec_fail(
			err, -EINVAL, CNISPEC_E_ENV, "invalid environment variables: CNI_PATH",
			"CNI_PATH: not set, so the IPAM plugin %s cannot be found", type);
	r = cnispec_find_plugin(cni_path, type, &path);
	if (r < 0)
		return cnispec_fail(err, r, CNISPEC_E_CONFIG, "invalid network configuration",
				    "ipam.type: \"%s\" %s", type,
				    r == -EINVAL ? "is not a plugin name" : strerror(-r));
	if (r == 0)
		return cnispec_fail(err, -ENOENT, CNISPEC_E_CONFIG, "failed to find plugin",
				    "ipam.type: no executable \"%s\" in CNI_PATH %s", type,
				    cni_path);
	envv = env_with_command(envp, cmd);
	if (!envv)
		return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory", NULL);
	r = run(path, envv, buf, len, &out, &out_len, &truncated, &status);
	free(envv[0]); /* the CNI_COMMAND string; the rest are envp's */
	if (r < 0)
		return cnispec_fail(err, r, CNISPEC_E_IO, "failed to run the delegated plugin",
				    "%s: %s", path, strerror(-r));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return pass_error(type, out, out_len, truncated, status, err);
	if (cmd == CNISPEC_CMD_ADD && ret) {
		char why[512];
		json_t *o;

		if (truncated)
			return cnispec_fail(err, -EBADMSG, CNISPEC_E_DECODE,
					    "invalid result from the delegated plugin",
					    "%s printed more than %u bytes", type, OUTPUT_MAX);
		o = json_loadb(out, out_len, 0, NULL);
		if (!o)
			return cnispec_fail(err, -EBADMSG, CNISPEC_E_DECODE,
					    "invalid result from the delegated plugin",
					    "%s printed no JSON result: %.200s", type, out);
		r = cnispec_result_from_json(o, v, "result", ret, why, sizeof(why));
		json_decref(o);
		if (r == -ENOMEM)
			return cnispec_fail(err, r, CNISPEC_E_INTERNAL, "out of memory", NULL);
		if (r < 0)
			return cnispec_fail(err, -EBADMSG, CNISPEC_E_DECODE,
					    "invalid result from the delegated plugin", "%s: %s",
					    type, why);
	}
	return 0;
}
