/* SPDX-License-Identifier: Apache-2.0 */
/* One kubelet_server with canned devices and ops, so that the transport can be tested against
 * a stand-in kubelet (tests/js/kubelet.mjs) without the plugin core.
 *
 *   kl_testserver --kubelet-dir DIR [--socket NAME] [--resource NAME] [--devices N]
 *                 [--default-ops] [--prestart-required]
 *
 * Devices dev0..dev(N-1) (default 4), healthy, NUMA node i/2. Prints "listening PATH" on stdout
 * once the socket exists; logs to stderr. SIGUSR1 flips dev0's health; SIGTERM/SIGINT stop the
 * server (removing its socket) and exit 0. SIGUSR2 prints "heap BYTES asan|malloc" on stdout:
 * the bytes of heap in use (AddressSanitizer's count in a sanitized build, where RSS holds the
 * allocator's own caches and shadow; mallinfo2's otherwise), so that tests can tell a leak
 * from noise.
 *
 * Allocate echoes the ids: env RDMAK_DEVICES=ids joined by ',', annotation
 * rdmak.io/devices=the same, one DeviceSpec /dev/infiniband/<id> (rwm) and one CDI device
 * rdmak.io/rdma=<id> per id, and a read-only mount /run/rdmak -> /etc/rdmak. An id starting
 * with "bad" fails the call with EINVAL and a message naming it. GetPreferredAllocation keeps
 * must_include and fills up from the *end* of available (so tests can tell it from the
 * transport's default). PreStartContainer fails for an id starting with "bad".
 * A GetPreferredAllocation whose first available id is "block" waits (10 s at most) until an
 * Allocate asks for "release": a test that Allocate is answered while a preferred call runs.
 * --default-ops leaves those two callbacks NULL, so that the transport's defaults answer.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "kubelet/kubelet.h"

#if defined(__SANITIZE_ADDRESS__)
#define KL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KL_ASAN 1
#endif
#endif
#ifdef KL_ASAN
#define HEAP_COUNTER "asan"
size_t __sanitizer_get_current_allocated_bytes(
	void); /* <sanitizer/allocator_interface.h>, not always installed */
static size_t heap_in_use(void)
{
	return __sanitizer_get_current_allocated_bytes();
}
#else
#include <malloc.h>
#define HEAP_COUNTER "malloc"
static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}
#endif

#define MAX_DEVICES 64

static bool is_bad(const char *id)
{
	return strncmp(id, "bad", 3) == 0;
}

static pthread_mutex_t block_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t block_cond = PTHREAD_COND_INITIALIZER;
static bool released;

static void release_if_asked(const char *const *ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(ids[i], "release") == 0) {
			pthread_mutex_lock(&block_lock);
			released = true;
			pthread_cond_broadcast(&block_cond);
			pthread_mutex_unlock(&block_lock);
		}
}

static void block_until_released(void)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&block_lock);
	while (!released && pthread_cond_timedwait(&block_cond, &block_lock, &until) == 0)
		;
	released = false;
	pthread_mutex_unlock(&block_lock);
}

static char *join_ids(const char *const *ids, size_t n)
{
	size_t len = 1;
	char *s;

	for (size_t i = 0; i < n; i++)
		len += strlen(ids[i]) + 1;
	s = calloc(1, len);
	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (i)
			strcat(s, ",");
		strcat(s, ids[i]);
	}
	return s;
}

static int test_allocate(void *ud, const char *const *ids, size_t n,
			 struct kubelet_container_alloc *out, char **msg)
{
	release_if_asked(ids, n);
	for (size_t i = 0; i < n; i++)
		if (is_bad(ids[i])) {
			if (asprintf(msg, "cannot allocate %s: no such device", ids[i]) < 0)
				*msg = NULL;
			return -EINVAL;
		}
	out->envs = calloc(1, sizeof(*out->envs));
	out->annotations = calloc(1, sizeof(*out->annotations));
	out->mounts = calloc(1, sizeof(*out->mounts));
	out->devices = calloc(n ? n : 1, sizeof(*out->devices));
	out->cdi_devices = calloc(n ? n : 1, sizeof(*out->cdi_devices));
	if (!out->envs || !out->annotations || !out->mounts || !out->devices || !out->cdi_devices)
		return -ENOMEM;
	out->n_envs = out->n_annotations = out->n_mounts = 1;
	out->envs[0].key = strdup("RDMAK_DEVICES");
	out->envs[0].value = join_ids(ids, n);
	out->annotations[0].key = strdup("rdmak.io/devices");
	out->annotations[0].value = join_ids(ids, n);
	out->mounts[0].container_path = strdup("/etc/rdmak");
	out->mounts[0].host_path = strdup("/run/rdmak");
	out->mounts[0].read_only = true;
	for (size_t i = 0; i < n; i++) {
		out->n_devices++;
		if (asprintf(&out->devices[i].container_path, "/dev/infiniband/%s", ids[i]) < 0)
			out->devices[i].container_path = NULL;
		out->devices[i].host_path = out->devices[i].container_path
						    ? strdup(out->devices[i].container_path)
						    : NULL;
		strcpy(out->devices[i].permissions, "rwm");
		out->n_cdi_devices++;
		if (asprintf(&out->cdi_devices[i], "rdmak.io/rdma=%s", ids[i]) < 0)
			out->cdi_devices[i] = NULL;
	}
	return 0;
}

static bool listed(const char *id, char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], id) == 0)
			return true;
	return false;
}

static int test_preferred(void *ud, const char *const *available, size_t n_available,
			  const char *const *must_include, size_t n_must, size_t size, char ***out,
			  size_t *n_out)
{
	char **v;
	size_t n = 0;

	if (n_available && strcmp(available[0], "block") == 0)
		block_until_released();
	v = calloc(n_available + n_must + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n_must; i++)
		if (!listed(must_include[i], v, n))
			v[n++] = strdup(must_include[i]);
	for (size_t i = n_available; i-- > 0 && n < size;)
		if (!listed(available[i], v, n))
			v[n++] = strdup(available[i]);
	*out = v;
	*n_out = n;
	return 0;
}

static int test_prestart(void *ud, const char *const *ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (is_bad(ids[i]))
			return -ENODEV;
	return 0;
}

static const struct kubelet_ops test_ops = {
	.allocate = test_allocate,
	.preferred = test_preferred,
	.prestart = test_prestart,
};

/* --default-ops: the transport's defaults for GetPreferredAllocation and PreStartContainer. */
static const struct kubelet_ops minimal_ops = {
	.allocate = test_allocate,
};

static void log_stderr(int level, const char *msg, void *ud)
{
	static const char *const names[] = { "err", "warn", "info", "debug" };

	fprintf(stderr, "kl_testserver[%s]: %s\n", names[level & 3], msg);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "kubelet-dir", required_argument, NULL, 'd' },
		{ "socket", required_argument, NULL, 's' },
		{ "resource", required_argument, NULL, 'r' },
		{ "devices", required_argument, NULL, 'n' },
		{ "default-ops", no_argument, NULL, 'm' },
		{ "prestart-required", no_argument, NULL, 'p' },
		{ 0 },
	};
	struct kubelet_server_config cfg = {
		.resource_name = "rdmak.io/test",
		.socket_name = "rdmak-test.sock",
		.preferred_allocation = true,
		.ops = &test_ops,
	};
	struct kubelet_device devs[MAX_DEVICES] = { 0 };
	struct kubelet_server *srv = NULL;
	struct kubelet *k = NULL;
	const char *kubelet_dir = NULL;
	size_t n_devs = 4;
	sigset_t mask;
	int c, r, sfd;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': kubelet_dir = optarg; break;
		case 's': cfg.socket_name = optarg; break;
		case 'r': cfg.resource_name = optarg; break;
		case 'n': n_devs = strtoul(optarg, NULL, 10); break;
		case 'm': cfg.ops = &minimal_ops; break;
		case 'p': cfg.prestart_required = true; break;
		default: return 2;
		}
	}
	if (!kubelet_dir || n_devs > MAX_DEVICES) {
		fprintf(stderr, "usage: kl_testserver --kubelet-dir DIR [--socket NAME] "
				"[--resource NAME] [--devices N<=64] [--default-ops] "
				"[--prestart-required]\n");
		return 2;
	}
	for (size_t i = 0; i < n_devs; i++) {
		snprintf(devs[i].id, sizeof(devs[i].id), "dev%zu", i);
		devs[i].healthy = true;
		devs[i].numa_node = (int)(i / 2);
	}

	/* Block before gRPC starts its threads, so that they inherit the mask and only the
	 * signalfd sees these signals. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		perror("signalfd");
		return 1;
	}

	r = kubelet_new(kubelet_dir, log_stderr, NULL, &k);
	if (r >= 0)
		r = kubelet_server_new(k, &cfg, log_stderr, NULL, &srv);
	if (r >= 0)
		r = kubelet_server_set_devices(srv, devs, n_devs);
	if (r >= 0)
		r = kubelet_server_start(srv);
	if (r < 0) {
		fprintf(stderr, "kl_testserver: %s\n", strerror(-r));
		kubelet_server_free(srv);
		kubelet_free(k);
		return 1;
	}
	printf("listening %s/device-plugins/%s\n", kubelet_dir, cfg.socket_name);
	fflush(stdout);

	for (;;) {
		struct signalfd_siginfo si;

		if (read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si)) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (si.ssi_signo == SIGUSR2) {
			printf("heap %zu %s\n", heap_in_use(), HEAP_COUNTER);
			fflush(stdout);
			continue;
		}
		if (si.ssi_signo != SIGUSR1)
			break;
		devs[0].healthy = !devs[0].healthy;
		r = kubelet_server_set_devices(srv, devs, n_devs);
		fprintf(stderr, "kl_testserver: dev0 %s (%s)\n",
			devs[0].healthy ? "healthy" : "unhealthy", r < 0 ? strerror(-r) : "sent");
	}
	kubelet_server_stop(srv);
	kubelet_server_free(srv);
	kubelet_free(k);
	close(sfd);
	return 0;
}
