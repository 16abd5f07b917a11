/* SPDX-License-Identifier: Apache-2.0 */
/* The runner: perftest's command line chosen from the hardware model, and running it.
 *
 * The choices perftest leaves to the user and users get wrong: which HCA (a healthy one: an
 * ACTIVE port and a uverbs node in this container, or the GPU's nearest with --gpu), which
 * GID on RoCE (perftest's default index 0 is the link-local RoCE v1 GID, "GID index 0" is the
 * classic failure; we pass the RoCE v2 GID of the interface's IPv4 address), and with --rails
 * one pair per RDMA interface, each on its own TCP port, all at once. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "diag/diag.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/spawn.h"
#include "util/strv.h"

#define DEFAULT_TCP_PORT 18515
#define OUTPUT_MAX	 (64u << 20)

const struct hw_port *bench_port(const struct hw_rdma_dev *d, unsigned want)
{
	if (want)
		return hw_rdma_port(d, want);
	HW_DEV_FOREACH_PORT(d, p)
	if (hw_port_state_is_active(p->state))
		return p;
	return NULL;
}

int bench_runner_roce_gid(const struct hw_port *p, const struct hw_node *node, const char *netdev,
			  char *ndev_out)
{
	const struct hw_gid *best = NULL;

	for (size_t i = 0; i < p->n_gids; i++) {
		const struct hw_gid *g = &p->gids[i];

		if (!g->ipv4 || strcmp(g->type, "RoCE v2") || !g->ndev[0])
			continue;
		if (netdev && strcmp(g->ndev, netdev))
			continue;
		/* in a pod only the netdevs of its own netns are in /sys/class/net */
		if (node && !hw_node_netdev(node, g->ndev))
			continue;
		best = g;
		break;
	}
	if (!best)
		return -1;
	if (ndev_out)
		str_copy(ndev_out, HW_IFNAME_MAX, best->ndev);
	return (int)best->index;
}

static const char *rail_key(const struct hw_rdma_dev *d)
{
	const struct hw_port *p = bench_port(d, 0);
	const struct hw_netdev *nd = p ? (d->lag ? d->lag : p->netdev) : NULL;

	return nd ? nd->name : d->name;
}

static int cmp_rail(const void *a, const void *b)
{
	const struct hw_rdma_dev *x = *(const struct hw_rdma_dev *const *)a,
				 *y = *(const struct hw_rdma_dev *const *)b;
	int r = str_natcmp(rail_key(x), rail_key(y));

	return r ? r : str_natcmp(x->name, y->name);
}

int bench_runner_rails(const struct hw_node *node, const struct hw_rdma_dev ***ret, size_t *n)
{
	const struct hw_rdma_dev **v = calloc(node->n_rdma ? node->n_rdma : 1, sizeof(*v));
	size_t k = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < node->n_rdma; i++) {
		const struct hw_rdma_dev *d = &node->rdma[i];
		const struct hw_port *p = bench_port(d, 0);

		if (!diag_dev_usable(d) || !p)
			continue;
		if (p->link_layer == HW_LINK_ETH && bench_runner_roce_gid(p, node, NULL, NULL) < 0)
			continue;
		v[k++] = d;
	}
	/* the same order on both pods: the interfaces (net1..net8) pair up, device numbers differ */
	qsort(v, k, sizeof(*v), cmp_rail);
	*ret = v;
	*n = k;
	return 0;
}

/* Does the device serve this interface: a RoCE GID of it, or its IPoIB netdev / LAG bond. */
static bool serves(const struct hw_rdma_dev *d, const struct hw_port *p, const struct hw_node *node,
		   const char *ifname)
{
	if (!ifname)
		return true;
	if (p->link_layer == HW_LINK_ETH)
		return bench_runner_roce_gid(p, node, ifname, NULL) >= 0;
	return (p->netdev && !strcmp(p->netdev->name, ifname)) ||
	       (d->lag && !strcmp(d->lag->name, ifname));
}

static const struct hw_rdma_dev *choose_device(const struct hw_node *node, const char *ifname,
					       char *why, size_t why_len)
{
	const struct hw_rdma_dev *best = NULL;
	size_t used = 0;

	for (size_t i = 0; i < node->n_rdma; i++) {
		const struct hw_rdma_dev *d = &node->rdma[i];
		const struct hw_port *p = bench_port(d, 0);
		const char *no = !diag_dev_usable(d) ? "no uverbs node here"
				 : !p		     ? "no ACTIVE port"
				 : p->link_layer == HW_LINK_ETH &&
						 bench_runner_roce_gid(p, node, NULL, NULL) < 0
					 ? "no RoCE v2 IPv4 GID"
				 : !serves(d, p, node, ifname) ? "not on "
							       : NULL;

		if (no) {
			int w = snprintf(why + used, why_len > used ? why_len - used : 0,
					 "%s%s: %s%s", used ? "; " : "", d->name, no,
					 strcmp(no, "not on ") ? "" : ifname);
			used += w > 0 ? (size_t)w : 0;
			continue;
		}
		if (!best || p->rate.gbps > bench_port(best, 0)->rate.gbps)
			best = d;
	}
	if (!best && !node->n_rdma)
		snprintf(why, why_len, "no RDMA device in %s", "sysfs");
	return best;
}

static const struct hw_gpu *find_gpu(struct hw_ctx *ctx, const struct hw_node *node,
				     const struct bench_opts *o, char *why, size_t why_len)
{
	if (o->gpu_bdf) {
		for (size_t i = 0; i < node->n_gpus; i++)
			if (node->gpus[i].pci && !strcmp(node->gpus[i].pci->bdf, o->gpu_bdf))
				return &node->gpus[i];
		snprintf(why, why_len, "no NVIDIA GPU at %s", o->gpu_bdf);
		return NULL;
	}
	if (o->gpu >= 0) {
		for (size_t i = 0; i < node->n_gpus; i++)
			if ((int)node->gpus[i].index == o->gpu)
				return &node->gpus[i];
		snprintf(why, why_len, "no GPU%d (this node has %zu NVIDIA GPUs)", o->gpu,
			 node->n_gpus);
		return NULL;
	}
	/* auto: the one GPU this container was given (its /dev/nvidiaN) */
	const struct hw_gpu *found = NULL;
	size_t n = 0;

	for (size_t i = 0; i < node->n_gpus; i++) {
		struct hw_devnode dn;

		if (hw_gpu_read_devnode(ctx, &node->gpus[i], &dn) >= 0 && dn.present) {
			found = &node->gpus[i];
			n++;
		}
	}
	if (n == 1)
		return found;
	snprintf(why, why_len,
		 n ? "%zu GPUs are in this container: say which with --gpu N"
		   : "no /dev/nvidiaN in this container: request nvidia.com/gpu, or say --gpu N",
		 n);
	return NULL;
}

static int push_fmt(char ***v, size_t *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int push_fmt(char ***v, size_t *n, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	return r < 0 ? -ENOMEM : strv_push(v, n, s);
}

static bool is_lat(const char *test)
{
	return strstr(test, "_lat") != NULL;
}

static int build_argv(struct bench_run *run, const struct bench_opts *o, bool client)
{
	char **v = NULL;
	size_t n = 0;
	int r = 0;
	bool lat = is_lat(o->test);

	if (o->perftest_dir)
		r |= push_fmt(&v, &n, "%s/%s", o->perftest_dir, o->test);
	else
		r |= strv_extend(&v, &n, o->test);
	r |= push_fmt(&v, &n, "-d");
	r |= strv_extend(&v, &n, run->device);
	r |= push_fmt(&v, &n, "-i");
	r |= push_fmt(&v, &n, "%u", run->port);
	r |= push_fmt(&v, &n, "-p");
	r |= push_fmt(&v, &n, "%u", run->tcp_port);
	if (run->gid_index >= 0) {
		r |= push_fmt(&v, &n, "-x");
		r |= push_fmt(&v, &n, "%d", run->gid_index);
	}
	/* -F: the CPU frequency check only warns (perftest's sampled clock is what it uses) */
	r |= push_fmt(&v, &n, "-F");
	if (!lat) {
		r |= push_fmt(&v, &n, "--report_gbits");
		r |= push_fmt(&v, &n, "-q");
		r |= push_fmt(&v, &n, "%d", o->qps > 0 ? o->qps : 4);
	}
	if (o->all_sizes)
		r |= push_fmt(&v, &n, "-a");
	else if (o->size) {
		r |= push_fmt(&v, &n, "-s");
		r |= push_fmt(&v, &n, "%llu", (unsigned long long)o->size);
	}
	if (o->duration > 0) {
		r |= push_fmt(&v, &n, "-D");
		r |= push_fmt(&v, &n, "%d", o->duration);
	}
	if (run->gpu) {
		/* --use_cuda first: perftest 25.x rejects --use_cuda_dmabuf seen before it (#336) */
		if (o->cuda_index >= 0)
			r |= push_fmt(&v, &n, "--use_cuda=%d", o->cuda_index);
		else
			r |= push_fmt(&v, &n, "--use_cuda_bus_id=%s", run->gpu->pci->bdf);
	}
	for (size_t i = 0; i < o->n_passthrough; i++)
		r |= strv_extend(&v, &n, o->passthrough[i]);
	if (client)
		r |= strv_extend(&v, &n, o->server);
	if (r < 0 || !v) {
		strv_free(v);
		return -ENOMEM;
	}
	run->argv = v;
	return 0;
}

static int plan_one(struct bench_run *run, const struct hw_node *node, const struct hw_rdma_dev *d,
		    const struct bench_opts *o, char *why, size_t why_len)
{
	const struct hw_port *p = d ? bench_port(d, o->ib_port) : NULL;

	run->exit_status = -1;
	run->gid_index = o->gid_index;
	str_copy(run->device, sizeof(run->device), d ? d->name : o->device);
	run->port = o->ib_port ? o->ib_port : p ? p->num : 1;
	if (p && p->netdev)
		str_copy(run->netdev, sizeof(run->netdev), d->lag ? d->lag->name : p->netdev->name);
	if (!p || p->link_layer != HW_LINK_ETH || o->gid_index >= 0)
		return 0;
	run->gid_index = bench_runner_roce_gid(p, node, o->interface, run->netdev);
	if (run->gid_index < 0) {
		snprintf(
			why, why_len,
			"%s port %u has no RoCE v2 GID of an IPv4 address%s%s%s: the interface has no "
			"IPv4 address or is not in this pod (give --gid-index to force one)",
			d->name, p->num, o->interface ? " on " : "",
			o->interface ? o->interface : "", "");
		return -ENODEV;
	}
	return 0;
}

int bench_runner_plan(struct hw_ctx *ctx, const struct hw_node *node, const struct bench_opts *o,
		      bool client, struct bench_run **ret, char *why, size_t why_len)
{
	const struct hw_rdma_dev **rails = NULL, *one = NULL;
	const struct hw_gpu *gpu = NULL;
	struct bench_run *runs;
	size_t n = 1;
	int r;

	why[0] = '\0';
	if (o->gpu != -1 || o->gpu_bdf) {
		gpu = find_gpu(ctx, node, o, why, why_len);
		if (!gpu)
			return -ENODEV;
	}
	if (o->rails) {
		if ((r = bench_runner_rails(node, &rails, &n)) < 0)
			return r;
		if (!n) {
			free(rails);
			snprintf(why, why_len,
				 "no rail: no RDMA device here has an ACTIVE port, a uverbs node%s",
				 " and (RoCE) a RoCE v2 IPv4 GID on a netdev of this pod");
			return -ENODEV;
		}
	} else if (o->device) {
		one = hw_node_rdma(node, o->device);
		/* not in the model (a container without /sys/class/infiniband): perftest may still know it */
	} else if (gpu) {
		one = gpu->nearest;
		if (!one) {
			snprintf(why, why_len, "GPU%u has no RDMA device near it", gpu->index);
			return -ENODEV;
		}
	} else {
		one = choose_device(node, o->interface, why, why_len);
		if (!one)
			return -ENODEV;
	}
	runs = calloc(n, sizeof(*runs));
	if (!runs) {
		free(rails);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct bench_run *run = &runs[i];

		r = plan_one(run, node, rails ? rails[i] : one, o, why, why_len);
		run->gpu = gpu;
		run->tcp_port = (o->tcp_port ? o->tcp_port : DEFAULT_TCP_PORT) + (unsigned)i;
		if (r >= 0)
			r = build_argv(run, o, client);
		if (r < 0) {
			bench_runner_free(runs, n);
			free(rails);
			return r;
		}
	}
	free(rails);
	*ret = runs;
	return (int)n;
}

void bench_runner_free(struct bench_run *runs, size_t n)
{
	for (size_t i = 0; runs && i < n; i++) {
		strv_free(runs[i].argv);
		free(runs[i].output);
	}
	free(runs);
}

/* ---- running ----------------------------------------------------------------------------- */

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

/* The program perftest's argv[0] names, found the way execvp would. */
static int resolve(const char *name, char *path, size_t n)
{
	const char *envpath = getenv("PATH");
	_cleanup_free_ char *copy = NULL;
	char *save = NULL;

	if (strchr(name, '/')) {
		if (access(name, X_OK) < 0)
			return -errno;
		return str_copy(path, n, name);
	}
	copy = strdup(envpath ? envpath : "/usr/local/bin:/usr/bin:/bin");
	if (!copy)
		return -ENOMEM;
	for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(path, n, "%s/%s", *d ? d : ".", name);
		if (access(path, X_OK) == 0)
			return 0;
	}
	return -ENOENT;
}

static int append(struct bench_run *run, const char *buf, size_t len)
{
	char *nb;

	if (run->output_len + len > OUTPUT_MAX)
		return 0; /* keep the first 64 MiB; perftest never prints that much */
	nb = realloc(run->output, run->output_len + len + 1);
	if (!nb)
		return -ENOMEM;
	memcpy(nb + run->output_len, buf, len);
	run->output = nb;
	run->output_len += len;
	run->output[run->output_len] = '\0';
	return 0;
}

static pid_t start(struct bench_run *run, int *fd)
{
	struct spawn_opts so;
	char path[4096];
	int p[2], r;
	pid_t pid;

	r = resolve(run->argv[0], path, sizeof(path));
	if (r < 0) {
		snprintf(run->start_error, sizeof(run->start_error), "%s: %s%s", run->argv[0],
			 r == -ENOENT ? "not found in PATH" : strerror(-r),
			 r == -ENOENT ? " (install perftest, or give --perftest-dir)" : "");
		return -1;
	}
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	/* CUDA ordinals in PCI order, as --use_cuda=N is documented (docs/bench.md) */
	so = (struct spawn_opts){ .path = path,
				  .argv = run->argv,
				  .set_env = "CUDA_DEVICE_ORDER=PCI_BUS_ID",
				  .in = -1,
				  .out = p[1],
				  .err = p[1] };
	r = spawn_start(&so, &pid);
	close(p[1]);
	if (r < 0) {
		close(p[0]);
		snprintf(run->start_error, sizeof(run->start_error), "%.120s: %s", path,
			 strerror(-r));
		return -1;
	}
	*fd = p[0];
	return pid;
}

bool bench_tcp_listening(const char *buf, size_t len, unsigned port)
{
	const char *end = buf + len, *nl;

	/* "  sl  local_address rem_address   st ...", then per socket
	 * "   0: 00000000:4853 00000000:0000 0A ..." (tcp6: 32 hex digits before the port) */
	for (const char *l = buf; l < end; l = nl + 1) {
		char local[80], remote[80], st[8];
		const char *colon;
		unsigned long long p;
		char line[256];

		nl = memchr(l, '\n', (size_t)(end - l));
		if (!nl)
			nl = end;
		if ((size_t)(nl - l) >= sizeof(line))
			continue;
		memcpy(line, l, (size_t)(nl - l));
		line[nl - l] = '\0';
		if (sscanf(line, " %*u: %79s %79s %7s", local, remote, st) != 3)
			continue;
		colon = strrchr(local, ':');
		if (!colon || strcmp(st, "0A") || str_to_u64(colon + 1, 16, &p) < 0)
			continue;
		if (p == port)
			return true;
	}
	return false;
}

/* perftest prints "Waiting for client to connect" with printf and no fflush: into our pipe it
 * comes only with the rest, after its client has come and gone. That it listens on its TCP port
 * is in the kernel's socket tables right away. */
static bool listening(const struct bench_run *run)
{
	static const char *const tables[] = { "/proc/net/tcp", "/proc/net/tcp6" };

	if (run->output && strstr(run->output, "Waiting for client to connect"))
		return true;
	for (size_t i = 0; i < ELEMENTSOF(tables); i++) {
		_cleanup_free_ char *buf = NULL;
		size_t len;

		if (fileio_read_at(AT_FDCWD, tables[i], 16u << 20, &buf, &len) == 0 &&
		    bench_tcp_listening(buf, len, run->tcp_port))
			return true;
	}
	return false;
}

static bool all_listening(const struct bench_run *runs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (runs[i].exit_status < 0 && !listening(&runs[i]))
			return false;
	return true;
}

int bench_runner_exec(struct bench_run *runs, size_t n, FILE *tee, void (*on_ready)(void *ud),
		      void *ud)
{
	struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
	_cleanup_free_ pid_t *pids = calloc(n, sizeof(pid_t));
	_cleanup_free_ struct pollfd *fds = calloc(n, sizeof(struct pollfd));
	size_t open_fds = 0;
	bool ready = !on_ready;
	int err = 0;

	if (!pids || !fds)
		return -ENOMEM;
	got_signal = 0;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	/* every rail at once: the point of --rails is the load of all of them together */
	for (size_t i = 0; i < n; i++) {
		fds[i].fd = -1;
		fds[i].events = POLLIN;
		pids[i] = start(&runs[i], &fds[i].fd);
		if (pids[i] > 0)
			open_fds++;
		else if (!runs[i].start_error[0])
			snprintf(runs[i].start_error, sizeof(runs[i].start_error),
				 "cannot start %s: %s", runs[i].argv[0], strerror(errno));
	}
	while (open_fds > 0) {
		int k = poll(fds, n, 250);
		char buf[8192];

		if (got_signal) {
			for (size_t i = 0; i < n; i++)
				if (pids[i] > 0)
					kill(pids[i], got_signal);
			got_signal = 0;
		}
		if (k < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		for (size_t i = 0; k > 0 && i < n; i++) {
			ssize_t l;

			if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			l = read(fds[i].fd, buf, sizeof(buf));
			if (l < 0 && errno == EINTR)
				continue;
			if (l <= 0) {
				close(fds[i].fd);
				fds[i].fd = -1;
				open_fds--;
				continue;
			}
			if (append(&runs[i], buf, (size_t)l) < 0)
				err = -ENOMEM;
			if (tee) {
				fwrite(buf, 1, (size_t)l, tee);
				fflush(tee);
			}
		}
		if (!ready && all_listening(runs, n)) {
			ready = true;
			on_ready(ud);
		}
	}
	for (size_t i = 0; i < n; i++) {
		int st;

		if (pids[i] <= 0)
			continue;
		while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
			;
		runs[i].exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return err;
}
