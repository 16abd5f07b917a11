/* SPDX-License-Identifier: Apache-2.0 */
/* A process's pod and container from its cgroup path (cgroup.h). Only the path's own segments
 * are trusted: a cgroup namespace may show it relative ("/../../kubepods-...") and a v1
 * hierarchy may be mounted anywhere, so the segments are matched wherever they are. */
#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "kubelet/cgroup.h"

/* s[0..36) a UUID whose separators are sep: 8-4-4-4-12 hex digits */
static bool is_uuid(const char *s, size_t n, char sep)
{
	if (n != 36)
		return false;
	for (size_t i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != sep : !isxdigit((unsigned char)s[i]))
			return false;
	}
	return true;
}

static bool is_hex64(const char *s, size_t n)
{
	if (n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* one segment of a path: the pod's UID into uid (true), either form */
static bool pod_segment(const char *s, size_t n, char *uid)
{
	const char *p;

	/* cgroupfs: exactly "pod<UID>" */
	if (n == 39 && !memcmp(s, "pod", 3) && is_uuid(s + 3, 36, '-')) {
		memcpy(uid, s + 3, 36);
		uid[36] = '\0';
		return true;
	}
	/* systemd: "kubepods[-<qos>]-pod<UID with _>.slice" */
	if (n < 6 + 39 || memcmp(s, "kubepods", 8) || memcmp(s + n - 6, ".slice", 6))
		return false;
	p = s + n - 6 - 36;
	if (memcmp(p - 4, "-pod", 4) || !is_uuid(p, 36, '_'))
		return false;
	for (size_t i = 0; i < 36; i++)
		uid[i] = p[i] == '_' ? '-' : p[i];
	uid[36] = '\0';
	return true;
}

/* the segment after the pod's: "<64 hex>" (cgroupfs) or "<runtime>-<64 hex>.scope" (systemd) */
static void container_segment(const char *s, size_t n, char *container)
{
	if (n > 6 && !memcmp(s + n - 6, ".scope", 6)) {
		n -= 6;
		const char *dash = memrchr(s, '-', n);

		if (!dash)
			return;
		n -= (size_t)(dash + 1 - s);
		s = dash + 1;
	}
	if (is_hex64(s, n)) {
		memcpy(container, s, 64);
		container[64] = '\0';
	}
}

/* one line's path (after the second ':') */
static bool path_pod(const char *path, size_t len, char *uid, char *container)
{
	const char *end = path + len, *seg = path;

	while (seg < end) {
		const char *slash = memchr(seg, '/', (size_t)(end - seg));
		const char *next = slash ? slash : end;

		if (pod_segment(seg, (size_t)(next - seg), uid)) {
			container[0] = '\0';
			if (slash) {
				const char *c = slash + 1,
					   *c_end = memchr(c, '/', (size_t)(end - c));

				container_segment(c, (size_t)((c_end ? c_end : end) - c),
						  container);
			}
			return true;
		}
		seg = next + 1;
	}
	return false;
}

int kubelet_cgroup_pod(const char *text, size_t len, char uid[KUBELET_UID_LEN],
		       char container[KUBELET_CONTAINER_LEN])
{
	const char *line = text, *end = text + len;

	uid[0] = container[0] = '\0';
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *line_end = nl ? nl : end;
		const char *c1 = memchr(line, ':', (size_t)(line_end - line));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(line_end - c1 - 1)) : NULL;

		if (c2 && path_pod(c2 + 1, (size_t)(line_end - c2 - 1), uid, container))
			return 1;
		line = line_end + 1;
	}
	uid[0] = container[0] = '\0';
	return 0;
}
