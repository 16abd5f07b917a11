/* SPDX-License-Identifier: Apache-2.0 */
/* The CNI environment. Every variable that a plugin turns into a path, a file name or a
 * netlink attribute is checked here, once, so no plugin can forget to. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cnispec/cnispec.h"
#include "k8s/names.h"
#include "util/cleanup.h"

enum { REQ_CONTAINERID = 1, REQ_NETNS = 2, REQ_IFNAME = 4, REQ_PATH = 8 };

/* The spec's "Required environment parameters" per command. */
static unsigned required(enum cnispec_cmd cmd)
{
	switch (cmd) {
	case CNISPEC_CMD_ADD:
	case CNISPEC_CMD_CHECK: return REQ_CONTAINERID | REQ_NETNS | REQ_IFNAME;
	case CNISPEC_CMD_DEL: return REQ_CONTAINERID | REQ_IFNAME;
	case CNISPEC_CMD_GC: return REQ_PATH;
	default: return 0;
	}
}

static const char *env_get(char *const *envp, const char *name)
{
	size_t l = strlen(name);

	for (; envp && *envp; envp++)
		if (strncmp(*envp, name, l) == 0 && (*envp)[l] == '=')
			return *envp + l + 1;
	return NULL;
}

/* Accumulates "NAME: reason; NAME: reason" for the one code-4 error. */
struct problems {
	char text[CNISPEC_DETAILS_MAX];
	char names[128]; /* the six variable names fit */
	size_t n;
};

__attribute__((format(printf, 3, 4))) static void problem(struct problems *p, const char *name,
							  const char *fmt, ...)
{
	size_t l = strlen(p->text), ln = strlen(p->names);
	va_list ap;

	if (p->n++) {
		snprintf(p->text + l, sizeof(p->text) - l, "; ");
		l = strlen(p->text);
	}
	if (!strstr(p->names, name))
		snprintf(p->names + ln, sizeof(p->names) - ln, "%s%s", ln ? ", " : "", name);
	snprintf(p->text + l, sizeof(p->text) - l, "%s: ", name);
	l = strlen(p->text);
	va_start(ap, fmt);
	vsnprintf(p->text + l, sizeof(p->text) - l, fmt, ap);
	va_end(ap);
}

static bool uid_like(const char *s)
{
	if (!*s || strlen(s) > 128)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-')
			return false;
	return true;
}

static void args_clear(struct cnispec_env *env)
{
	for (size_t i = 0; i < env->n_arg; i++) {
		free(env->arg[i].key);
		free(env->arg[i].value);
	}
	free(env->arg);
	env->arg = NULL;
	env->n_arg = 0;
}

/* "K=V;K=V". An empty element (a trailing ';') is skipped; an element without '=' or with an
 * empty key is an error, as libcni's LoadArgs has it. */
static int args_split(struct cnispec_env *env, const char *s, struct problems *p)
{
	const char *cur = s;
	size_t n = 1;

	for (const char *c = s; *c; c++)
		n += *c == ';';
	env->arg = calloc(n, sizeof(*env->arg));
	env->n_arg = 0;
	if (!env->arg)
		return -ENOMEM;
	while (*cur) {
		const char *end = strchrnul(cur, ';');
		const char *eq = memchr(cur, '=', (size_t)(end - cur));

		if (end != cur) {
			if (!eq || eq == cur) {
				problem(p, "CNI_ARGS", "\"%s\" is not KEY=VALUE;KEY=VALUE", s);
				return 0;
			}
			char *key = strndup(cur, (size_t)(eq - cur));
			char *value = strndup(eq + 1, (size_t)(end - eq - 1));

			if (!key || !value) {
				free(key);
				free(value);
				return -ENOMEM;
			}
			env->arg[env->n_arg].key = key;
			env->arg[env->n_arg].value = value;
			env->n_arg++;
		}
		cur = *end ? end + 1 : end;
	}
	return 0;
}

const char *cnispec_env_arg(const struct cnispec_env *env, const char *key)
{
	/* the last one wins, as with a Go map filled in order */
	for (size_t i = env->n_arg; i-- > 0;)
		if (strcmp(env->arg[i].key, key) == 0)
			return env->arg[i].value;
	return NULL;
}

static void pod_args(struct cnispec_env *env, struct problems *p)
{
	const char *why;

	env->pod_namespace = cnispec_env_arg(env, "K8S_POD_NAMESPACE");
	env->pod_name = cnispec_env_arg(env, "K8S_POD_NAME");
	env->pod_uid = cnispec_env_arg(env, "K8S_POD_UID");
	env->pod_infra_container_id = cnispec_env_arg(env, "K8S_POD_INFRA_CONTAINER_ID");
	/* an empty value is the runtime saying "none" (CRI-O passes K8S_POD_UID= for static pods) */
	if (env->pod_namespace && !*env->pod_namespace)
		env->pod_namespace = NULL;
	if (env->pod_name && !*env->pod_name)
		env->pod_name = NULL;
	if (env->pod_uid && !*env->pod_uid)
		env->pod_uid = NULL;
	if (env->pod_infra_container_id && !*env->pod_infra_container_id)
		env->pod_infra_container_id = NULL;
	/* as the API server validates them: a namespace is a DNS label, a pod's name a subdomain */
	if (env->pod_namespace && !k8s_dns1123_label(env->pod_namespace, &why))
		problem(p, "CNI_ARGS",
			"K8S_POD_NAMESPACE \"%s\" is not a Kubernetes namespace name: %s",
			env->pod_namespace, why);
	if (env->pod_name && !k8s_dns1123_subdomain(env->pod_name, &why))
		problem(p, "CNI_ARGS", "K8S_POD_NAME \"%s\" is not a Kubernetes pod name: %s",
			env->pod_name, why);
	if (env->pod_uid && !uid_like(env->pod_uid))
		problem(p, "CNI_ARGS", "K8S_POD_UID \"%s\" is not a UID", env->pod_uid);
	if (env->pod_infra_container_id &&
	    !cnispec_container_id_valid(env->pod_infra_container_id, NULL))
		problem(p, "CNI_ARGS", "K8S_POD_INFRA_CONTAINER_ID \"%s\" is not a container ID",
			env->pod_infra_container_id);
}

/* The CNI_ARGS keys rdmak's plugins read: the pod's identity (what CRI runtimes and Multus
 * pass), IP (host-local's requested address, honoured by rdmak-ipam and passed on by rdmak-cni
 * to its IPAM plugin) and IgnoreUnknown. As libcni's types.LoadArgs has it for the reference
 * plugins, any other key is refused unless IgnoreUnknown is 1 or true: a key the plugin does
 * not read is a request it would silently not honour. Keys match exactly, as Go's field names. */
static const char *const known_args[] = {
	"IgnoreUnknown", "IP", "K8S_POD_NAMESPACE", "K8S_POD_NAME", "K8S_POD_INFRA_CONTAINER_ID",
	"K8S_POD_UID",
};

static bool arg_known(const char *key)
{
	for (size_t i = 0; i < sizeof(known_args) / sizeof(known_args[0]); i++)
		if (!strcmp(key, known_args[i]))
			return true;
	return false;
}

/* IgnoreUnknown's value, as libcni's UnmarshallableBool reads it: 1 or true, 0 or false, any
 * case; 1 true, 0 false, -EINVAL for anything else. */
static int bool_arg(const char *v)
{
	if (!strcasecmp(v, "1") || !strcasecmp(v, "true"))
		return 1;
	if (!strcasecmp(v, "0") || !strcasecmp(v, "false"))
		return 0;
	return -EINVAL;
}

static void args_check(struct cnispec_env *env, struct problems *p)
{
	const char *ignore = cnispec_env_arg(env, "IgnoreUnknown");
	char unknown[256] = "";
	size_t n = 0;
	int b = 0;

	if (ignore && (b = bool_arg(ignore)) < 0)
		problem(p, "CNI_ARGS", "IgnoreUnknown \"%s\" is not 1, true, 0 or false", ignore);
	env->ignore_unknown = b > 0;
	env->ip = cnispec_env_arg(env, "IP");
	if (env->ip && !*env->ip)
		env->ip = NULL; /* "IP=": none, as Go's net.IP reads an empty text */
	if (env->ip) {
		struct cnispec_addr a;

		if (cnispec_addr_parse(env->ip, &a) < 0)
			problem(p, "CNI_ARGS", "IP \"%s\" is not an IP address", env->ip);
	}
	if (env->ignore_unknown)
		return;
	for (size_t i = 0; i < env->n_arg; i++) {
		size_t l = strlen(unknown);

		if (arg_known(env->arg[i].key))
			continue;
		if (n++ < 8)
			snprintf(unknown + l, sizeof(unknown) - l, "%s%s", l ? ", " : "",
				 env->arg[i].key);
	}
	if (n)
		problem(p, "CNI_ARGS",
			"unknown key%s %s%s (known: IP, K8S_POD_NAMESPACE, K8S_POD_NAME, "
			"K8S_POD_INFRA_CONTAINER_ID, K8S_POD_UID; IgnoreUnknown=1 lets others pass)",
			n > 1 ? "s" : "", unknown, n > 8 ? ", ..." : "");
}

/* Copy a variable; "" counts as unset (the spec makes all of them non-empty when given). */
static int take(char *const *envp, const char *name, char **ret)
{
	const char *v = env_get(envp, name);

	*ret = NULL;
	if (!v || !*v)
		return 0;
	*ret = strdup(v);
	return *ret ? 1 : -ENOMEM;
}

static int parse_into(char *const *envp, struct cnispec_env *env, struct problems *p)
{
	const char *cmd = env_get(envp, "CNI_COMMAND");
	const char *why;
	unsigned req;
	int r;

	if (!cmd || !*cmd) {
		problem(p, "CNI_COMMAND", "%s", "not set (ADD, DEL, CHECK, GC, STATUS or VERSION)");
		return 0;
	}
	if (cnispec_cmd_parse(cmd, &env->cmd) < 0) {
		problem(p, "CNI_COMMAND", "\"%s\" is not ADD, DEL, CHECK, GC, STATUS or VERSION",
			cmd);
		return 0;
	}
	/* VERSION needs CNI_COMMAND alone, and libcni's GetVersionInfo (which CRI-O runs on every
	 * network it loads) sets CNI_NETNS, CNI_IFNAME and CNI_PATH to "dummy": read none of them */
	if (env->cmd == CNISPEC_CMD_VERSION)
		return 0;
	req = required(env->cmd);
	if ((r = take(envp, "CNI_CONTAINERID", &env->container_id)) < 0 ||
	    (r = take(envp, "CNI_NETNS", &env->netns)) < 0 ||
	    (r = take(envp, "CNI_IFNAME", &env->ifname)) < 0 ||
	    (r = take(envp, "CNI_ARGS", &env->args)) < 0 ||
	    (r = take(envp, "CNI_PATH", &env->path)) < 0)
		return r;

	if (env->container_id && !cnispec_container_id_valid(env->container_id, &why))
		problem(p, "CNI_CONTAINERID", "\"%s\" %s", env->container_id, why);
	else if (!env->container_id && (req & REQ_CONTAINERID))
		problem(p, "CNI_CONTAINERID", "%s", "not set");
	if (env->ifname && !cnispec_ifname_valid(env->ifname, &why))
		problem(p, "CNI_IFNAME", "\"%s\" %s", env->ifname, why);
	else if (!env->ifname && (req & REQ_IFNAME))
		problem(p, "CNI_IFNAME", "%s", "not set");
	/* a path (/var/run/netns/x, /proc/1234/ns/net): absolute, checked again when opened */
	if (env->netns && (env->netns[0] != '/' || strlen(env->netns) >= 4096))
		problem(p, "CNI_NETNS", "\"%s\" is not an absolute path", env->netns);
	else if (!env->netns && (req & REQ_NETNS))
		problem(p, "CNI_NETNS", "%s", "not set");
	if (!env->path && (req & REQ_PATH))
		problem(p, "CNI_PATH", "%s", "not set");
	if (env->args) {
		r = args_split(env, env->args, p);
		if (r < 0)
			return r;
		pod_args(env, p);
		args_check(env, p);
	}
	return 0;
}

int cnispec_env_parse(char *const *envp, struct cnispec_env *ret, struct cnispec_error *err)
{
	struct cnispec_env env = { 0 };
	struct problems p = { .n = 0 };
	int r;

	p.text[0] = p.names[0] = '\0';
	r = parse_into(envp, &env, &p);
	if (r < 0) {
		cnispec_env_clear(&env);
		return cnispec_fail(err, r, CNISPEC_E_INTERNAL, "out of memory", NULL);
	}
	if (p.n) {
		char msg[CNISPEC_MSG_MAX];

		cnispec_env_clear(&env);
		snprintf(msg, sizeof(msg), "invalid environment variables: %s", p.names);
		return cnispec_fail(err, -EINVAL, CNISPEC_E_ENV, msg, "%s", p.text);
	}
	*ret = env;
	return 0;
}

void cnispec_env_clear(struct cnispec_env *env)
{
	if (!env)
		return;
	args_clear(env);
	free(env->container_id);
	free(env->netns);
	free(env->ifname);
	free(env->args);
	free(env->path);
	memset(env, 0, sizeof(*env));
}
