/* SPDX-License-Identifier: Apache-2.0 */
/* Handing a request to the full rdmak: see cnispec.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cnispec/cnispec.h"
#include "log/log.h"
#include "util/spawn.h"

#ifndef RDMAK_PREFIX
#define RDMAK_PREFIX "/usr/local"
#endif

/* The request as the new program's stdin (spawn_input_memfd). */
static int request_as_stdin(const struct cnispec_request *req)
{
	int fd = spawn_input_memfd(req->buf, req->len), r = 0;

	if (fd < 0)
		return fd;
	if (dup2(fd, STDIN_FILENO) < 0)
		r = -errno;
	close(fd);
	return r;
}

int cnispec_exec_full(const struct cnispec_request *req, const char *argv0, const char *what,
		      struct cnispec_error *err)
{
	static const char *const fixed[] = { "/opt/rdmak/bin/rdmak", RDMAK_PREFIX "/bin/rdmak" };
	char *argv[] = { (char *)argv0, NULL };
	char self[PATH_MAX], beside[PATH_MAX + 16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int r = request_as_stdin(req);

	if (r < 0) {
		errno = -r;
		return cnispec_fail(err, r, CNISPEC_E_INTERNAL, "cannot pass the request on",
				    "stdin: %m");
	}
	fflush(NULL);
	log_close_file();
	if (n > 0) {
		char *slash;

		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(beside, sizeof(beside), "%s/../rdmak", self);
			execve(beside, argv, req->envp);
		}
	}
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		execve(fixed[i], argv, req->envp);
	return cnispec_fail(
		err, -ENOPKG, CNISPEC_E_CONFIG, what,
		"this %s is the per-pod binary; none of <its directory>/../rdmak, %s, %s "
		"runs: %m",
		argv0, fixed[0], fixed[1]);
}
