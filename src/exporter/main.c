/* SPDX-License-Identifier: Apache-2.0 */
/* `rdmak exporter`: the role. Options, the HTTP server (plain, or TLS with an optional bearer
 * token), the daemon loop (signals, the token and key pair reloaded when their files change,
 * the topology refreshed every --refresh seconds). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "exporter/exporter.h"
#include "http/http.h"
#include "hw/hw.h"
#include "kubelet/kubelet.h"
#include "log/log.h"
#include "pool/config.h"
#include "roles.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strutil.h"

/* Exit codes, as --help and docs/exporter.md name them. */
enum { EXPORTER_EXIT_OK = 0, EXPORTER_EXIT_RUNTIME = 1, EXPORTER_EXIT_USAGE = 2 };

#define TOKEN_MAX 4096

struct opts {
	struct hw_roots roots;
	const char *listen, *cert, *key, *token_file, *client_ca;
	unsigned max_scrapes, refresh_s;
	unsigned max_buffered_mib; /* answers held at once (http_limits.answers_max) */
	bool once, openmetrics;
	/* which pod: the kubelet's pod-resources socket (NULL: <root>/var/lib/kubelet/...),
	 * rdmak plugin's config for shared pools */
	const char *pod_resources, *plugin_config;
	const char *procfs;	 /* the pids of counter objects (NULL: /proc) */
	const char *netns_dir;	 /* --netns-dir: pods' network namespace files */
	const char *netns_sysfs; /* --netns-sysfs: their sysfs trees, already there */
	bool no_pod_resources;
	bool no_io_uring;
	enum exporter_vf_series vf_series;
	unsigned pods_max_age_ms;
	int verbose;
};

struct daemon {
	const struct opts *o;
	struct exporter *exp;
	struct http_server *srv;
	pthread_mutex_t token_lock;
	char *token; /* NULL: no token asked for */
	struct daemon_refusal token_refusal, tls_refusal;
	int64_t next_refresh_ms;
	atomic_uint_fast64_t n_scrapes, n_busy, n_unauthorized;
	int pods_logged; /* the attribution state last logged: 0 none, 1 up, -errno down */
};

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void http_log(void *ud, enum http_log_level level, const char *msg)
{
	log_full((enum log_level)level, "%s", msg);
}

/* ---- the bearer token ----------------------------------------------------------------------- */

static int token_read(const char *path, char **ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r = fileio_read_regular_at(AT_FDCWD, path, TOKEN_MAX, &buf, &len);

	if (r < 0)
		return r;
	str_rstrip(buf);
	if (!buf[0] || strpbrk(buf, " \t\r\n"))
		return -EINVAL; /* empty, or not one token */
	*ret = TAKE_PTR(buf);
	return 0;
}

/* In constant time for equal lengths: the length leaks, the bytes do not. */
static bool token_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;

	for (size_t i = 0; i < la && i < lb; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

static bool authorized(struct daemon *d, const struct http_request *req)
{
	bool ok;

	pthread_mutex_lock(&d->token_lock);
	ok = !d->token || (req->authorization && !strncasecmp(req->authorization, "Bearer ", 7) &&
			   token_equal(req->authorization + 7, d->token));
	pthread_mutex_unlock(&d->token_lock);
	return ok;
}

static void reload_token(struct daemon *d, const char *why)
{
	char *t = NULL;
	int r;

	if (!d->o->token_file)
		return;
	r = token_read(d->o->token_file, &t);
	if (r < 0) {
		char msg[512];

		snprintf(msg, sizeof(msg), "%s: %s", d->o->token_file,
			 r == -EINVAL ? "not one token" : fileio_strerror(r));
		if (daemon_refusal_is_new(&d->token_refusal, msg, NULL))
			log_error("%s: bearer token refused, keeping the previous one: %s", why,
				  msg);
		return;
	}
	daemon_refusal_clear(&d->token_refusal);
	pthread_mutex_lock(&d->token_lock);
	if (d->token && !strcmp(d->token, t)) {
		pthread_mutex_unlock(&d->token_lock);
		free(t);
		return;
	}
	free(d->token);
	d->token = t;
	pthread_mutex_unlock(&d->token_lock);
	log_info("%s: bearer token (re)loaded from %s", why, d->o->token_file);
}

/* ---- HTTP handlers -------------------------------------------------------------------------- */

static int text_response(struct http_response *resp, unsigned status, const char *text)
{
	resp->status = status;
	resp->body = strdup(text);
	resp->body_len = resp->body ? strlen(resp->body) : 0;
	return resp->body ? 0 : -ENOMEM;
}

static int on_metrics(void *ud, const struct http_request *req, struct http_response *resp)
{
	struct daemon *d = ud;
	enum exporter_format f = exporter_format_from_accept(req->accept);
	int r;

	if (!authorized(d, req)) {
		atomic_fetch_add(&d->n_unauthorized, 1);
		return text_response(resp, 401,
				     "a bearer token is needed (Authorization: Bearer ...)\n");
	}
	r = exporter_scrape(d->exp, f, &resp->body, &resp->body_len);
	if (r == -EBUSY) {
		atomic_fetch_add(&d->n_busy, 1);
		resp->retry_after_s = 1;
		return text_response(resp, 503, "too many scrapes in progress\n");
	}
	if (r < 0)
		return r;
	atomic_fetch_add(&d->n_scrapes, 1);
	resp->content_type = exporter_content_type(f);
	/* gzip'd for a client that takes it, as node_exporter's are (Prometheus asks): a scrape of
	 * a large node is megabytes of text, and a twentieth of that compressed */
	resp->gzip = true;
	return 0;
}

static int on_healthz(void *ud, const struct http_request *req, struct http_response *resp)
{
	return text_response(resp, 200, "ok\n");
}

/* A scrape runs on a thread of its own: a sysfs read that hangs must not hold the worker that
 * answers /healthz on its other connections */
static const struct http_route routes[] = {
	{ .path = "/metrics", .method = "GET", .handler = on_metrics, .own_thread = true },
	{ .path = "/healthz", .method = "GET", .handler = on_healthz },
};

/* ---- the loop ----------------------------------------------------------------------------------
 */

/* Log a change of the pod attribution's state once (a missing socket is one line, not one per
 * scrape). */
static void log_pods(struct exporter *exp, int *logged)
{
	char why[256];
	int st = exporter_pods_status(exp, NULL, why, sizeof(why));

	if (st == 0 || st == *logged)
		return;
	if (st < 0)
		log_warning(
			"pod attribution off: %s (retried at the next scrapes; the counters are served "
			"without pod labels)",
			why);
	else
		log_info("pod attribution on: the kubelet's PodResources List answered");
	*logged = st;
}

static void refresh(struct daemon *d, const char *why)
{
	struct hw_error err = { 0 };
	int r = exporter_refresh(d->exp, &err);

	if (r < 0)
		log_warning_errno(
			r, "%s: reloading the RDMA topology: %s%s%m; serving the previous one", why,
			err.path, err.path[0] ? ": " : "");
	else
		log_debug("%s: RDMA topology reloaded", why);
}

static void on_reload(void *ud, enum daemon_reload_reason why)
{
	struct daemon *d = ud;
	const char *w = daemon_reload_reason_to_string(why);
	char err[512];
	int r;

	reload_token(d, w);
	r = http_server_reload_tls(d->srv, err, sizeof(err));
	if (r < 0) {
		if (daemon_refusal_is_new(&d->tls_refusal, err, NULL) ||
		    why == DAEMON_RELOAD_SIGNAL)
			log_error("%s: new certificate refused, serving the previous one: %s", w,
				  err);
	} else {
		daemon_refusal_clear(&d->tls_refusal);
		if (r > 0)
			log_info("%s: certificate reloaded: %s", w,
				 http_server_tls_summary(d->srv));
	}
	if (why == DAEMON_RELOAD_SIGNAL)
		refresh(d, w);
}

static int on_tick(void *ud)
{
	struct daemon *d = ud;
	int64_t now = now_ms();

	int64_t left;

	if (now >= d->next_refresh_ms) {
		refresh(d, "periodic refresh");
		d->next_refresh_ms = now_ms() + (int64_t)d->o->refresh_s * 1000;
	}
	log_pods(d->exp, &d->pods_logged);
	left = d->next_refresh_ms - now_ms() > 0 ? d->next_refresh_ms - now_ms() : 0;
	/* the attribution's state is looked at every second */
	return (int)(left > 1000 ? 1000 : left);
}

static const struct daemon_ops loop_ops = { .reload = on_reload, .tick = on_tick };

/* One directory fd per port folder: a node with 8 PFs and 1016 VFs holds ~3000. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int serve(const struct opts *o, struct exporter *exp)
{
	struct daemon d = { .o = o, .exp = exp };
	struct http_limits lim = HTTP_DEFAULT_LIMITS;
	struct http_server_config hc = {
		.listen = o->listen,
		.cert_file = o->cert,
		.key_file = o->key,
		.client_ca_file = o->client_ca,
		.routes = routes,
		.n_routes = ELEMENTSOF(routes),
		.userdata = &d,
		.log = http_log,
	};
	struct daemon_loop *loop = NULL;
	struct http_stats hs;
	char err[512];
	int r, ret = EXPORTER_EXIT_RUNTIME;

	/* GET only: a small body and header limit. The default workers: a scrape is built on a
	 * thread of its own (the route's own_thread), at most --max-scrapes at once; what the
	 * answers hold is bounded by --max-buffered, not by their number */
	lim.body_max = 4096;
	lim.header_max = 16u << 10;
	lim.answers_max = (size_t)o->max_buffered_mib << 20;
	hc.limits = lim;
	pthread_mutex_init(&d.token_lock, NULL);
	if (o->token_file) {
		r = token_read(o->token_file, &d.token);
		if (r < 0) {
			fprintf(stderr, "rdmak exporter: --bearer-token-file %s: %s\n",
				o->token_file, r == -EINVAL ? "not one token" : fileio_strerror(r));
			ret = EXPORTER_EXIT_USAGE;
			goto out;
		}
	}
	r = daemon_loop_new(&loop_ops, &d, &loop);
	if (r < 0) {
		fprintf(stderr, "rdmak exporter: the daemon loop: %s\n", strerror(-r));
		goto out;
	}
	r = http_server_start(&hc, &d.srv, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "rdmak exporter: %s\n", err);
		ret = r == -EINVAL ? EXPORTER_EXIT_USAGE : EXPORTER_EXIT_RUNTIME;
		goto out;
	}
	if (o->cert && ((r = daemon_loop_watch(loop, o->cert)) < 0 ||
			(r = daemon_loop_watch(loop, o->key)) < 0))
		log_warning("watching the certificate folder: %s; changes are noticed by a check "
			    "every second",
			    strerror(-r));
	if (o->client_ca && (r = daemon_loop_watch(loop, o->client_ca)) < 0)
		log_warning(
			"watching the client CA's folder: %s; changes are noticed by a check every "
			"second",
			strerror(-r));
	if (o->token_file && (r = daemon_loop_watch(loop, o->token_file)) < 0)
		log_warning("watching the token folder: %s; changes are noticed by a check every "
			    "second",
			    strerror(-r));
	d.next_refresh_ms = now_ms() + (int64_t)o->refresh_s * 1000;
	{
		/* the line tests and operators look for; the port is the kernel's choice for :0 */
		const char *colon = strrchr(o->listen, ':');

		log_info("listening on %s://%.*s:%u (%s%s%s), at most %u scrapes and %u MiB of "
			 "answers at once, topology refreshed every %u s",
			 o->cert ? "https" : "http",
			 colon == o->listen ? 4 : (int)(colon - o->listen),
			 colon == o->listen ? "[::]" : o->listen, http_server_port(d.srv),
			 http_server_tls_summary(d.srv),
			 o->client_ca ? ", client certificate required" : "",
			 d.token ? ", bearer token" : "", o->max_scrapes, o->max_buffered_mib,
			 o->refresh_s);
	}
	r = daemon_loop_run(loop);
	if (r < 0) {
		log_error_errno(r, "poll: %m");
		goto out;
	}
	http_server_stats(d.srv, &hs);
	log_info("%s: shutting down after %" PRIu64 " scrapes (%" PRIu64 " sent gzip'd, %" PRIu64
		 " refused as too many at once, %" PRIu64 " without the token)",
		 strsignal(r), (uint64_t)atomic_load(&d.n_scrapes), hs.gzipped,
		 (uint64_t)atomic_load(&d.n_busy), (uint64_t)atomic_load(&d.n_unauthorized));
	http_server_stop(d.srv, 2000);
	ret = EXPORTER_EXIT_OK;
out:
	http_server_free(d.srv);
	daemon_loop_free(loop);
	daemon_refusal_clear(&d.token_refusal);
	daemon_refusal_clear(&d.tls_refusal);
	free(d.token);
	pthread_mutex_destroy(&d.token_lock);
	return ret;
}

static int once(const struct opts *o, struct exporter *exp)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r = exporter_scrape(exp, o->openmetrics ? EXPORTER_OPENMETRICS : EXPORTER_TEXT, &buf,
				&len);

	if (r < 0) {
		fprintf(stderr, "rdmak exporter: %s\n", strerror(-r));
		return EXPORTER_EXIT_RUNTIME;
	}
	{
		int logged = 0;

		log_pods(exp, &logged);
	}
	if (fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0) {
		fprintf(stderr, "rdmak exporter: writing the metrics: %s\n", strerror(errno));
		return EXPORTER_EXIT_RUNTIME;
	}
	return EXPORTER_EXIT_OK;
}

/* ---- options ------------------------------------------------------------------------------------
 */

static void usage(FILE *f)
{
	fputs("Usage: rdmak exporter [--listen ADDR:PORT] [--root DIR] [options]\n"
	      "       rdmak exporter --once [--openmetrics] [--root DIR]\n"
	      "Serve this node's RDMA counters to Prometheus: node_exporter's infiniband metrics "
	      "(same names and\n"
	      "values), every hw_counters file, port info, PCIe link speed and width, the doctor's "
	      "findings.\n"
	      "See docs/exporter.md.\n\n"
	      "      --listen ADDR:PORT     default :9436 (every address); port 0 picks a free "
	      "one\n" HW_ROOT_USAGE "      --tls-cert FILE        serve HTTPS with this PEM "
	      "certificate (reloaded when it changes)\n"
	      "      --tls-key FILE         its PEM private key\n"
	      "      --client-ca FILE       require a client certificate signed by a CA of this PEM "
	      "file (reloaded when it\n"
	      "                             changes); a client without one is refused in the TLS "
	      "handshake\n"
	      "      --bearer-token-file FILE  /metrics answers 401 without \"Authorization: "
	      "Bearer <the file's token>\"\n"
	      "      --max-scrapes N        scrapes built at once; more are answered 503 with "
	      "Retry-After (default 40)\n"
	      "      --max-buffered MIB     answers held at once, built or being sent, in MiB "
	      "(default 24); past it the\n"
	      "                             connections whose clients read slowest are closed, "
	      "or the scrape is answered 503\n"
	      "      --refresh S            reload the topology and the doctor's findings every S "
	      "seconds (default 60;\n"
	      "                             a change of the device set reloads at the next scrape "
	      "anyway)\n"
	      "      --pod-resources SOCKET the kubelet's PodResources socket: k8s_namespace_name, "
	      "k8s_pod_name and\n"
	      "                             k8s_container_name on the series of a device a pod "
	      "holds (default\n"
	      "                             ROOT/var/lib/kubelet/pod-resources/kubelet.sock)\n"
	      "      --no-pod-resources     no pod attribution\n"
	      "      --plugin-config FILE   rdmak plugin's config: which HCAs its shared resources "
	      "cover\n"
	      "      --pod-resources-max-age MS  a scrape asks the kubelet again when its answer is "
	      "older (default 5000)\n"
	      "      --procfs DIR           where the pid of a per-process RDMA counter object is "
	      "looked up for its pod\n"
	      "                             (default /proc, this process's pid namespace: not under "
	      "--root)\n"
	      "      --netns-dir DIR        also the RDMA devices moved into pods' network "
	      "namespaces (exclusive RDMA\n"
	      "                             netns mode): DIR holds the namespace files "
	      "(/var/run/netns); each is entered\n"
	      "                             at every scrape to mount its own sysfs (needs "
	      "CAP_SYS_ADMIN)\n"
	      "      --netns-sysfs DIR      the same from sysfs trees already there, one folder "
	      "per namespace (a capture)\n"
	      "      --vf-series held|all   held (the default): each VF a pod holds has its own "
	      "series, the other VFs'\n"
	      "                             counters are summed per PF port (rdmak_idle_vfs_*); "
	      "all: every VF's series\n"
	      "      --no-io-uring          read the counter files with an openat, read and close "
	      "each, not in batches\n"
	      "                             through io_uring (the same values; io_uring is used "
	      "where the kernel offers it)\n"
	      "      --once                 write one scrape to stdout and exit\n"
	      "      --openmetrics          with --once: the OpenMetrics format\n"
	      "  -v, --verbose              log debug lines too\n"
	      "  -h, --help                 this text\n\n"
	      "Exit: 0 stopped by SIGTERM or SIGINT (--once: written), 1 runtime failure (the "
	      "sysfs root missing, the\n"
	      "address in use, stdout unwritable, --netns-dir without CAP_SYS_ADMIN), 2 bad usage, "
	      "certificate or token\n"
	      "file, a --netns-dir or --netns-sysfs folder that is not there.\n",
	      f);
}

static int parse_uint(const char *opt, const char *s, unsigned long long min,
		      unsigned long long max, unsigned *ret)
{
	unsigned long long v;

	if (str_to_u64(s, 10, &v) < 0 || v < min || v > max) {
		fprintf(stderr, "rdmak exporter: %s: expected %llu to %llu, got '%s'\n", opt, min,
			max, s);
		return -EINVAL;
	}
	*ret = (unsigned)v;
	return 0;
}

/* 1: --help printed; 0: go on; -EINVAL: usage printed. */
static int parse_args(int argc, char **argv, struct opts *o)
{
	enum {
		O_LISTEN = 256,
		O_CERT,
		O_KEY,
		O_TOKEN,
		O_MAX,
		O_REFRESH,
		O_ONCE,
		O_OM,
		O_PODRES,
		O_NO_PODRES,
		O_PLUGIN_CONFIG,
		O_PODS_AGE,
		O_CLIENT_CA,
		O_PROCFS,
		O_NO_IO_URING,
		O_NETNS_DIR,
		O_NETNS_SYSFS,
		O_MAX_BUFFERED,
		O_VF_SERIES
	};
	static const struct option longopts[] = {
		HW_ROOT_LONGOPTS,
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "tls-cert", required_argument, NULL, O_CERT },
		{ "tls-key", required_argument, NULL, O_KEY },
		{ "client-ca", required_argument, NULL, O_CLIENT_CA },
		{ "bearer-token-file", required_argument, NULL, O_TOKEN },
		{ "max-scrapes", required_argument, NULL, O_MAX },
		{ "max-buffered", required_argument, NULL, O_MAX_BUFFERED },
		{ "refresh", required_argument, NULL, O_REFRESH },
		{ "once", no_argument, NULL, O_ONCE },
		{ "pod-resources", required_argument, NULL, O_PODRES },
		{ "no-pod-resources", no_argument, NULL, O_NO_PODRES },
		{ "plugin-config", required_argument, NULL, O_PLUGIN_CONFIG },
		{ "pod-resources-max-age", required_argument, NULL, O_PODS_AGE },
		{ "procfs", required_argument, NULL, O_PROCFS },
		{ "openmetrics", no_argument, NULL, O_OM },
		{ "no-io-uring", no_argument, NULL, O_NO_IO_URING },
		{ "netns-dir", required_argument, NULL, O_NETNS_DIR },
		{ "netns-sysfs", required_argument, NULL, O_NETNS_SYSFS },
		{ "vf-series", required_argument, NULL, O_VF_SERIES },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		if (hw_roots_option(&o->roots, c, optarg))
			continue;
		switch (c) {
		case O_LISTEN: {
			struct sockaddr_storage ss;
			unsigned sl;
			const char *why;

			if (http_listen_parse(optarg, &ss, &sl, &why) < 0) {
				fprintf(stderr, "rdmak exporter: --listen %s: %s\n", optarg, why);
				return -EINVAL;
			}
			o->listen = optarg;
			break;
		}
		case O_CERT: o->cert = optarg; break;
		case O_KEY: o->key = optarg; break;
		case O_CLIENT_CA: o->client_ca = optarg; break;
		case O_TOKEN: o->token_file = optarg; break;
		case O_MAX:
			if (parse_uint("--max-scrapes", optarg, 1, 63, &o->max_scrapes) < 0)
				return -EINVAL;
			break;
		case O_MAX_BUFFERED:
			if (parse_uint("--max-buffered", optarg, 1, 4096, &o->max_buffered_mib) < 0)
				return -EINVAL;
			break;
		case O_REFRESH:
			if (parse_uint("--refresh", optarg, 1, 86400, &o->refresh_s) < 0)
				return -EINVAL;
			break;
		case O_ONCE: o->once = true; break;
		case O_PODRES: o->pod_resources = optarg; break;
		case O_NO_PODRES: o->no_pod_resources = true; break;
		case O_PLUGIN_CONFIG: o->plugin_config = optarg; break;
		case O_PROCFS: o->procfs = optarg; break;
		case O_PODS_AGE:
			if (parse_uint("--pod-resources-max-age", optarg, 1, 3600000,
				       &o->pods_max_age_ms) < 0)
				return -EINVAL;
			break;
		case O_OM: o->openmetrics = true; break;
		case O_NO_IO_URING: o->no_io_uring = true; break;
		case O_NETNS_DIR: o->netns_dir = optarg; break;
		case O_NETNS_SYSFS: o->netns_sysfs = optarg; break;
		case O_VF_SERIES:
			if (exporter_vf_series_parse(optarg, &o->vf_series) < 0) {
				fprintf(stderr,
					"rdmak exporter: --vf-series: expected held or all, got "
					"'%s'\n",
					optarg);
				return -EINVAL;
			}
			break;
		case 'v': o->verbose++; break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rdmak exporter: unexpected argument '%s'\n\n", argv[optind]);
		usage(stderr);
		return -EINVAL;
	}
	if (!o->cert != !o->key) {
		fprintf(stderr, "rdmak exporter: --tls-cert and --tls-key go together\n");
		return -EINVAL;
	}
	if (o->no_pod_resources && (o->pod_resources || o->plugin_config)) {
		fprintf(stderr,
			"rdmak exporter: --no-pod-resources goes with neither --pod-resources nor "
			"--plugin-config\n");
		return -EINVAL;
	}
	if (o->client_ca && !o->cert) {
		fprintf(stderr,
			"rdmak exporter: --client-ca needs --tls-cert and --tls-key (client "
			"certificates are TLS's)\n");
		return -EINVAL;
	}
	if (o->netns_dir && o->netns_sysfs) {
		fprintf(stderr, "rdmak exporter: --netns-dir and --netns-sysfs: one or the other "
				"(namespaces to enter, or their sysfs trees)\n");
		return -EINVAL;
	}
	if (o->openmetrics && !o->once) {
		fprintf(stderr, "rdmak exporter: --openmetrics goes with --once (a scrape asks "
				"with its Accept header)\n");
		return -EINVAL;
	}
	if (o->once && (o->cert || o->token_file || o->client_ca)) {
		fprintf(stderr, "rdmak exporter: --once serves nothing: --tls-cert, --tls-key, "
				"--client-ca and --bearer-token-file do not apply\n");
		return -EINVAL;
	}
	return 0;
}

/* Pod attribution, unless --no-pod-resources: nothing is called yet (a missing socket is found,
 * and logged once, at the first scrape). --plugin-config is read as rdmak plugin reads it: a
 * regular file, but for --once, which reads it once and exits (a pipe then too). */
static int pods_enable(const struct opts *o, struct exporter *exp)
{
	struct exporter_pods_config pc = { .max_age_ms = o->pods_max_age_ms };
	char sock[PATH_MAX], err[768];
	int r;

	if (o->no_pod_resources)
		return 0;
	if (o->pod_resources)
		snprintf(sock, sizeof(sock), "%s", o->pod_resources);
	else
		snprintf(sock, sizeof(sock), "%s%s", o->roots.root ? o->roots.root : "",
			 KUBELET_POD_RESOURCES_SOCKET);
	pc.socket = sock;
	if (o->plugin_config && pool_config_load(o->plugin_config, o->once ? POOL_CONFIG_ONCE : 0,
						 &pc.plugin_config, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "rdmak exporter: --plugin-config %s\n", err);
		return -EINVAL;
	}
	r = exporter_pods_enable(exp, &pc, err, sizeof(err));
	if (r < 0) {
		pool_config_free(pc.plugin_config);
		fprintf(stderr, "rdmak exporter: --pod-resources %s\n", err);
		return -EINVAL;
	}
	return 0;
}

/* --netns-dir / --netns-sysfs. -EINVAL: the folder is not there (usage); -EPERM, -ENOSYS: this
 * process cannot enter a namespace and mount a sysfs there (runtime). */
static int netns_enable(const struct opts *o, struct exporter *exp)
{
	const char *dir = o->netns_dir ? o->netns_dir : o->netns_sysfs;
	const char *opt = o->netns_dir ? "--netns-dir" : "--netns-sysfs";
	int r;

	if (!dir)
		return 0;
	r = exporter_netns_enable(exp, dir, !o->netns_dir);
	if (r == -EPERM || r == -ENOSYS) {
		fprintf(stderr,
			"rdmak exporter: %s %s: cannot enter a network namespace and mount its "
			"sysfs: %s (%s)\n",
			opt, dir, strerror(-r),
			r == -EPERM ? "needs CAP_SYS_ADMIN: the chart's exporter.netns.enabled"
				    : "needs Linux 5.2 or later");
		return r;
	}
	if (r < 0) {
		fprintf(stderr, "rdmak exporter: %s %s: %s\n", opt, dir, strerror(-r));
		return -EINVAL;
	}
	if (r == 0)
		log_info("%s %s: the RDMA netns mode is not exclusive (ib_core netns_mode), so "
			 "every RDMA device is in the host's view; the namespaces are looked at "
			 "only while the mode is exclusive",
			 opt, dir);
	else
		log_info("%s %s: RDMA devices in pods' network namespaces are read at every "
			 "scrape",
			 opt, dir);
	return 0;
}

int exporter_main(int argc, char **argv)
{
	struct opts o = {
		.listen = ":9436", .max_scrapes = 40, .max_buffered_mib = 24, .refresh_s = 60
	};
	struct exporter *exp = NULL;
	struct hw_ctx *ctx = NULL;
	struct hw_error herr = { 0 };
	char missing[PATH_MAX];
	int r, ret;

	r = parse_args(argc, argv, &o);
	if (r != 0)
		return r > 0 ? EXPORTER_EXIT_OK : EXPORTER_EXIT_USAGE;
	log_set_program("exporter");
	log_set_time(!o.once);
	log_set_max_level(o.verbose ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO);
	if (log_parse_environment() < 0)
		log_warning("RDMAK_LOG_FORMAT: expected text or json; keeping text");
	raise_nofile();
	/* A scrape's answer is megabytes. With glibc's default, the mmap threshold rises to the size
	 * of the first such block freed, and later answers come from the threads' arenas, which keep
	 * the memory after free: the process grew with every answer held at once and never gave it
	 * back. A fixed threshold (which also stops it moving) maps every large block, and a freed
	 * one goes back to the kernel at once: what --max-buffered bounds is what stays resident. */
	mallopt(M_MMAP_THRESHOLD, 256 << 10);
	r = hw_ctx_new_roots(&o.roots, &ctx, missing, sizeof(missing));
	if (r < 0) {
		fprintf(stderr, "rdmak exporter: %s: %s\n", missing, strerror(-r));
		return EXPORTER_EXIT_RUNTIME;
	}
	r = exporter_new(ctx, o.max_scrapes, &exp, &herr);
	if (r < 0) {
		fprintf(stderr, "rdmak exporter: loading the RDMA topology: %s%s%s\n", herr.path,
			herr.path[0] ? ": " : "", hw_strerror(-r));
		hw_ctx_free(ctx);
		return EXPORTER_EXIT_RUNTIME;
	}
	r = pods_enable(&o, exp);
	if (r < 0) {
		exporter_free(exp);
		hw_ctx_free(ctx);
		return r == -EINVAL ? EXPORTER_EXIT_USAGE : EXPORTER_EXIT_RUNTIME;
	}
	r = netns_enable(&o, exp);
	if (r < 0) {
		exporter_free(exp);
		hw_ctx_free(ctx);
		return r == -EINVAL ? EXPORTER_EXIT_USAGE : EXPORTER_EXIT_RUNTIME;
	}
	r = exporter_rdma_enable(exp);
	if (r < 0) /* once: the scrapes then go without these series, never failing for them */
		log_info(
			"RDMA netlink: %s; no rdmak_rdma_counter_* series (counter objects bound to QPs)",
			r == -EPROTONOSUPPORT ? "no RDMA subsystem in this kernel" : strerror(-r));
	else if ((r = exporter_rdma_procfs(exp, o.procfs ? o.procfs : "/proc")) < 0)
		log_warning(
			"--procfs %s: %s; no rdmak_rdma_counter_pod_info (the pods of per-process "
			"counter objects)",
			o.procfs ? o.procfs : "/proc", strerror(-r));
	exporter_set_vf_series(exp, o.vf_series);
	r = exporter_set_io_uring(exp, !o.no_io_uring);
	if (r < 0)
		log_info(
			"io_uring: %s; each counter file is read with an openat, a read and a close",
			strerror(-r));
	ret = o.once ? once(&o, exp) : serve(&o, exp);
	exporter_free(exp);
	hw_ctx_free(ctx);
	return ret;
}
