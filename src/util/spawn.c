/* SPDX-License-Identifier: Apache-2.0 */
#include "util/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/fileio.h"

extern char **environ;

/* base plus one "NAME=value" (replacing base's NAME): a new array of borrowed pointers */
static char **env_with(char *const *base, const char *set)
{
	size_t n = 0, k = 0, name_len = strcspn(set, "=");
	char **v;

	while (base && base[n])
		n++;
	v = calloc(n + 2, sizeof(char *));
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(base[i], set, name_len + 1) != 0)
			v[k++] = base[i];
	v[k] = (char *)set;
	return v;
}

int spawn_start(const struct spawn_opts *o, pid_t *pid)
{
	_cleanup_free_ char **env = NULL;
	char *const *envp = o->envp ? o->envp : environ;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t dfl;
	short flags = POSIX_SPAWN_SETSIGDEF;
	int r;

	if (!o->argv || !o->argv[0])
		return -EINVAL;
	if (o->set_env) {
		env = env_with(envp, o->set_env);
		if (!env)
			return -ENOMEM;
		envp = env;
	}
	r = posix_spawn_file_actions_init(&fa);
	if (r)
		return -r;
	r = posix_spawnattr_init(&at);
	if (r) {
		posix_spawn_file_actions_destroy(&fa);
		return -r;
	}
	if (o->in >= 0)
		r = posix_spawn_file_actions_adddup2(&fa, o->in, STDIN_FILENO);
	else
		r = posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	if (!r && o->out >= 0)
		r = posix_spawn_file_actions_adddup2(&fa, o->out, STDOUT_FILENO);
	if (!r && o->err >= 0)
		r = posix_spawn_file_actions_adddup2(&fa, o->err, STDERR_FILENO);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGTERM);
	if (!r)
		r = posix_spawnattr_setsigdefault(&at, &dfl);
	if (!r && o->new_group) {
		flags |= POSIX_SPAWN_SETPGROUP;
		r = posix_spawnattr_setpgroup(&at, 0);
	}
	if (!r)
		r = posix_spawnattr_setflags(&at, flags);
	if (!r)
		r = (o->search_path ? posix_spawnp : posix_spawn)(
			pid, o->path ? o->path : o->argv[0], &fa, &at, o->argv, envp);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	return -r;
}

int spawn_wait(pid_t pid, int *status)
{
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

int spawn_input_memfd(const void *buf, size_t len)
{
	_cleanup_close_ int fd = memfd_create("stdin", MFD_CLOEXEC);
	int r;

	if (fd < 0)
		return -errno;
	if ((r = fileio_write_all(fd, buf, len)) < 0)
		return r;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	return TAKE_FD(fd);
}
