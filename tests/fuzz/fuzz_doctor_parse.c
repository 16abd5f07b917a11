/* SPDX-License-Identifier: Apache-2.0 */
/* The doctor's parsers on arbitrary bytes: /proc limits and status, mountinfo and mounts,
 * cgroup values and paths, environment files and the NCCL_IB_HCA / NCCL_SOCKET_IFNAME syntax.
 * No crash, no over-read (the input is not NUL-terminated), and a success leaves a
 * well-formed value. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diag/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct diag_proc_status st;
	struct diag_mount_entry m;
	struct diag_env env;
	struct diag_nccl_list l;
	uint64_t a, b;
	unsigned x, y;
	bool o;
	char path[256], err[256], *s;

	diag_limits_parse(buf, size, "Max locked memory", &a, &b);
	diag_proc_status_parse(buf, size, &st);
	if (diag_mountinfo_find(buf, size, "/dev/shm", &m) > 0 &&
	    strcmp(m.mountpoint, "/dev/shm") != 0)
		abort();
	if (diag_mounts_find(buf, size, "/dev/shm", &m) > 0)
		diag_mount_option_size(m.options, &a);
	diag_cgroup_value_parse(buf, size, &a);
	diag_devices_list_allows(buf, size, 231, 192);
	if (diag_cgroup_path_parse(buf, size, true, path, sizeof(path)) > 0 && path[0] != '/')
		abort();
	diag_cgroup_path_parse(buf, size, false, path, sizeof(path));
	if (diag_env_parse(buf, size, size && buf[size - 1] == '\0', &env, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < env.n; i++)
			if (!strchr(env.kv[i], '='))
				abort();
		diag_env_get(&env, "NCCL_IB_HCA");
		diag_env_clear(&env);
	}
	diag_nvidia_version_parse(buf, size, &x, &o);
	diag_kernel_release_parse(buf, size, &x, &y);

	/* the NCCL list parser takes a C string (an environment value) */
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	diag_mount_option_size(s, &a);
	if (diag_nccl_list_parse(s, &l) == 0) {
		if (l.n > NCCL_LIST_MAX)
			abort();
		for (size_t i = 0; i < l.n; i++) {
			if (!l.e[i].name[0] || l.e[i].port > 255)
				abort();
			/* an entry always selects its own name (exact or prefix), on its own
			 * port */
			if (!diag_nccl_entry_match(&l, &l.e[i], l.e[i].name, l.e[i].port))
				abort();
		}
		diag_nccl_list_selects(&l, "mlx5_10", 1);
	}
	free(s);
	return 0;
}
