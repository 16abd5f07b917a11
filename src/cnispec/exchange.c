/* SPDX-License-Identifier: Apache-2.0 */
/* A CNI plugin's main: the exchange with the runtime, in one place for every rdmak plugin.
 * stdout carries exactly one thing: the result (ADD), the VERSION answer, or the error object;
 * nothing at all for a successful DEL, CHECK, GC or STATUS. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cnispec/cnispec.h"
#include "log/log.h"
#include "util/cleanup.h"
#include "util/fileio.h"

#define STDIN_MAX (4u << 20)

/* Every line of this run is "<prog> <CMD> <id>/<ifname>: <level>: ..."; env may be NULL. */
static void log_name(const char *prog, const struct cnispec_env *env)
{
	char name[LOG_PROGRAM_MAX];

	if (env && env->cmd != CNISPEC_CMD_NONE && env->container_id && env->ifname)
		snprintf(name, sizeof(name), "%s %s %.12s/%s", prog, cnispec_cmd_name(env->cmd),
			 env->container_id, env->ifname);
	else if (env && env->cmd != CNISPEC_CMD_NONE)
		snprintf(name, sizeof(name), "%s %s", prog, cnispec_cmd_name(env->cmd));
	else
		snprintf(name, sizeof(name), "%s", prog);
	log_set_program(name);
}

static int read_stdin(int fd, char **ret, size_t *ret_len, struct cnispec_error *err)
{
	int r = fileio_read_fd(fd, STDIN_MAX, ret, ret_len);

	if (r == -ENOMEM)
		return cnispec_fail(err, r, CNISPEC_E_INTERNAL, "out of memory", NULL);
	if (r == -EFBIG)
		return cnispec_fail(err, r, CNISPEC_E_IO,
				    "failed to read the network configuration",
				    "stdin holds more than %u bytes", STDIN_MAX);
	if (r < 0)
		return cnispec_fail(err, r, CNISPEC_E_IO,
				    "failed to read the network configuration", "stdin: %s",
				    strerror(-r));
	return 0;
}

void cnispec_plugin_done_none(void *ctx)
{
	(void)ctx;
}

/* setup, the operation, done: the context lives from one to the other, never longer. */
static int dispatch(const struct cnispec_plugin_ops *ops, const struct cnispec_request *req,
		    struct cnispec_result **result, struct cnispec_error *err)
{
	void *ctx = NULL;
	int r = ops->setup(req, &ctx, err);

	if (r < 0)
		return r;
	switch (req->env->cmd) {
	case CNISPEC_CMD_ADD: r = ops->add(ctx, req, result, err); break;
	case CNISPEC_CMD_DEL: r = ops->del(ctx, req, err); break;
	case CNISPEC_CMD_CHECK: r = ops->check(ctx, req, err); break;
	case CNISPEC_CMD_GC: r = ops->gc(ctx, req, err); break;
	case CNISPEC_CMD_STATUS: r = ops->status(ctx, req, err); break;
	default:
		r = cnispec_fail(err, -EINVAL, CNISPEC_E_ENV,
				 "invalid environment variables: CNI_COMMAND",
				 "CNI_COMMAND: not handled");
		break;
	}
	ops->done(ctx);
	return r;
}

static int version_refused(enum cnispec_cmd cmd, const struct cnispec_conf *conf,
			   struct cnispec_error *err)
{
	return cnispec_fail(err, -ENOTSUP, CNISPEC_E_VERSION, "incompatible CNI version",
			    "%s needs cniVersion %s or later; the configuration says %s",
			    cnispec_cmd_name(cmd), cmd == CNISPEC_CMD_CHECK ? "0.4.0" : "1.1.0",
			    conf->cni_version);
}

int cnispec_plugin_main(const struct cnispec_plugin_ops *ops, char *const *envp, int in_fd,
			FILE *out)
{
	struct cnispec_env env = { 0 };
	struct cnispec_error err = { 0 };
	struct cnispec_conf *conf = NULL;
	struct cnispec_result *result = NULL;
	_cleanup_free_ char *buf = NULL;
	const char *version = NULL;
	size_t len = 0;
	int r;

	r = cnispec_env_parse(envp, &env, &err);
	log_name(ops->name, r == 0 ? &env : NULL);
	if (r == 0)
		r = read_stdin(in_fd, &buf, &len, &err);
	if (r == 0 && env.cmd == CNISPEC_CMD_VERSION) {
		/* a VERSION probe with nothing on stdin still deserves an answer */
		if (len == 0 ||
		    cnispec_conf_parse(buf, len, CNISPEC_CMD_VERSION, &conf, &err) == 0) {
			r = cnispec_version_print(out, conf ? conf->cni_version : NULL);
			goto done;
		}
		r = -EINVAL;
	}
	if (r == 0)
		r = cnispec_conf_parse(buf, len, env.cmd, &conf, &err);
	if (r == 0) {
		version = conf->cni_version;
		if (!cnispec_cmd_allowed(env.cmd, conf->version))
			r = version_refused(env.cmd, conf, &err);
	}
	if (r == 0) {
		struct cnispec_request req = {
			.env = &env, .conf = conf, .buf = buf, .len = len, .envp = envp
		};

		r = dispatch(ops, &req, &result, &err);
		if (r == 0 && env.cmd == CNISPEC_CMD_ADD)
			r = result ? cnispec_result_print(out, result, conf->version)
				   : cnispec_fail(&err, -EINVAL, CNISPEC_E_INTERNAL, "no result",
						  NULL);
	}
done:
	if (r < 0) {
		if (!err.code)
			cnispec_fail(&err, r, CNISPEC_E_INTERNAL, "internal error", "%s",
				     strerror(-r));
		log_error("%s: %s (code %u)", err.msg, err.details, err.code);
		cnispec_error_print(out, version, &err);
	}
	cnispec_result_free(result);
	cnispec_conf_free(conf);
	cnispec_env_clear(&env);
	return r < 0 ? 1 : 0;
}

/* The result as the plugin's process would have printed it and the caller read it back. */
static int result_round_trip(const struct cnispec_plugin_ops *ops, const struct cnispec_result *res,
			     enum cnispec_version v, struct cnispec_result **ret,
			     struct cnispec_error *err)
{
	char why[512];
	json_t *o = cnispec_result_to_json(res, v);
	int r;

	if (!o)
		return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory", NULL);
	r = cnispec_result_from_json(o, v, "result", ret, why, sizeof(why));
	json_decref(o);
	if (r == -ENOMEM)
		return cnispec_fail(err, r, CNISPEC_E_INTERNAL, "out of memory", NULL);
	if (r < 0)
		return cnispec_fail(err, -EBADMSG, CNISPEC_E_DECODE,
				    "invalid result from the delegated plugin", "%s: %s", ops->name,
				    why);
	return 0;
}

static struct {
	const struct cnispec_plugin_ops *ops;
	bool (*here)(const struct cnispec_request *req);
} registered[4];
static size_t n_registered;

int cnispec_plugin_register(const struct cnispec_plugin_ops *ops,
			    bool (*here)(const struct cnispec_request *req))
{
	if (n_registered == ELEMENTSOF(registered))
		return -ENOSPC;
	registered[n_registered].ops = ops;
	registered[n_registered++].here = here;
	return 0;
}

const struct cnispec_plugin_ops *cnispec_plugin_in_process(const struct cnispec_request *req,
							   const char *type)
{
	for (size_t i = 0; type && i < n_registered; i++)
		if (!strcmp(registered[i].ops->name, type) &&
		    cnispec_plugin_is_self(req->env->path, type) == 1 &&
		    (!registered[i].here || registered[i].here(req)))
			return registered[i].ops;
	return NULL;
}

int cnispec_delegate_in_process(const struct cnispec_plugin_ops *ops,
				const struct cnispec_request *req, enum cnispec_cmd cmd,
				struct cnispec_result **ret, struct cnispec_error *err)
{
	struct cnispec_env env = *req->env;
	struct cnispec_request sub = *req;
	struct cnispec_result *result = NULL;
	struct log_saved saved;
	int r;

	env.cmd = cmd;
	sub.env = &env;
	log_push(&saved);
	log_name(ops->name, &env);
	if (!cnispec_cmd_allowed(cmd, req->conf->version))
		r = version_refused(cmd, req->conf, err);
	else
		r = dispatch(ops, &sub, &result, err);
	if (r == 0 && cmd == CNISPEC_CMD_ADD) {
		r = result ? 0 : cnispec_fail(err, -EINVAL, CNISPEC_E_INTERNAL, "no result", NULL);
		if (r == 0 && ret)
			r = result_round_trip(ops, result, req->conf->version, ret, err);
	}
	if (r < 0) {
		if (!err->code)
			cnispec_fail(err, r, CNISPEC_E_INTERNAL, "internal error", "%s",
				     strerror(-r));
		log_error("%s: %s (code %u)", err->msg, err->details, err->code);
		if (r != -EBADMSG)
			r = -EPROTO;
	}
	cnispec_result_free(result);
	log_pop(&saved);
	return r;
}
