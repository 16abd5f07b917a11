/* SPDX-License-Identifier: Apache-2.0 */
/* `rdmak bench k8s`: the test between two pods of a cluster.
 *
 * Without --run it prints the two pods (YAML, or a v1 List with --json): the RDMA resource,
 * IPC_LOCK for a root container, no memory limit (registered memory is pinned and charged to
 * it: "Couldn't allocate MR"), a memory-backed /dev/shm, the node of each, the
 * networks annotation for secondary networks. They run `sleep infinity`: the test is exec'd
 * into them, so the server can be ready before the client starts.
 *
 * With --run it drives kubectl: create both pods, wait until they are Ready, exec
 * `rdmak bench server --json` and wait for its ready line, exec `rdmak bench client --json`
 * with the server pod's IP, collect both documents, judge the path (the lower of the two
 * sides' ceilings), and delete the pods whatever happened, Ctrl-C included. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "k8s/names.h"
#include "doc/doc.h"
#include "doc/yaml.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/opt.h"
#include "util/strutil.h"
#include "util/spawn.h"
#include "util/strv.h"

/* deploy/bench.Dockerfile, tagged with this build's version */
#define RDMAK_BENCH_IMAGE "rdmak-bench:" RDMAK_VERSION
#define OUT_MAX		  (16u << 20)

struct k8s_opts {
	struct {
		const char *name;
		unsigned count;
	} res[16];
	size_t n_res;
	unsigned count;
	const char *nodes[2];
	size_t n_nodes;
	const char *image, *registry, *ns, *networks, *name, *kubectl;
	bool gpu, json, run, rails;
	unsigned timeout;
	char **bench_args; /* passed to `rdmak bench server|client` (test options, thresholds) */
	size_t n_bench_args;
	char **passthrough; /* after `--` */
	size_t n_passthrough;
	char pod[2][128]; /* server, client */
};

static void usage(FILE *f)
{
	fputs("Usage: rdmak bench k8s --resource NAME[=N] --node A --node B [options] [--run] [-- PERFTEST-ARGS]\n"
	      "Print the two pods of an RDMA test between nodes A and B; with --run, create them, run\n"
	      "`rdmak bench server` and `rdmak bench client` in them, judge the result and delete them.\n\n"
	      "  --resource NAME[=N]  an RDMA resource to request (repeatable: rdma/rdma_shared_device_a,\n"
	      "                       spidernet.io/gpu1sriov ...); N defaults to --count\n"
	      "  --count N            how many of each resource (default 1)\n"
	      "  --node NAME          the server's node, then the client's (kubernetes.io/hostname)\n"
	      "  --image IMG          the image (default " RDMAK_BENCH_IMAGE
	      ", deploy/bench.Dockerfile)\n"
	      "  --registry R         pull the default image from R (R/" RDMAK_BENCH_IMAGE
	      "): offline clusters\n"
	      "  --namespace NS       default \"default\"\n"
	      "  --networks LIST      k8s.v1.cni.cncf.io/networks annotation (Multus secondary networks)\n"
	      "  --gpu                one nvidia.com/gpu per pod, and GPU memory (--gpu auto) in the test\n"
	      "  --name NAME          pod names NAME-server, NAME-client (default rdmak-bench-<random>)\n"
	      "  --run                run the test through kubectl; the pods are deleted at the end\n"
	      "  --kubectl PATH       the kubectl to use (default: kubectl in PATH)\n"
	      "  --timeout S          wait at most S seconds for the pods to be Ready (default 300)\n"
	      "  --test, -q/--qps, -s/--size, -a/--all, -D/--duration, --rails,\n"
	      "  --min-percent, --min-gbps, --max-usec   as for rdmak bench server/client\n"
	      "  -j, --json           the pods as a v1 List; with --run the result as JSON\n"
	      "Exit: 0 pass, 1 warn, 2 fail (or pods that never got Ready, or an interrupt), 3 usage, 4 invalid\n"
	      "(a figure above what the path can carry: the capture or the model is wrong).\n",
	      f);
}

/* ---- the pods --------------------------------------------------------------------------------- */

static json_t *container(const struct k8s_opts *o)
{
	json_t *limits = json_object(), *c;
	char n[16];

	for (size_t i = 0; i < o->n_res; i++) {
		snprintf(n, sizeof(n), "%u", o->res[i].count ? o->res[i].count : o->count);
		json_object_set_new(limits, o->res[i].name, json_string(n));
	}
	if (o->gpu)
		json_object_set_new(limits, "nvidia.com/gpu", json_string("1"));
	/* requests equal to limits for the extended resources; no memory (a limit would count the
	 * pinned buffers) and no CPU: perftest needs one core, the scheduler is not the point */
	c = json_pack("{s:s, s:s, s:s, s:[s,s], s:{s:i, s:{s:[s]}}, s:{s:o, s:O}, s:[{s:s, s:s}]}",
		      "name", "bench", "image", o->image, "imagePullPolicy", "IfNotPresent",
		      "command", "sleep", "infinity", "securityContext", "runAsUser", 0,
		      "capabilities", "add", "IPC_LOCK", "resources", "limits", limits, "requests",
		      limits, "volumeMounts", "name", "dshm", "mountPath", "/dev/shm");
	return c;
}

static json_t *pod(const struct k8s_opts *o, int role)
{
	const char *r = role ? "client" : "server";
	json_t *p = json_pack(
		"{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s, s:s}}, s:{s:s, s:i, s:{s:s}, s:[o], s:[{s:s, s:{s:s, s:s}}]}}",
		"apiVersion", "v1", "kind", "Pod", "metadata", "name", o->pod[role], "namespace",
		o->ns, "labels", "app.kubernetes.io/name", "rdmak-bench",
		"app.kubernetes.io/instance", o->name, "rdmak.io/bench-role", r, "spec",
		"restartPolicy", "Never", "terminationGracePeriodSeconds", 1, "nodeSelector",
		"kubernetes.io/hostname", o->nodes[role], "containers", container(o), "volumes",
		"name", "dshm", "emptyDir", "medium", "Memory", "sizeLimit", "1Gi");

	if (p && o->networks)
		json_object_set_new(json_object_get(p, "metadata"), "annotations",
				    json_pack("{s:s}", "k8s.v1.cni.cncf.io/networks", o->networks));
	return p;
}

/* A string that a YAML reader would take for a number, a boolean or null is quoted. */
/* Both pods as YAML documents, through the one YAML writer (src/doc/yaml.h), "---" before each. */
static int print_yaml(FILE *f, const json_t *pods)
{
	const json_t *p;
	size_t i;
	int r;

	json_array_foreach(pods, i, p)
	{
		if (fputs("---\n", f) < 0)
			return -EIO;
		r = doc_write_yaml(f, p);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- kubectl ------------------------------------------------------------------------------------ */

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

struct proc {
	pid_t pid;
	int out, err;
	char *obuf, *ebuf;
	size_t olen, elen;
	int status; /* exit code, 128+signal, -1 running */
};

static int proc_start(struct proc *p, char **argv, const char *input)
{
	int o[2] = { -1, -1 }, e[2] = { -1, -1 }, i[2] = { -1, -1 };
	/* its own process group: Ctrl-C is ours to handle, the pods must still be deleted */
	struct spawn_opts so = { .argv = argv, .search_path = true, .in = -1, .new_group = true };
	int r = 0;

	memset(p, 0, sizeof(*p));
	p->out = p->err = -1;
	p->status = -1;
	if (pipe2(o, O_CLOEXEC) < 0 || pipe2(e, O_CLOEXEC) < 0 ||
	    (input && pipe2(i, O_CLOEXEC) < 0))
		r = -errno;
	so.in = i[0];
	so.out = o[1];
	so.err = e[1];
	if (r == 0)
		r = spawn_start(&so, &p->pid);
	/* the write ends and the child's stdin are the child's now */
	for (int k = 0; k < 3; k++) {
		int fd = (int[]){ o[1], e[1], i[0] }[k];

		if (fd >= 0)
			close(fd);
	}
	if (r < 0) {
		for (int k = 0; k < 3; k++) {
			int fd = (int[]){ o[0], e[0], i[1] }[k];

			if (fd >= 0)
				close(fd);
		}
		p->pid = 0;
		return r;
	}
	p->out = o[0];
	p->err = e[0];
	if (input) {
		(void)fileio_write_all(i[1], input, strlen(input));
		close(i[1]);
	}
	return 0;
}

static int append(char **b, size_t *l, const char *s, size_t n)
{
	char *nb;

	if (*l + n > OUT_MAX)
		return 0;
	nb = realloc(*b, *l + n + 1);
	if (!nb)
		return -ENOMEM;
	memcpy(nb + *l, s, n);
	*l += n;
	nb[*l] = '\0';
	*b = nb;
	return 0;
}

/* Read what the process prints until it exits, or until `needle` shows up on its stderr
 * (returns 1), or until the deadline (0) or an interrupt (-EINTR). */
static int proc_pump(struct proc *p, const char *needle, time_t deadline)
{
	char buf[8192];

	while (p->out >= 0 || p->err >= 0) {
		struct pollfd fds[2] = { { .fd = p->out, .events = POLLIN },
					 { .fd = p->err, .events = POLLIN } };
		int k;

		if (interrupted)
			return -EINTR;
		if (deadline && time(NULL) >= deadline)
			return 0;
		k = poll(fds, 2, 200);
		if (k < 0 && errno != EINTR)
			return -errno;
		for (int j = 0; k > 0 && j < 2; j++) {
			int *fd = j ? &p->err : &p->out;
			ssize_t n;

			if (*fd < 0 || !(fds[j].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(*fd, buf, sizeof(buf));
			if (n <= 0) {
				close(*fd);
				*fd = -1;
				continue;
			}
			if (append(j ? &p->ebuf : &p->obuf, j ? &p->elen : &p->olen, buf,
				   (size_t)n) < 0)
				return -ENOMEM;
		}
		if (needle && p->ebuf && strstr(p->ebuf, needle))
			return 1;
	}
	if (p->status < 0) {
		int st;

		while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR)
			;
		p->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
	return needle ? 0 : 1;
}

static void proc_kill(struct proc *p)
{
	if (p->pid > 0 && p->status < 0) {
		kill(-p->pid, SIGTERM);
		kill(p->pid, SIGTERM);
		interrupted = 0;
		(void)proc_pump(p, NULL, 0);
	}
}

static void proc_free(struct proc *p)
{
	if (p->out >= 0)
		close(p->out);
	if (p->err >= 0)
		close(p->err);
	free(p->obuf);
	free(p->ebuf);
	memset(p, 0, sizeof(*p));
	p->out = p->err = -1;
}

/* Run kubectl to its end. Returns its exit status (or -errno); out/err kept in p. */
static int kubectl(const struct k8s_opts *o, struct proc *p, const char *input, ...)
{
	_cleanup_strv_free_ char **argv = NULL;
	size_t n = 0;
	va_list ap;
	int r;

	r = strv_extend(&argv, &n, o->kubectl);
	va_start(ap, input);
	for (const char *a = va_arg(ap, const char *); r >= 0 && a; a = va_arg(ap, const char *))
		r = strv_extend(&argv, &n, a);
	va_end(ap);
	if (r < 0 || (r = proc_start(p, argv, input)) < 0)
		return r;
	r = proc_pump(p, NULL, 0);
	if (r < 0) {
		proc_kill(p);
		return r;
	}
	return p->status;
}

static void delete_pods(const struct k8s_opts *o)
{
	struct proc p;
	sigset_t all, old;

	/* nothing stops the clean-up once it runs */
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	interrupted = 0;
	fprintf(stderr, "rdmak bench k8s: deleting pod/%s pod/%s\n", o->pod[0], o->pod[1]);
	if (kubectl(o, &p, NULL, "delete", "pod", o->pod[0], o->pod[1], "-n", o->ns,
		    "--ignore-not-found", "--wait=false", NULL) != 0)
		fprintf(stderr, "rdmak bench k8s: kubectl delete failed: %s",
			p.ebuf ? p.ebuf : "\n");
	proc_free(&p);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* Why a pod is not Ready, from its status (kubectl get -o json): unschedulable, image pull,
 * a container that exited. */
static void pod_trouble(const json_t *pod, char *buf, size_t n)
{
	const json_t *st = json_object_get(pod, "status"), *c, *cs;
	const char *name =
		json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
	size_t i;

	buf[0] = '\0';
	json_array_foreach(json_object_get(st, "conditions"), i, c)
	{
		if (json_is_string(json_object_get(c, "reason")) &&
		    !strcmp(json_string_value(json_object_get(c, "status")), "False") &&
		    !strcmp(json_string_value(json_object_get(c, "type")), "PodScheduled")) {
			snprintf(buf, n, "pod %s is not scheduled: %s: %s", name ? name : "?",
				 json_string_value(json_object_get(c, "reason")),
				 json_string_value(json_object_get(c, "message")) ?: "");
			return;
		}
	}
	json_array_foreach(json_object_get(st, "containerStatuses"), i, cs)
	{
		const json_t *w = json_object_get(json_object_get(cs, "state"), "waiting");
		const json_t *t = json_object_get(json_object_get(cs, "state"), "terminated");

		if (w && json_is_string(json_object_get(w, "reason"))) {
			snprintf(buf, n, "pod %s: container %s: %s: %s", name ? name : "?",
				 json_string_value(json_object_get(cs, "name")) ?: "?",
				 json_string_value(json_object_get(w, "reason")),
				 json_string_value(json_object_get(w, "message")) ?: "");
			return;
		}
		if (t) {
			snprintf(buf, n, "pod %s: container %s terminated: %s (exit %lld)",
				 name ? name : "?",
				 json_string_value(json_object_get(cs, "name")) ?: "?",
				 json_string_value(json_object_get(t, "reason")) ?: "?",
				 json_integer_value(json_object_get(t, "exitCode")));
			return;
		}
	}
	snprintf(buf, n, "pod %s: phase %s", name ? name : "?",
		 json_string_value(json_object_get(st, "phase")) ?: "unknown");
}

static const char *trouble_fix(const char *why)
{
	if (strstr(why, "Insufficient") || strstr(why, "Unschedulable"))
		return "Check the resource name and that the device plugin advertises it on that node (kubectl describe node); "
		       "rdmak doctor on the node says why a resource is missing.";
	if (strstr(why, "ImagePull") || strstr(why, "ErrImage"))
		return "Build deploy/bench.Dockerfile and push it to a registry the nodes can pull from, then give --registry "
		       "(or --image).";
	return "kubectl describe pod shows the events.";
}

/* ---- the run ---------------------------------------------------------------------------------- */

static int exec_args(const struct k8s_opts *o, int role, const char *server_ip, char ***ret)
{
	char **v = NULL;
	size_t n = 0;
	int r = 0;
	const char *head[] = { o->kubectl,
			       "exec",
			       "-n",
			       o->ns,
			       o->pod[role],
			       "-c",
			       "bench",
			       "--",
			       "rdmak",
			       "bench",
			       role ? "client" : "server",
			       "--json" };

	for (size_t i = 0; i < ELEMENTSOF(head); i++)
		r |= strv_extend(&v, &n, head[i]);
	if (o->gpu) {
		r |= strv_extend(&v, &n, "--gpu");
		r |= strv_extend(&v, &n, "auto");
	}
	for (size_t i = 0; i < o->n_bench_args; i++)
		r |= strv_extend(&v, &n, o->bench_args[i]);
	if (role)
		r |= strv_extend(&v, &n, server_ip);
	if (o->n_passthrough) {
		r |= strv_extend(&v, &n, "--");
		for (size_t i = 0; i < o->n_passthrough; i++)
			r |= strv_extend(&v, &n, o->passthrough[i]);
	}
	if (r < 0 || !v) {
		strv_free(v);
		return -ENOMEM;
	}
	*ret = v;
	return 0;
}

static json_t *parse_doc(const struct proc *p)
{
	json_t *d = p->obuf ? json_loads(p->obuf, 0, NULL) : NULL;

	if (d && !json_is_object(d)) {
		json_decref(d);
		d = NULL;
	}
	return d;
}

static void add_reason(json_t *reasons, enum bench_status st, const char *code, const char *fix,
		       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void add_reason(json_t *reasons, enum bench_status st, const char *code, const char *fix,
		       const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	json_array_append_new(reasons,
			      json_pack("{s:s, s:s, s:s, s:s?}", "status", bench_status_name(st),
					"code", code, "text", text, "fix", fix));
}

/* The path: the client's figure against the lower of the two sides' ceilings; every other
 * reason of either side counts as it stands. */
static json_t *judge_path(const json_t *server, const json_t *client,
			  const struct bench_thresholds *t)
{
	json_t *reasons = json_array(), *path;
	const json_t *sides[2] = { json_array_get(json_object_get(server, "sides"), 0),
				   json_array_get(json_object_get(client, "sides"), 0) };
	const char *names[2] = { "server", "client" };
	enum bench_status worst = BENCH_PASS;
	double gbps = NAN, ceil = INFINITY;
	int lim = -1;

	/* rails: each pod judged its rails and their total; the pair of sides is per rail */
	if (json_array_size(json_object_get(server, "sides")) > 1 ||
	    json_array_size(json_object_get(client, "sides")) > 1) {
		for (int s = 0; s < 2; s++) {
			enum bench_status st = bench_status_parse(
				json_string_value(json_object_get(s ? client : server, "verdict")));

			if ((s ? client : server) && st > worst)
				worst = st;
		}
		add_reason(
			reasons, worst, "rails",
			worst == BENCH_PASS ? NULL : "See each pod's rails below.",
			"rails: each pod judged its rails and their total (client %s, server %s)",
			client ? json_string_value(json_object_get(client, "verdict")) : "-",
			server ? json_string_value(json_object_get(server, "verdict")) : "-");
		return json_pack("{s:s, s:n, s:n, s:n, s:n, s:o}", "verdict",
				 bench_status_name(worst), "gbps", "ceiling_gbps", "percent",
				 "limited_by", "reasons", reasons);
	}

	/* the client first: at equal ceilings the side that measured is named */
	for (int s = 1; s >= 0; s--) {
		const json_t *c = json_object_get(sides[s], "ceiling"), *r;
		size_t i;

		if (!sides[s])
			continue;
		if (json_is_true(json_object_get(c, "known")) &&
		    json_number_value(json_object_get(c, "gbps")) < ceil) {
			ceil = json_number_value(json_object_get(c, "gbps"));
			lim = s;
		}
		json_array_foreach(json_object_get(sides[s], "reasons"), i, r)
		{
			const char *code = json_string_value(json_object_get(r, "code"));
			enum bench_status st =
				bench_status_parse(json_string_value(json_object_get(r, "status")));

			if (!code || !strcmp(code, "measured"))
				continue;
			if (st > worst)
				worst = st;
		}
		if (json_array_size(json_object_get(sides[s], "reasons")) == 0 &&
		    bench_status_parse(json_string_value(json_object_get(sides[s], "verdict"))) >
			    worst)
			worst = bench_status_parse(
				json_string_value(json_object_get(sides[s], "verdict")));
	}
	if (sides[1] && json_is_number(json_object_get(sides[1], "gbps")))
		gbps = json_number_value(json_object_get(sides[1], "gbps"));
	else if (sides[0] && json_is_number(json_object_get(sides[0], "gbps")))
		gbps = json_number_value(json_object_get(sides[0], "gbps"));
	if (!isnan(gbps) && lim >= 0) {
		const json_t *c = json_object_get(sides[lim], "ceiling");
		const json_t *f = NULL, *x;
		const char *by = json_string_value(json_object_get(c, "limited_by"));
		double pct = gbps / ceil * 100;
		enum bench_status st = bench_above_ceiling(gbps, ceil)
					       ? BENCH_INVALID
					       : bench_verdict_status_for(pct, gbps, t);
		size_t i;

		json_array_foreach(
			json_object_get(c, "factors"), i,
			x) if (!f || json_number_value(json_object_get(x, "gbps")) <
					     json_number_value(json_object_get(f, "gbps"))) f = x;
		if (st == BENCH_PASS && json_is_true(json_object_get(c, "placement")))
			st = BENCH_WARN;
		add_reason(
			reasons, st, "measured",
			st == BENCH_PASS ? NULL : "See the sides' reasons below.",
			"%.2f Gb/s is %.0f %% of the %.1f Gb/s the path can carry (the %s's %s: %s)",
			gbps, floor(pct), ceil, names[lim], by ? by : "?",
			f ? json_string_value(json_object_get(f, "phrase")) : "?");
		if (st > worst)
			worst = st;
	}
	path = json_pack("{s:s, s:o, s:o, s:o, s:s?, s:o}", "verdict", bench_status_name(worst),
			 "gbps", isnan(gbps) ? json_null() : json_real(gbps), "ceiling_gbps",
			 lim >= 0 ? json_real(ceil) : json_null(), "percent",
			 lim >= 0 && !isnan(gbps) ? json_real(floor(gbps / ceil * 1000) / 10)
						  : json_null(),
			 "limited_by", lim >= 0 ? names[lim] : NULL, "reasons", reasons);
	return path;
}

static int print_run_text(const json_t *res)
{
	const json_t *docs[2] = { json_object_get(res, "server"), json_object_get(res, "client") };
	const json_t *path = json_object_get(res, "path"), *r, *s;
	size_t i;

	for (int k = 0; k < 2; k++)
		if (!json_is_object(docs[k]))
			docs[k] = NULL;

	/* the client's perftest table is the one users read */
	s = json_array_get(json_object_get(docs[1] ? docs[1] : docs[0], "sides"), 0);
	if (json_is_string(json_object_get(s, "output")))
		fputs(json_string_value(json_object_get(s, "output")), stdout);
	for (int k = 0; k < 2; k++) {
		if (!docs[k])
			continue;
		printf("\n-- %s pod %s --", k ? "client" : "server",
		       json_string_value(json_array_get(json_object_get(res, "pods"), k)));
		bench_report_print(stdout, docs[k]);
	}
	printf("\n== rdmak bench k8s: %s ==\n", json_string_value(json_object_get(res, "verdict")));
	json_array_foreach(json_object_get(res, "reasons"), i, r)
	{
		printf("%-4s %s\n", json_string_value(json_object_get(r, "status")),
		       json_string_value(json_object_get(r, "text")));
		if (json_is_string(json_object_get(r, "fix")))
			printf("     fix: %s\n", json_string_value(json_object_get(r, "fix")));
	}
	json_array_foreach(json_object_get(path, "reasons"), i, r)
		printf("%-4s %s\n", json_string_value(json_object_get(r, "status")),
		       json_string_value(json_object_get(r, "text")));
	return ferror(stdout) ? -EIO : 0;
}

static int k8s_run(const struct k8s_opts *o, const json_t *pods, const struct bench_thresholds *t)
{
	struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
	struct proc p = { .out = -1, .err = -1 }, srv = { .out = -1, .err = -1 },
		    cli = { .out = -1, .err = -1 };
	_cleanup_free_ char *yaml = NULL;
	_cleanup_strv_free_ char **sargv = NULL, **cargv = NULL;
	json_t *res = json_object(), *reasons = json_array(), *sdoc = NULL, *cdoc = NULL, *got;
	char ip[64] = "", why[1024], tmo[32];
	size_t ylen = 0;
	FILE *mf;
	bool created = false;
	int r, ret = BENCH_EXIT_FAIL;

	mf = open_memstream(&yaml, &ylen);
	if (!mf || !res || !reasons || print_yaml(mf, pods) < 0 || fclose(mf) != 0) {
		fprintf(stderr, "rdmak bench k8s: %s\n", strerror(ENOMEM));
		json_decref(res);
		json_decref(reasons);
		return BENCH_EXIT_FAIL;
	}
	interrupted = 0;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);

	fprintf(stderr, "rdmak bench k8s: creating pod/%s on %s and pod/%s on %s\n", o->pod[0],
		o->nodes[0], o->pod[1], o->nodes[1]);
	r = kubectl(o, &p, yaml, "create", "-f", "-", NULL);
	/* even a failed create may have made one of them */
	created = true;
	if (r != 0) {
		add_reason(
			reasons, BENCH_FAIL, r == -EINTR ? "interrupted" : "kubectl",
			"Check kubectl's access to the cluster (kubectl auth can-i create pods).",
			"kubectl create failed%s: %s", r == -EINTR ? " (interrupted)" : "",
			p.ebuf ? p.ebuf : strerror(-r));
		goto done;
	}
	proc_free(&p);
	fprintf(stderr, "rdmak bench k8s: waiting up to %u s for both pods to be Ready\n",
		o->timeout);
	snprintf(tmo, sizeof(tmo), "--timeout=%us", o->timeout);
	r = kubectl(o, &p, NULL, "wait", "--for=condition=Ready", "-n", o->ns, tmo, "pod",
		    o->pod[0], o->pod[1], NULL);
	proc_free(&p);
	if (r == -EINTR)
		goto interrupted;
	/* the pods' state: why they are not Ready, or the server's IP */
	if (kubectl(o, &p, NULL, "get", "pod", o->pod[0], o->pod[1], "-n", o->ns, "-o", "json",
		    NULL) == -EINTR)
		goto interrupted;
	got = p.obuf ? json_loads(p.obuf, 0, NULL) : NULL;
	if (r != 0) {
		const json_t *it;
		size_t i;
		bool said = false;

		json_array_foreach(json_object_get(got, "items"), i, it)
		{
			if (json_is_string(
				    json_object_get(json_object_get(it, "status"), "podIP")) &&
			    !strcmp(json_string_value(
					    json_object_get(json_object_get(it, "status"), "phase"))
					    ?: "",
				    "Running"))
				continue;
			pod_trouble(it, why, sizeof(why));
			add_reason(reasons, BENCH_FAIL, "pod_not_ready", trouble_fix(why), "%s",
				   why);
			said = true;
		}
		if (!said)
			add_reason(reasons, BENCH_FAIL, "pod_not_ready",
				   "kubectl describe pod shows the events.",
				   "the pods were not Ready within %u s", o->timeout);
		json_decref(got);
		goto done;
	}
	{
		const json_t *it;
		size_t i;

		json_array_foreach(json_object_get(got, "items"), i, it) if (
			!strcmp(json_string_value(
					json_object_get(json_object_get(it, "metadata"), "name"))
					?: "",
				o->pod[0]) &&
			json_is_string(json_object_get(json_object_get(it, "status"), "podIP")))
			str_copy(ip, sizeof(ip),
				 json_string_value(
					 json_object_get(json_object_get(it, "status"), "podIP")));
	}
	json_decref(got);
	proc_free(&p);
	if (!ip[0]) {
		add_reason(reasons, BENCH_FAIL, "no_pod_ip", "kubectl get pod -o wide shows it.",
			   "pod %s has no IP", o->pod[0]);
		goto done;
	}
	/* the server first, and the client only once perftest listens */
	if (exec_args(o, 0, NULL, &sargv) < 0 || exec_args(o, 1, ip, &cargv) < 0 ||
	    proc_start(&srv, sargv, NULL) < 0)
		goto done;
	fprintf(stderr, "rdmak bench k8s: starting the server in pod/%s (%s)\n", o->pod[0], ip);
	r = proc_pump(&srv, "rdmak bench: ready", time(NULL) + 120);
	if (r == -EINTR)
		goto interrupted;
	if (r != 1) {
		/* it ended (no usable device, ...) or never got ready: its own document says why */
		if (r == 0 && srv.status < 0)
			proc_kill(&srv);
		sdoc = parse_doc(&srv);
		if (!sdoc)
			add_reason(reasons, BENCH_FAIL, "server_failed",
				   "Run rdmak bench server in the pod by hand to see it.",
				   "the server never got ready: %s",
				   srv.ebuf ? srv.ebuf : "no output");
		goto done;
	}
	fprintf(stderr, "rdmak bench k8s: running the client in pod/%s\n", o->pod[1]);
	if (proc_start(&cli, cargv, NULL) < 0)
		goto done;
	r = proc_pump(&cli, NULL, 0);
	if (r == -EINTR)
		goto interrupted;
	/* the server ends with its client; one that waits for a client that died is stopped */
	r = proc_pump(&srv, NULL, time(NULL) + 30);
	if (r == -EINTR)
		goto interrupted;
	if (srv.status < 0)
		proc_kill(&srv);
	sdoc = parse_doc(&srv);
	cdoc = parse_doc(&cli);
	if (!cdoc)
		add_reason(reasons, BENCH_FAIL, "client_failed",
			   "Run rdmak bench client in the pod by hand to see it.",
			   "the client gave no result (exit %d): %s", cli.status,
			   cli.ebuf ? cli.ebuf : "no output");
	goto done;
interrupted:
	add_reason(reasons, BENCH_FAIL, "interrupted", NULL, "interrupted by signal %d",
		   (int)interrupted);
	proc_kill(&srv);
	proc_kill(&cli);
	proc_kill(&p);
done:
	if (created)
		delete_pods(o);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	{
		json_t *path = sdoc || cdoc ? judge_path(sdoc, cdoc, t) : NULL;
		enum bench_status worst = path ? bench_status_parse(json_string_value(
							 json_object_get(path, "verdict")))
					       : BENCH_PASS;
		const json_t *x;
		size_t i;

		json_array_foreach(reasons, i, x) if (bench_status_parse(json_string_value(
							      json_object_get(x, "status"))) >
						      worst) worst =
			bench_status_parse(json_string_value(json_object_get(x, "status")));
		if (!sdoc && !cdoc && !json_array_size(reasons))
			worst = BENCH_FAIL;
		json_object_set_new(res, "mode", json_string("k8s"));
		json_object_set_new(res, "verdict", json_string(bench_status_name(worst)));
		json_object_set_new(res, "namespace", json_string(o->ns));
		json_object_set_new(res, "pods", json_pack("[s,s]", o->pod[0], o->pod[1]));
		json_object_set_new(res, "server_ip", ip[0] ? json_string(ip) : json_null());
		json_object_set_new(res, "reasons", reasons);
		json_object_set_new(res, "path", path ? path : json_null());
		json_object_set_new(res, "server", sdoc ? sdoc : json_null());
		json_object_set_new(res, "client", cdoc ? cdoc : json_null());
		if ((o->json ? doc_json(stdout, res) : print_run_text(res)) < 0)
			fprintf(stderr, "rdmak bench k8s: writing the result failed\n");
		ret = bench_exit_code(worst);
	}
	proc_free(&p);
	proc_free(&srv);
	proc_free(&cli);
	json_decref(res);
	return ret;
}

/* ---- options ------------------------------------------------------------------------------------ */

static int parse(int argc, char **argv, struct k8s_opts *o, struct bench_thresholds *t)
{
	static const struct option opts[] = { { "resource", required_argument, NULL, 'r' },
					      { "count", required_argument, NULL, 'c' },
					      { "node", required_argument, NULL, 'n' },
					      { "image", required_argument, NULL, 'i' },
					      { "registry", required_argument, NULL, 'R' },
					      { "namespace", required_argument, NULL, 'N' },
					      { "networks", required_argument, NULL, 'w' },
					      { "gpu", no_argument, NULL, 'g' },
					      { "name", required_argument, NULL, 'm' },
					      { "run", no_argument, NULL, 'X' },
					      { "kubectl", required_argument, NULL, 'k' },
					      { "timeout", required_argument, NULL, 't' },
					      { "json", no_argument, NULL, 'j' },
					      { "help", no_argument, NULL, 'h' },
					      /* passed on to rdmak bench in the pods */
					      { "test", required_argument, NULL, 1 },
					      { "qps", required_argument, NULL, 1 },
					      { "size", required_argument, NULL, 1 },
					      { "all", no_argument, NULL, 2 },
					      { "duration", required_argument, NULL, 1 },
					      { "rails", no_argument, NULL, 2 },
					      { "min-percent", required_argument, NULL, 1 },
					      { "min-gbps", required_argument, NULL, 1 },
					      { "max-usec", required_argument, NULL, 1 },
					      {} };
	static char *fwd[64];
	const char *why;
	int ch, idx, dashes = argc;
	unsigned long long v;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			dashes = i;
			break;
		}
	/* set before any return: the caller frees the flags made so far */
	o->bench_args = fwd;
	optind = 1;
	while ((ch = getopt_long(dashes, argv, "q:s:aD:jh", opts, &idx)) != -1) {
		switch (ch) {
		case 'r': {
			char *eq = strchr(optarg, '=');

			if (o->n_res == ELEMENTSOF(o->res)) {
				fprintf(stderr, "rdmak bench k8s: too many --resource\n");
				return BENCH_EXIT_USAGE;
			}
			o->res[o->n_res].count = 0;
			if (eq) {
				*eq = '\0';
				if (opt_uint("bench k8s", "--resource", eq + 1, 1, 1024, "", &v) <
				    0)
					return BENCH_EXIT_USAGE;
				o->res[o->n_res].count = (unsigned)v;
			}
			if (!k8s_extended_resource_name(optarg, &why)) {
				fprintf(stderr,
					"rdmak bench k8s: --resource '%s' is not an "
					"extended resource name (vendor/name): %s\n",
					optarg, why);
				return BENCH_EXIT_USAGE;
			}
			o->res[o->n_res++].name = optarg;
			break;
		}
		case 'c':
			if (opt_uint("bench k8s", "--count", optarg, 1, 1024, "", &v) < 0)
				return BENCH_EXIT_USAGE;
			o->count = (unsigned)v;
			break;
		case 'n':
			if (o->n_nodes == 2 || !k8s_dns1123_subdomain(optarg, &why)) {
				fprintf(stderr, "rdmak bench k8s: --node %s: %s\n", optarg,
					o->n_nodes == 2 ? "give exactly two (server, client)"
							: why);
				return BENCH_EXIT_USAGE;
			}
			o->nodes[o->n_nodes++] = optarg;
			break;
		case 'i': o->image = optarg; break;
		case 'R': o->registry = optarg; break;
		case 'N':
			if (!k8s_dns1123_label(optarg, &why)) {
				fprintf(stderr,
					"rdmak bench k8s: --namespace '%s' is not a "
					"namespace name: %s\n",
					optarg, why);
				return BENCH_EXIT_USAGE;
			}
			o->ns = optarg;
			break;
		case 'w': o->networks = optarg; break;
		case 'g': o->gpu = true; break;
		case 'm':
			/* a DNS label that leaves room for the pods' suffixes */
			if (!k8s_dns1123_label(optarg, NULL) || strlen(optarg) > 56) {
				fprintf(stderr,
					"rdmak bench k8s: --name '%s': lower-case letters, digits and '-', at most 56\n",
					optarg);
				return BENCH_EXIT_USAGE;
			}
			o->name = optarg;
			break;
		case 'X': o->run = true; break;
		case 'k': o->kubectl = optarg; break;
		case 't':
			if (opt_uint("bench k8s", "--timeout", optarg, 1, 86400, "s", &v) < 0)
				return BENCH_EXIT_USAGE;
			o->timeout = (unsigned)v;
			break;
		case 'j': o->json = true; break;
		case 'h': usage(stdout); return -1;
		case 1:
		case 2:
		case 'q':
		case 's':
		case 'a':
		case 'D': {
			const char *name = ch == 'q'   ? "qps"
					   : ch == 's' ? "size"
					   : ch == 'a' ? "all"
					   : ch == 'D' ? "duration"
						       : opts[idx].name;
			char *flag;

			if (o->n_bench_args + 2 > ELEMENTSOF(fwd) ||
			    asprintf(&flag, "--%s", name) < 0)
				return BENCH_EXIT_USAGE;
			fwd[o->n_bench_args++] = flag;
			if (ch == 'q' || ch == 's' || ch == 'D' || ch == 1)
				fwd[o->n_bench_args++] = optarg;
			if (!strcmp(name, "rails"))
				o->rails = true;
			/* the pods' thresholds, checked here and judged here too */
			if (ch == 1 &&
			    bench_thresholds_option(t, "bench k8s", flag, optarg) == -EINVAL)
				return BENCH_EXIT_USAGE;
			break;
		}
		default: usage(stderr); return BENCH_EXIT_USAGE;
		}
	}
	if (optind < dashes) {
		fprintf(stderr, "rdmak bench k8s: unexpected argument '%s'\n", argv[optind]);
		return BENCH_EXIT_USAGE;
	}
	if (dashes < argc) {
		o->passthrough = argv + dashes + 1;
		o->n_passthrough = (size_t)(argc - dashes - 1);
	}
	if (!o->n_res || o->n_nodes != 2) {
		fprintf(stderr,
			"rdmak bench k8s: wants --resource and two --node (the server's, then the client's)\n");
		return BENCH_EXIT_USAGE;
	}
	if (o->image && o->registry) {
		fprintf(stderr, "rdmak bench k8s: --image and --registry exclude each other\n");
		return BENCH_EXIT_USAGE;
	}
	return 0;
}

static void free_fwd(struct k8s_opts *o)
{
	for (size_t i = 0; i < o->n_bench_args; i++)
		if (!strncmp(o->bench_args[i], "--", 2))
			free(o->bench_args[i]);
}

int bench_k8s_main(int argc, char **argv)
{
	struct k8s_opts o = { .count = 1, .ns = "default", .kubectl = "kubectl", .timeout = 300 };
	struct bench_thresholds t;
	_cleanup_free_ char *image = NULL, *name = NULL;
	json_t *pods = NULL, *list;
	int r;

	bench_thresholds_default(&t);
	r = parse(argc, argv, &o, &t);
	if (r) {
		free_fwd(&o);
		return r < 0 ? BENCH_EXIT_OK : r;
	}
	if (!o.image) {
		if (o.registry && asprintf(&image, "%s/%s", o.registry, RDMAK_BENCH_IMAGE) < 0) {
			free_fwd(&o);
			return BENCH_EXIT_FAIL;
		}
		o.image = image ? image : RDMAK_BENCH_IMAGE;
	}
	if (!o.name) {
		unsigned rnd = 0;

		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			rnd = (unsigned)time(NULL) ^ (unsigned)getpid();
		if (asprintf(&name, "rdmak-bench-%05x", rnd & 0xfffff) < 0) {
			free_fwd(&o);
			return BENCH_EXIT_FAIL;
		}
		o.name = name;
	}
	snprintf(o.pod[0], sizeof(o.pod[0]), "%s-server", o.name);
	snprintf(o.pod[1], sizeof(o.pod[1]), "%s-client", o.name);
	pods = json_pack("[o,o]", pod(&o, 0), pod(&o, 1));
	if (!pods) {
		free_fwd(&o);
		return BENCH_EXIT_FAIL;
	}
	if (o.run) {
		r = k8s_run(&o, pods, &t);
	} else if (o.json) {
		list = json_pack("{s:s, s:s, s:O}", "apiVersion", "v1", "kind", "List", "items",
				 pods);
		r = doc_json(stdout, list) < 0 ? BENCH_EXIT_FAIL : BENCH_EXIT_OK;
		json_decref(list);
	} else {
		printf("# rdmak bench k8s: two pods for an RDMA test, the server on %s and the client on %s.\n"
		       "# Run it all with --run, or by hand:\n"
		       "#   kubectl create -f THIS-FILE && kubectl wait --for=condition=Ready pod/%s pod/%s -n %s\n"
		       "#   kubectl exec -n %s %s -- rdmak bench server%s\n"
		       "#   kubectl exec -n %s %s -- rdmak bench client%s $(kubectl get pod -n %s %s -o jsonpath='{.status.podIP}')\n"
		       "#   kubectl delete pod -n %s %s %s\n",
		       o.nodes[0], o.nodes[1], o.pod[0], o.pod[1], o.ns, o.ns, o.pod[0],
		       o.gpu ? " --gpu auto" : "", o.ns, o.pod[1], o.gpu ? " --gpu auto" : "", o.ns,
		       o.pod[0], o.ns, o.pod[0], o.pod[1]);
		fflush(stdout);
		r = print_yaml(stdout, pods) < 0 ? BENCH_EXIT_FAIL : BENCH_EXIT_OK;
	}
	json_decref(pods);
	free_fwd(&o);
	return r;
}
