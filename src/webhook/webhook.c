/* SPDX-License-Identifier: Apache-2.0 */
/* `rdmak webhook`: the mutating admission webhook. This file is the role's entry point, the
 * daemon loop (the only place that logs) and --explain/--check; the HTTP server, the config, the
 * merge rules and the AdmissionReview are modules. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "http/http.h"
#include "log/log.h"
#include "doc/doc.h"
#include "roles.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/opt.h"
#include "util/strutil.h"
#include "util/strv.h"
#include "webhook/webhookconf.h"
#include "doc/yaml.h"
#include "webhook/mutate.h"
#include "webhook/patch.h"
#include "webhook/review.h"

#define EXIT_RUNTIME 1
#define EXIT_DENIED  1
#define EXIT_USAGE   2
#define CONFIG_MAX   (4u << 20)
#define POD_MAX	     (16u << 20)

struct opts {
	const char *config, *cert, *key, *listen;
	struct http_limits lim;
	unsigned grace_ms;
	bool explain, check, json;
	const char *pod_file, *ns;
	int verbose;
};

struct daemon {
	const struct opts *o;
	pthread_rwlock_t lock; /* cfg, read by the workers */
	struct webhook_config *cfg;
	char *cfg_text;
	struct http_server *srv;
	atomic_bool ready;
	struct daemon_refusal cfg_refusal, tls_refusal; /* the last refusals logged */
	atomic_uint_fast64_t n_patched, n_unchanged, n_denied, n_bad;
};

/* ---- logging: the server's events, through the one logger ------------------------------- */

static void http_log(void *ud, enum http_log_level level, const char *msg)
{
	log_full((enum log_level)level, "%s", msg);
}

/* ---- config ------------------------------------------------------------------------------- */

static int parse_config(const char *buf, size_t len, void *ret, char *err, size_t errlen)
{
	return webhook_config_parse(buf, len, ret, err, errlen);
}

/* serving: a regular file only, as every role that keeps running (a FIFO would hold the start,
 * and a reload, until a writer came); --check and --explain read a pipe too */
static int load_config(const char *path, bool serving, struct webhook_config **cfg, char **text,
		       char *err, size_t errlen)
{
	return daemon_config_load(path, CONFIG_MAX, serving ? DAEMON_CONFIG_REGULAR : 0,
				  "--check, --explain", parse_config, cfg, text, err, errlen);
}

static char *group_names(const struct webhook_config *cfg)
{
	char *s = NULL;

	for (size_t i = 0; i < cfg->n_groups; i++)
		if (str_append_sep(&s, ", ", "%s", cfg->groups[i].name) < 0)
			break;
	return s;
}

static void reload_config(struct daemon *d, const char *why)
{
	struct webhook_config *cfg = NULL, *old;
	_cleanup_free_ char *text = NULL, *names = NULL;
	char err[512];

	if (load_config(d->o->config, true, &cfg, &text, err, sizeof(err)) < 0) {
		/* checked every second: say it once per distinct refusal */
		if (daemon_refusal_is_new(&d->cfg_refusal, err, text) || !strcmp(why, "SIGHUP"))
			log_error("%s: new config refused, keeping the running one: %s", why, err);
		return;
	}
	daemon_refusal_clear(&d->cfg_refusal);
	if (!strcmp(text, d->cfg_text)) {
		webhook_config_free(cfg);
		return;
	}
	names = group_names(cfg);
	pthread_rwlock_wrlock(&d->lock);
	old = d->cfg;
	d->cfg = cfg;
	free(d->cfg_text);
	d->cfg_text = TAKE_PTR(text);
	pthread_rwlock_unlock(&d->lock);
	webhook_config_free(old);
	log_info("%s: config %s reloaded: %zu groups (%s)", why, d->o->config, cfg->n_groups,
		 names ? names : "");
}

static void reload_tls(struct daemon *d, const char *why)
{
	char err[512];
	int r = http_server_reload_tls(d->srv, err, sizeof(err));

	if (r < 0) {
		if (daemon_refusal_is_new(&d->tls_refusal, err, NULL) || !strcmp(why, "SIGHUP"))
			log_error("%s: new certificate refused, serving the previous one: %s", why,
				  err);
		return;
	}
	daemon_refusal_clear(&d->tls_refusal);
	if (r > 0)
		log_info("%s: certificate reloaded: %s", why, http_server_tls_summary(d->srv));
}

/* ---- HTTP handlers (worker threads) ------------------------------------------------------- */

static int text_response(struct http_response *resp, unsigned status, const char *text)
{
	resp->status = status;
	resp->body = strdup(text);
	resp->body_len = resp->body ? strlen(resp->body) : 0;
	return resp->body ? 0 : -ENOMEM;
}

static int on_mutate(void *ud, const struct http_request *req, struct http_response *resp)
{
	struct daemon *d = ud;
	struct webhook_review_answer a;
	int r;

	/* the API server sends application/json; anything else is not one of its reviews */
	if (!req->content_type || strncasecmp(req->content_type, "application/json", 16) != 0) {
		atomic_fetch_add(&d->n_bad, 1);
		log_warning("POST /mutate with Content-Type %s: refused (415)",
			    req->content_type ? req->content_type : "(none)");
		return text_response(resp, 415, "expected Content-Type: application/json\n");
	}
	pthread_rwlock_rdlock(&d->lock);
	r = webhook_review_handle(d->cfg, req->body, req->body_len, &a);
	pthread_rwlock_unlock(&d->lock);
	if (r < 0)
		return r;
	if (a.http_status != 200)
		atomic_fetch_add(&d->n_bad, 1);
	else if (a.level == WEBHOOK_REVIEW_LOG_WARNING && strstr(a.summary, "refused"))
		atomic_fetch_add(&d->n_denied, 1);
	else if (strstr(a.body, "\"patch\""))
		atomic_fetch_add(&d->n_patched, 1);
	else
		atomic_fetch_add(&d->n_unchanged, 1);
	log_full((enum log_level)a.level, "%s", a.summary);
	resp->status = a.http_status;
	resp->content_type = a.content_type;
	resp->body = TAKE_PTR(a.body);
	resp->body_len = a.body_len;
	webhook_review_answer_clear(&a);
	return 0;
}

static int on_healthz(void *ud, const struct http_request *req, struct http_response *resp)
{
	return text_response(resp, 200, "ok\n");
}

static int on_readyz(void *ud, const struct http_request *req, struct http_response *resp)
{
	struct daemon *d = ud;

	if (!atomic_load(&d->ready))
		return text_response(resp, 503, "shutting down\n");
	return text_response(resp, 200, "ok\n");
}

static const struct http_route routes[] = {
	{ .path = "/mutate", .method = "POST", .handler = on_mutate },
	{ .path = "/healthz", .method = "GET", .handler = on_healthz },
	{ .path = "/readyz", .method = "GET", .handler = on_readyz },
};

/* ---- the loop ------------------------------------------------------------------------------- */

static void log_stats(struct daemon *d)
{
	struct http_stats st;

	http_server_stats(d->srv, &st);
	log_info("served %" PRIu64 " requests on %" PRIu64 " connections: %" PRIu64
		 " patched, %" PRIu64 " unchanged, %" PRIu64 " refused, %" PRIu64
		 " bad requests; %" PRIu64 " slow connections cut",
		 st.requests, st.connections, (uint64_t)atomic_load(&d->n_patched),
		 (uint64_t)atomic_load(&d->n_unchanged), (uint64_t)atomic_load(&d->n_denied),
		 (uint64_t)atomic_load(&d->n_bad), st.cut);
}

static void on_reload(void *ud, enum daemon_reload_reason why)
{
	reload_config(ud, daemon_reload_reason_to_string(why));
	reload_tls(ud, daemon_reload_reason_to_string(why));
}

static const struct daemon_ops loop_ops = { .reload = on_reload };

static int run_loop(struct daemon *d, struct daemon_loop *loop)
{
	int r;

	if ((r = daemon_loop_watch(loop, d->o->config)) < 0 ||
	    (r = daemon_loop_watch(loop, d->o->cert)) < 0 ||
	    (r = daemon_loop_watch(loop, d->o->key)) < 0)
		log_warning(
			"watching the config and certificate folders: %s; changes are noticed by a check every second",
			strerror(-r));
	r = daemon_loop_run(loop);
	if (r < 0) {
		log_error_errno(r, "poll: %m");
		return EXIT_RUNTIME;
	}
	log_info("%s: shutting down (readyz now fails; %u ms for requests in progress)",
		 strsignal(r), d->o->grace_ms);
	return 0;
}

static int serve(const struct opts *o)
{
	struct daemon d = { .o = o };
	struct http_server_config hc = {
		.listen = o->listen,
		.cert_file = o->cert,
		.key_file = o->key,
		.limits = o->lim,
		.routes = routes,
		.n_routes = ELEMENTSOF(routes),
		.userdata = &d,
		.log = http_log,
	};
	struct daemon_loop *loop = NULL;
	_cleanup_free_ char *names = NULL;
	char err[512];
	int r, ret;

	if (load_config(o->config, true, &d.cfg, &d.cfg_text, err, sizeof(err)) < 0) {
		fprintf(stderr, "rdmak webhook: %s\n", err);
		free(d.cfg_text);
		return EXIT_USAGE;
	}
	pthread_rwlock_init(&d.lock, NULL);
	/* before the workers start, so that they inherit its signal mask */
	r = daemon_loop_new(&loop_ops, &d, &loop);
	if (r < 0) {
		fprintf(stderr, "rdmak webhook: the daemon loop: %s\n", strerror(-r));
		ret = EXIT_RUNTIME;
		goto out;
	}
	r = http_server_start(&hc, &d.srv, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "rdmak webhook: %s\n", err);
		ret = r == -EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
		goto out;
	}
	atomic_store(&d.ready, true);
	names = group_names(d.cfg);
	log_info("rdmak webhook: config %s: %zu groups (%s)", o->config, d.cfg->n_groups,
		 names ? names : "");
	log_info("certificate %s: %s", o->cert, http_server_tls_summary(d.srv));
	log_info(
		"%u workers, body limit %zu bytes, request timeout %u ms, idle timeout %u s, %u connections",
		o->lim.workers, o->lim.body_max, o->lim.request_timeout_ms, o->lim.idle_timeout_s,
		o->lim.max_connections);
	{
		/* the line tests and operators look for; the port is the kernel's choice for :0 */
		const char *colon = strrchr(o->listen, ':');

		log_info("listening on https://%.*s:%u",
			 colon == o->listen ? 4 : (int)(colon - o->listen),
			 colon == o->listen ? "[::]" : o->listen, http_server_port(d.srv));
	}
	ret = run_loop(&d, loop);
	atomic_store(&d.ready, false);
	http_server_stop(d.srv, o->grace_ms);
	log_stats(&d);
out:
	http_server_free(d.srv);
	daemon_loop_free(loop);
	daemon_refusal_clear(&d.cfg_refusal);
	daemon_refusal_clear(&d.tls_refusal);
	webhook_config_free(d.cfg);
	free(d.cfg_text);
	pthread_rwlock_destroy(&d.lock);
	return ret;
}

/* ---- --check -------------------------------------------------------------------------------- */

static json_t *config_json(const struct webhook_config *cfg)
{
	json_t *groups = json_array(), *doc, *gpus = json_array();

	for (char **p = cfg->gpu_resources; p && *p; p++)
		json_array_append_new(gpus, json_string(*p));
	for (size_t i = 0; i < cfg->n_groups; i++) {
		const struct webhook_group *g = &cfg->groups[i];
		json_t *nets = json_array(), *res = json_object();

		for (size_t j = 0; j < g->n_networks; j++) {
			const struct webhook_network *n = &g->networks[j];

			json_array_append_new(nets,
					      json_pack("{s:s, s:s, s:s?, s:s?, s:i}", "namespace",
							n->namespace, "name", n->name, "interface",
							n->interface, "resource", n->resource,
							"count", (int)n->count));
		}
		for (size_t j = 0; j < g->n_resources; j++)
			json_object_set_new(res, g->resources[j].name,
					    json_integer(g->resources[j].count));
		json_array_append_new(
			groups,
			json_pack("{s:s, s:o, s:o, s:b, s:b, s:s?, s:b, s:s}", "name", g->name,
				  "networks", nets, "resources", res, "ipcLock", g->ipc_lock, "shm",
				  g->shm, "shmSizeLimit", g->shm_size_limit, "memoryLimitWarning",
				  g->memory_warning, "onError",
				  g->on_error == WEBHOOK_ON_ERROR_ALLOW	 ? "allow"
				  : g->on_error == WEBHOOK_ON_ERROR_DENY ? "deny"
									 : "inherit"));
	}
	doc = json_pack("{s:o, s:o, s:s}", "groups", groups, "gpuResources", gpus, "onError",
			cfg->on_error == WEBHOOK_ON_ERROR_ALLOW ? "allow" : "deny");
	return doc;
}

static int check(const struct opts *o)
{
	struct webhook_config *cfg = NULL;
	char err[512];
	int r;

	if (load_config(o->config, false, &cfg, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "rdmak webhook: %s\n", err);
		return EXIT_USAGE;
	}
	if (o->json) {
		json_t *doc = config_json(cfg);

		r = doc ? doc_json(stdout, doc) : -ENOMEM;
		json_decref(doc);
	} else {
		r = 0;
		printf("%s: %zu groups; GPU resources: ", o->config, cfg->n_groups);
		for (char **p = cfg->gpu_resources; *p; p++)
			printf("%s%s", *p, p[1] ? ", " : "\n");
		for (size_t i = 0; i < cfg->n_groups; i++) {
			const struct webhook_group *g = &cfg->groups[i];

			printf("%s: %zu networks, IPC_LOCK %s, /dev/shm %s%s%s, memory-limit warning %s, on error %s\n",
			       g->name, g->n_networks, g->ipc_lock ? "on" : "off",
			       g->shm ? "on" : "off", g->shm_size_limit ? " sizeLimit " : "",
			       g->shm_size_limit ? g->shm_size_limit : "",
			       g->memory_warning ? "on" : "off",
			       (g->on_error ? g->on_error : cfg->on_error) == WEBHOOK_ON_ERROR_ALLOW
				       ? "allow"
				       : "deny");
			for (size_t j = 0; j < g->n_networks; j++) {
				const struct webhook_network *n = &g->networks[j];

				printf("  network %s%s%s%s%s", n->namespace,
				       *n->namespace ? "/" : "", n->name, n->interface ? "@" : "",
				       n->interface ? n->interface : "");
				if (n->resource)
					printf("  %s: %u", n->resource, n->count);
				putchar('\n');
			}
			for (size_t j = 0; j < g->n_resources; j++)
				printf("  resource %s: %u\n", g->resources[j].name,
				       g->resources[j].count);
		}
	}
	webhook_config_free(cfg);
	return fflush(stdout) != 0 || r < 0 ? EXIT_RUNTIME : 0;
}

/* ---- --explain ------------------------------------------------------------------------------ */

struct explained {
	char where[64]; /* "" for a pod, "spec.template", "spec.tasks[0].template" */
	struct webhook_mutate_result mr;
	json_t *patch;
};

/* The pod templates inside a workload: a Pod itself, spec.template (Deployment, DaemonSet,
 * StatefulSet, ReplicaSet, Job), spec.jobTemplate.spec.template (CronJob), spec.tasks[].template
 * (Volcano's Job). */
static size_t find_templates(json_t *obj, json_t **tpl, char (*where)[64], size_t max)
{
	json_t *spec = json_object_get(obj, "spec"), *t, *tasks;
	size_t n = 0, i;
	json_t *task;

	if (!json_is_object(spec) || json_object_get(spec, "containers")) {
		tpl[0] = obj;
		where[0][0] = '\0';
		return 1;
	}
	if (json_is_object(t = json_object_get(spec, "template"))) {
		tpl[n] = t;
		snprintf(where[n++], 64, "spec.template");
	}
	if (json_is_object(t = json_object_get(
				   json_object_get(json_object_get(spec, "jobTemplate"), "spec"),
				   "template"))) {
		tpl[n] = t;
		snprintf(where[n++], 64, "spec.jobTemplate.spec.template");
	}
	tasks = json_object_get(spec, "tasks");
	json_array_foreach(tasks, i, task) if (n < max && json_is_object(t = json_object_get(
										 task, "template")))
	{
		tpl[n] = t;
		snprintf(where[n++], 64, "spec.tasks[%zu].template", i);
	}
	if (n == 0) {
		tpl[0] = obj;
		where[0][0] = '\0';
		return 1;
	}
	return n;
}

static int explain_print_text(const char *file, enum doc_format fmt, json_t *out,
			      struct explained *ex, size_t n)
{
	bool denied = false;

	for (size_t i = 0; i < n; i++) {
		const struct webhook_mutate_result *mr = &ex[i].mr;
		const char *at = ex[i].where[0] ? ex[i].where : "pod";

		/* a refusal first: it can come before the groups are read (review.c does the same) */
		if (mr->denied && !mr->allow_anyway)
			fprintf(stderr, "%s: refused: %s\n", at, mr->denied);
		else if (mr->denied)
			fprintf(stderr, "%s: admitted unchanged (onError: allow): %s\n", at,
				mr->denied);
		else if (!mr->groups)
			fprintf(stderr, "%s: no %s or %s annotation: unchanged\n", at,
				ANNOTATION_GROUPS, ANNOTATION_GROUPS_SPIDERPOOL);
		else if (mr->n_changes == 0)
			fprintf(stderr,
				"%s: groups %s: nothing to add, it has everything already\n", at,
				mr->groups);
		else
			fprintf(stderr, "%s: groups %s, container \"%s\":\n", at, mr->groups,
				mr->container);
		for (size_t j = 0; j < mr->n_changes && !mr->denied; j++)
			fprintf(stderr, "  + %s\n", mr->changes[j]);
		for (size_t j = 0; j < mr->n_warnings; j++)
			fprintf(stderr, "warning: %s\n", mr->warnings[j]);
		denied |= mr->denied && !mr->allow_anyway;
	}
	if (denied)
		return EXIT_DENIED;
	if (fmt == DOC_YAML)
		return doc_write_yaml(stdout, out) < 0 ? EXIT_RUNTIME : 0;
	return doc_json(stdout, out) < 0 ? EXIT_RUNTIME : 0;
}

static json_t *strv_json(char **v)
{
	json_t *a = json_array();

	for (; a && v && *v; v++)
		json_array_append_new(a, json_string(*v));
	return a;
}

static int explain_print_json(json_t *out, struct explained *ex, size_t n)
{
	json_t *results = json_array(), *doc;
	bool denied = false;
	int r;

	for (size_t i = 0; i < n; i++) {
		const struct webhook_mutate_result *mr = &ex[i].mr;
		bool refused = mr->denied && !mr->allow_anyway;

		denied |= refused;
		json_array_append_new(results,
				      json_pack("{s:s, s:b, s:s?, s:s?, s:o, s:o, s:s?, s:O?}",
						"template", ex[i].where, "allowed", !refused,
						"groups", mr->groups, "container",
						mr->denied ? NULL : mr->container, "changes",
						strv_json(mr->denied ? NULL : mr->changes),
						"warnings", strv_json(mr->warnings), "message",
						mr->denied, "patch", ex[i].patch));
	}
	doc = json_pack("{s:b, s:o, s:O}", "allowed", !denied, "results", results, "object", out);
	r = doc ? doc_json(stdout, doc) : -ENOMEM;
	json_decref(doc);
	if (r < 0)
		return EXIT_RUNTIME;
	return denied ? EXIT_DENIED : 0;
}

static int explain(const struct opts *o)
{
	struct webhook_config *cfg = NULL;
	_cleanup_free_ char *buf = NULL;
	json_t *obj = NULL, *out = NULL, *tpl[32];
	char where[32][64], err[512];
	struct explained ex[32];
	enum doc_format fmt = DOC_JSON;
	const char *ns;
	size_t len = 0, n = 0;
	int r, ret = EXIT_RUNTIME;

	memset(ex, 0, sizeof(ex));
	if (load_config(o->config, false, &cfg, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "rdmak webhook: %s\n", err);
		return EXIT_USAGE;
	}
	r = fileio_read_at(AT_FDCWD, o->pod_file, POD_MAX, &buf, &len);
	if (r < 0) {
		fprintf(stderr, "rdmak webhook: %s: %s\n", o->pod_file, strerror(-r));
		ret = EXIT_USAGE;
		goto out;
	}
	if (doc_parse(buf, len, &obj, &fmt, err, sizeof(err)) < 0) {
		fprintf(stderr, "rdmak webhook: %s: %s\n", o->pod_file, err);
		ret = EXIT_USAGE;
		goto out;
	}
	ns = o->ns ? o->ns
		   : json_string_value(
			     json_object_get(json_object_get(obj, "metadata"), "namespace"));
	out = json_deep_copy(obj);
	if (!out)
		goto out;
	n = find_templates(out, tpl, where, ELEMENTSOF(tpl));
	for (size_t i = 0; i < n; i++) {
		snprintf(ex[i].where, sizeof(ex[i].where), "%s", where[i]);
		if (webhook_mutate_pod(cfg, tpl[i], ns, &ex[i].mr) < 0)
			goto out;
		ex[i].patch = webhook_patch_diff(tpl[i], ex[i].mr.pod);
		if (!ex[i].patch)
			goto out;
	}
	/* put the mutated templates in place (after every diff: a Pod is its own template) */
	for (size_t i = 0; i < n; i++) {
		if (!ex[i].mr.denied && json_object_update(tpl[i], ex[i].mr.pod) < 0)
			goto out;
		/* keys the mutation removed (an empty object it did not need) go too */
		{
			const char *k;
			json_t *v;
			void *tmp;

			json_object_foreach_safe(tpl[i], tmp, k,
						 v) if (!ex[i].mr.denied &&
							!json_object_get(ex[i].mr.pod, k))
				json_object_del(tpl[i], k);
		}
	}
	ret = o->json ? explain_print_json(out, ex, n)
		      : explain_print_text(o->pod_file, fmt, out, ex, n);
	if (fflush(stdout) != 0)
		ret = EXIT_RUNTIME;
out:
	for (size_t i = 0; i < n; i++) {
		webhook_mutate_result_clear(&ex[i].mr);
		json_decref(ex[i].patch);
	}
	json_decref(obj);
	json_decref(out);
	webhook_config_free(cfg);
	return ret;
}

/* ---- role entry --------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fputs("Usage: rdmak webhook --config FILE --tls-cert FILE --tls-key FILE [options]\n"
	      "       rdmak webhook --explain --config FILE [--json] [--namespace NS] POD.{json,yaml}\n"
	      "       rdmak webhook --check --config FILE [--json]\n"
	      "Mutating admission webhook: a pod annotated rdmak.io/rdma-networks: <group> (or Spiderpool's\n"
	      "cni.spidernet.io/rdma-resource-inject) gets the group's RDMA networks, their resources,\n"
	      "IPC_LOCK and a memory-backed /dev/shm. See docs/webhook.md.\n\n"
	      "  -c, --config FILE          groups, JSON or YAML (reloaded when it changes)\n"
	      "      --tls-cert FILE        PEM certificate (and chain), reloaded when it changes\n"
	      "      --tls-key FILE         PEM private key, reloaded with the certificate\n"
	      "      --listen ADDR:PORT     default :8443 (every address); port 0 picks a free one\n"
	      "      --workers N            threads serving connections (default 4)\n"
	      "      --max-body BYTES       request body limit (default 3145728, the API server's own)\n"
	      "      --request-timeout S    from a request's first line to its answer (default 10)\n"
	      "      --idle-timeout S       keep-alive connections idle this long are closed (default 60)\n"
	      "      --tls-handshake-timeout S  from accept to the end of the TLS handshake (default 5)\n"
	      "      --max-connections N    default 256\n"
	      "      --max-connections-per-ip N  default 0 (no limit)\n"
	      "      --shutdown-grace S     on SIGTERM, time for requests in progress (default 5)\n"
	      "      --explain              print the pod (or workload) FILE as the webhook would admit it\n"
	      "                             (stdout, same format as FILE), changes and warnings on stderr\n"
	      "      --namespace NS         with --explain: the pod's namespace (default: its own, or default)\n"
	      "      --check                check the config and print its groups\n"
	      "  -j, --json                 with --explain or --check: JSON (docs/webhook.md)\n"
	      "  -v, --verbose              log pods left alone and TLS/HTTP details too\n"
	      "  -h, --help                 this text\n\n"
	      "Exit: 0 done (--explain: admitted), 1 runtime failure (--explain: the webhook would refuse\n"
	      "the pod), 2 bad usage, config, certificate or input file.\n"
	      "SIGHUP or a changed file reloads the config and the certificate; SIGTERM stops gracefully.\n",
	      f);
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	enum {
		O_CERT = 256,
		O_KEY,
		O_LISTEN,
		O_WORKERS,
		O_BODY,
		O_REQ,
		O_IDLE,
		O_HANDSHAKE,
		O_CONNS,
		O_PERIP,
		O_GRACE,
		O_EXPLAIN,
		O_NS,
		O_CHECK
	};
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "tls-cert", required_argument, NULL, O_CERT },
		{ "tls-key", required_argument, NULL, O_KEY },
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "workers", required_argument, NULL, O_WORKERS },
		{ "max-body", required_argument, NULL, O_BODY },
		{ "request-timeout", required_argument, NULL, O_REQ },
		{ "idle-timeout", required_argument, NULL, O_IDLE },
		{ "tls-handshake-timeout", required_argument, NULL, O_HANDSHAKE },
		{ "max-connections", required_argument, NULL, O_CONNS },
		{ "max-connections-per-ip", required_argument, NULL, O_PERIP },
		{ "shutdown-grace", required_argument, NULL, O_GRACE },
		{ "explain", no_argument, NULL, O_EXPLAIN },
		{ "namespace", required_argument, NULL, O_NS },
		{ "check", no_argument, NULL, O_CHECK },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned long long v;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "c:jvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': o->config = optarg; break;
		case O_CERT: o->cert = optarg; break;
		case O_KEY: o->key = optarg; break;
		case O_LISTEN: {
			struct sockaddr_storage ss;
			unsigned sl;
			const char *why;

			if (http_listen_parse(optarg, &ss, &sl, &why) < 0) {
				fprintf(stderr, "rdmak webhook: --listen %s: %s\n", optarg, why);
				return -EINVAL;
			}
			o->listen = optarg;
			break;
		}
		case O_WORKERS:
			if (opt_uint("webhook", "--workers", optarg, 1, 64, "", &v) < 0)
				return -EINVAL;
			o->lim.workers = (unsigned)v;
			break;
		case O_BODY:
			if (opt_uint("webhook", "--max-body", optarg, 1024, 64u << 20, "bytes",
				     &v) < 0)
				return -EINVAL;
			o->lim.body_max = (size_t)v;
			break;
		case O_REQ:
			if (opt_decimal("webhook", "--request-timeout", optarg, 3, 100, 600000, "s",
					&v) < 0)
				return -EINVAL;
			o->lim.request_timeout_ms = (unsigned)v;
			break;
		case O_IDLE:
			if (opt_uint("webhook", "--idle-timeout", optarg, 1, 3600, "s", &v) < 0)
				return -EINVAL;
			o->lim.idle_timeout_s = (unsigned)v;
			break;
		case O_HANDSHAKE:
			if (opt_decimal("webhook", "--tls-handshake-timeout", optarg, 3, 100, 60000,
					"s", &v) < 0)
				return -EINVAL;
			o->lim.handshake_timeout_ms = (unsigned)v;
			break;
		case O_CONNS:
			if (opt_uint("webhook", "--max-connections", optarg, 1, 65536, "", &v) < 0)
				return -EINVAL;
			o->lim.max_connections = (unsigned)v;
			break;
		case O_PERIP:
			if (opt_uint("webhook", "--max-connections-per-ip", optarg, 0, 65536, "",
				     &v) < 0)
				return -EINVAL;
			o->lim.max_per_ip = (unsigned)v;
			break;
		case O_GRACE:
			if (opt_decimal("webhook", "--shutdown-grace", optarg, 3, 0, 600000, "s",
					&v) < 0)
				return -EINVAL;
			o->grace_ms = (unsigned)v;
			break;
		case O_EXPLAIN: o->explain = true; break;
		case O_NS: o->ns = optarg; break;
		case O_CHECK: o->check = true; break;
		case 'j': o->json = true; break;
		case 'v': o->verbose++; break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return -EINVAL;
		}
	}
	if (!o->config) {
		fprintf(stderr, "rdmak webhook: --config FILE is required\n");
		return -EINVAL;
	}
	if (o->explain && o->check) {
		fprintf(stderr, "rdmak webhook: --explain and --check do not go together\n");
		return -EINVAL;
	}
	if (o->explain) {
		if (optind + 1 != argc) {
			fprintf(stderr, "rdmak webhook: --explain takes one pod file\n");
			return -EINVAL;
		}
		o->pod_file = argv[optind];
		return 0;
	}
	if (optind < argc) {
		fprintf(stderr, "rdmak webhook: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (o->json && !o->check) {
		fprintf(stderr, "rdmak webhook: --json goes with --explain or --check\n");
		return -EINVAL;
	}
	if (o->ns) {
		fprintf(stderr, "rdmak webhook: --namespace goes with --explain\n");
		return -EINVAL;
	}
	if (!o->check && (!o->cert || !o->key)) {
		fprintf(stderr, "rdmak webhook: --tls-cert and --tls-key are required to serve\n");
		return -EINVAL;
	}
	return 0;
}

int webhook_main(int argc, char **argv)
{
	struct opts o = { .listen = ":8443", .lim = HTTP_DEFAULT_LIMITS, .grace_ms = 5000 };
	int r;

	r = parse_args(argc, argv, &o);
	if (r != 0)
		return r > 0 ? 0 : EXIT_USAGE;
	log_set_program("webhook");
	log_set_time(true);
	log_set_max_level(o.verbose ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO);
	if (o.check)
		return check(&o);
	if (o.explain)
		return explain(&o);
	return serve(&o);
}
