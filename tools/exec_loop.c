/* SPDX-License-Identifier: Apache-2.0 */
/* The runtime's side of an exec'd CNI benchmark (make bench, tools/bench-ipam-etcd.sh): what
 * containerd's libcni does for each ADD, and nothing more. PROCS threads share N commands;
 * each command is one spawn of PROGRAM (posix_spawn: clone with CLONE_VM|CLONE_VFORK, as Go's
 * os/exec does), its config on stdin from a file, its result read from a pipe, its exit status
 * waited for.
 *   exec_loop PROCS N NODES CONF_PREFIX TAG PROGRAM [exit]
 * Thread p runs its share with stdin CONF_PREFIX<p % NODES>.json and the environment of this
 * process plus CNI_COMMAND=ADD, CNI_CONTAINERID=TAG<p>-<i>, CNI_NETNS=/proc/self/ns/net,
 * CNI_IFNAME=net1. It prints one line per command: the first "address" of the result, or
 * "FAILED ID exit STATUS". With "exit", a command counts by its exit status alone and prints
 * "ok" (the harness's own floor: the same loop exec'ing a trivial program).
 * The shell loop this replaces (a bash subshell fork, a pipe into grep, per ADD) cost the
 * machine more CPU than the plugin it timed. Exit 1 when any command failed. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int n_procs, n_total, n_nodes, exit_only;
static const char *conf_prefix, *tag, *program;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static int failures;

/* env: the inherited environment less any CNI_* variable, then the four of this command */
static char **command_env(char *id_var, size_t *n_base)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 5, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "CNI_", 4))
			env[k++] = environ[i];
	*n_base = k;
	env[k++] = "CNI_COMMAND=ADD";
	env[k++] = id_var;
	env[k++] = "CNI_NETNS=/proc/self/ns/net";
	env[k++] = "CNI_IFNAME=net1";
	env[k] = NULL;
	return env;
}

/* one command: spawn, read its stdout to the end, wait; 0 with out filled, else -1 */
static int run_one(char **env, const char *conf, char *out, size_t cap, int *status)
{
	posix_spawn_file_actions_t fa;
	char *argv[] = { (char *)program, NULL };
	int pipefd[2], r;
	size_t len = 0;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, conf, O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	r = posix_spawn(&pid, program, &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (r) {
		close(pipefd[0]);
		errno = r;
		return -1;
	}
	for (;;) {
		ssize_t got = read(pipefd[0], out + len, cap - 1 - len);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		len += (size_t)got;
		if (len == cap - 1) { /* keep the head, drain the rest */
			char sink[4096];

			while (read(pipefd[0], sink, sizeof(sink)) > 0)
				;
			break;
		}
	}
	out[len] = '\0';
	close(pipefd[0]);
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

static void *worker(void *arg)
{
	int p = (int)(long)arg;
	int per = n_total / n_procs + (p < n_total % n_procs ? 1 : 0);
	char conf[4096], id_var[256], out[65536], line[512];
	size_t n_base;
	char **env = command_env(id_var, &n_base);

	if (!env)
		return NULL;
	snprintf(conf, sizeof(conf), "%s%d.json", conf_prefix, p % n_nodes);
	for (int i = 0; i < per; i++) {
		int status = 0;
		const char *a;

		snprintf(id_var, sizeof(id_var), "CNI_CONTAINERID=%s%d-%d", tag, p, i);
		if (run_one(env, conf, out, sizeof(out), &status) < 0) {
			snprintf(line, sizeof(line), "FAILED %s%d-%d spawn %s\n", tag, p, i,
				 strerror(errno));
		} else if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			snprintf(line, sizeof(line), "FAILED %s%d-%d exit %d\n", tag, p, i,
				 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		} else if (exit_only) {
			snprintf(line, sizeof(line), "ok\n");
		} else if ((a = strstr(out, "\"address\"")) && (a = strchr(a + 9, '"'))) {
			size_t l = strcspn(a + 1, "\"");

			snprintf(line, sizeof(line), "%.*s\n", (int)(l < 100 ? l : 100), a + 1);
		} else {
			snprintf(line, sizeof(line), "FAILED %s%d-%d no address\n", tag, p, i);
		}
		pthread_mutex_lock(&out_lock);
		if (!strncmp(line, "FAILED", 6))
			failures++;
		fputs(line, stdout);
		/* line by line: the benchmark watches the count to act part way (a member killed) */
		fflush(stdout);
		pthread_mutex_unlock(&out_lock);
	}
	free(env);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t *t;

	if (argc < 7 || argc > 8 || (argc == 8 && strcmp(argv[7], "exit"))) {
		fprintf(stderr, "usage: exec_loop PROCS N NODES CONF_PREFIX TAG PROGRAM [exit]\n");
		return 2;
	}
	n_procs = atoi(argv[1]);
	n_total = atoi(argv[2]);
	n_nodes = atoi(argv[3]);
	conf_prefix = argv[4];
	tag = argv[5];
	program = argv[6];
	exit_only = argc == 8;
	if (n_procs < 1 || n_total < 0 || n_nodes < 1) {
		fprintf(stderr, "exec_loop: PROCS and NODES must be >= 1, N >= 0\n");
		return 2;
	}
	t = calloc((size_t)n_procs, sizeof(*t));
	if (!t)
		return 1;
	for (int p = 0; p < n_procs; p++)
		if (pthread_create(&t[p], NULL, worker, (void *)(long)p)) {
			fprintf(stderr, "exec_loop: pthread_create failed\n");
			return 1;
		}
	for (int p = 0; p < n_procs; p++)
		pthread_join(t[p], NULL);
	free(t);
	return failures ? 1 : 0;
}
