/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness for the CNI environment as rdmak-cni and rdmak-ipam (root) read it: the
 * runtime's variables and CNI_ARGS, whose K8S_POD_* and IP= come from the pod (Multus passes the
 * pod's names and its "ips" annotation). The input is the environment, one "NAME=value" a line;
 * with the first byte odd, a valid ADD's variables come first, so that CNI_ARGS and the names
 * are reached. What parses is checked: the pod's names are Kubernetes names, the container ID
 * and interface name what they must be, IP= an address, every CNI_ARGS key known unless
 * IgnoreUnknown; a refusal is code 4 with a message.
 *   build/fuzz/fuzz_cnispec_env -max_total_time=60 tests/fuzz/corpus/cnispec_env */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cnispec/cnispec.h"
#include "k8s/names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const base[] = { "CNI_COMMAND=ADD", "CNI_CONTAINERID=0123456789ab",
				    "CNI_NETNS=/run/netns/p", "CNI_IFNAME=net1",
				    "CNI_PATH=/opt/cni/bin" };

static void check(const struct cnispec_env *e)
{
	struct cnispec_addr a;
	const char *why = NULL;

	if (e->pod_namespace && !k8s_dns1123_label(e->pod_namespace, &why))
		__builtin_trap();
	if (e->pod_name && !k8s_dns1123_subdomain(e->pod_name, &why))
		__builtin_trap();
	if (e->ip && cnispec_addr_parse(e->ip, &a) < 0)
		__builtin_trap();
	if (e->container_id && !cnispec_container_id_valid(e->container_id, &why))
		__builtin_trap();
	if (e->ifname && !cnispec_ifname_valid(e->ifname, &why))
		__builtin_trap();
	for (size_t i = 0; i < e->n_arg; i++)
		if (!e->arg[i].key[0] || cnispec_env_arg(e, e->arg[i].key) == NULL)
			__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n_base = size && (data[0] & 1) ? sizeof(base) / sizeof(base[0]) : 0, n = n_base;
	char *text = malloc(size + 1), **envp;
	struct cnispec_env e = { 0 };
	struct cnispec_error err = { 0 };

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (size_t i = 0; i < size; i++)
		n += text[i] == '\n';
	envp = calloc(n + 2, sizeof(char *));
	if (!envp) {
		free(text);
		return 0;
	}
	for (size_t i = 0; i < n_base; i++)
		envp[i] = (char *)base[i];
	n = n_base;
	/* the first byte chose the base; the rest, line by line, is the environment (a NUL ends it,
	 * as it ends an environment string) */
	for (char *line = size ? text + 1 : text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		envp[n++] = line;
	}
	if (cnispec_env_parse(envp, &e, &err) < 0) {
		if (err.code != CNISPEC_E_ENV && err.code != CNISPEC_E_INTERNAL)
			__builtin_trap();
		if (!err.msg[0])
			__builtin_trap();
	} else {
		check(&e);
		cnispec_env_clear(&e);
	}
	free(envp);
	free(text);
	return 0;
}
