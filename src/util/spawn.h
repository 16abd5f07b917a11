/* SPDX-License-Identifier: Apache-2.0 */
/* The one way rdmak starts a child process: posix_spawn (glibc's is a vfork-style clone, so a
 * parent with a large heap pays no copy, and a failed exec comes back as an error here rather
 * than as a child printing and exiting 127). Used by the CNI delegation (cnispec/delegate.c),
 * bench's perftest runner and its kubectl driver. */
#ifndef RDMAK_UTIL_SPAWN_H
#define RDMAK_UTIL_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct spawn_opts {
	/* the program is path when set, else argv[0]; looked up in PATH when it has no '/' and
	 * search_path is set */
	const char *path;
	char *const *argv;
	bool search_path;
	/* the child's environment: envp when set, else ours; set_env ("NAME=value", may be NULL)
	 * is added on top of whichever (replacing an entry of the same name) */
	char *const *envp;
	const char *set_env;
	/* the child's 0, 1, 2: these descriptors, or -1 for /dev/null (stdin) / ours (1, 2) */
	int in, out, err;
	/* a process group of its own (so that the caller can signal the whole group, and a
	 * terminal's Ctrl-C reaches the caller only) */
	bool new_group;
};

/* Start the child; SIGINT and SIGTERM are at their default action in it whatever the caller
 * does with them. *pid on success; -errno (ENOENT for a program not found) on failure. */
int spawn_start(const struct spawn_opts *o, pid_t *pid);
/* waitpid across EINTR: the raw status, or -errno */
int spawn_wait(pid_t pid, int *status);

/* A child's stdin holding buf: a memory file (O_CLOEXEC) with buf written and its offset back at
 * 0, for spawn_opts.in or a dup2() before an exec. Unlike a pipe, the whole input is in it before
 * the child starts, so the parent never blocks writing to a child that does not read, and needs
 * no thread to feed it while it reads the child's stdout. It is not sealed: nobody reads it but
 * the child, so what the child does to its own stdin reaches no one. The fd, or -errno. */
int spawn_input_memfd(const void *buf, size_t len);

#endif
