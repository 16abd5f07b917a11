/* SPDX-License-Identifier: Apache-2.0 */
/* The doctor as another role uses it (bench): diag_new over roots the caller holds,
 * diag_run_check by id, each finding read typed (status and cause). The hardware is a sample
 * node (examples/nodes, $NODES); the pod's /proc is built here from tests/fixtures/doctor. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "diag/diag.h"
#include "hw/hw.h"

static char tmp[] = "/tmp/test_doctor_api.XXXXXX";
static char *noenv[] = { NULL };

static const char *env_or(const char *name, const char *def)
{
	const char *v = getenv(name);

	return v && *v ? v : def;
}

static void copy(const char *from, const char *to)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	assert_int_equal(system(cmd), 0);
}

/* A pod's /proc/self under tmp: fixture limits (8 MiB memlock) and the status given. */
static void proc_self(const char *status)
{
	char from[512], to[512];
	const char *top = env_or("TOP", ".");

	snprintf(to, sizeof(to), "%s/proc/self", tmp);
	mkdir(tmp, 0755);
	snprintf(from, sizeof(from), "%s/proc", tmp);
	mkdir(from, 0755);
	mkdir(to, 0755);
	snprintf(from, sizeof(from), "%s/tests/fixtures/doctor/proc/limits", top);
	snprintf(to, sizeof(to), "%s/proc/self/limits", tmp);
	copy(from, to);
	snprintf(from, sizeof(from), "%s/tests/fixtures/doctor/proc/%s", top, status);
	snprintf(to, sizeof(to), "%s/proc/self/status", tmp);
	copy(from, to);
}

struct fixture {
	struct hw_ctx *ctx;
	struct hw_node *node;
	struct diag *d;
};

/* node: a sample node's name; procfs: the tmp tree, or NULL for none. */
static void open_doctor(struct fixture *x, const char *node, bool procfs)
{
	char sys[512], dev[512], proc[512], missing[512];
	struct hw_roots roots = { 0 };
	struct hw_error herr = { 0 };

	snprintf(sys, sizeof(sys), "%s/%s/sys", env_or("NODES", "examples/nodes"), node);
	snprintf(dev, sizeof(dev), "%s/%s/dev", env_or("NODES", "examples/nodes"), node);
	snprintf(proc, sizeof(proc), "%s/%s", tmp, procfs ? "proc" : "no-such-proc");
	roots.dir[HW_ROOT_SYSFS] = sys;
	roots.dir[HW_ROOT_DEVFS] = dev;
	roots.dir[HW_ROOT_PROCFS] = proc;
	assert_int_equal(hw_ctx_new_roots(&roots, &x->ctx, missing, sizeof(missing)), 0);
	assert_int_equal(hw_load(x->ctx, HW_LOAD_GIDS, &x->node, &herr), 0);
	assert_int_equal(diag_new(x->ctx, x->node, DIAG_POD, noenv, &x->d), 0);
}

static void close_doctor(struct fixture *x)
{
	diag_free(x->d);
	hw_node_free(x->node);
	hw_ctx_free(x->ctx);
}

static void test_node_check(void **state)
{
	struct diag_finding f;
	struct fixture x;

	open_doctor(&x, "a100-ib-bond", false);
	/* mlx5_0 port 1 is Down on this node (seed 003) */
	assert_int_equal(diag_run_check(x.d, "port.state", "mlx5_0/1", &f), 1);
	assert_int_equal(f.status, DIAG_FAIL);
	assert_int_equal(f.cause, DIAG_CAUSE_PORT_DOWN);
	assert_string_equal(f.id, "port.state");
	assert_string_equal(f.object, "mlx5_0/1");
	assert_non_null(f.fix);
	assert_int_equal(diag_run_check(x.d, "no.such", NULL, &f), -ENOENT);
	/* a pod's check without the pod's /proc finds nothing, rather than judge this process */
	assert_int_equal(diag_run_check(x.d, "pod.memlock", NULL, &f), 0);
	close_doctor(&x);
}

static void test_pod_causes(void **state)
{
	struct diag_finding f;
	struct fixture x;

	proc_self("status-root-nocap");
	open_doctor(&x, "v100-ib", true);
	assert_int_equal(diag_run_check(x.d, "pod.memlock", NULL, &f), 1);
	assert_int_equal(f.status, DIAG_FAIL);
	assert_int_equal(f.cause, DIAG_CAUSE_MEMLOCK);
	assert_int_equal(diag_run_check(x.d, "pod.ipc_lock", NULL, &f), 1);
	assert_int_equal(f.status, DIAG_FAIL);
	assert_int_equal(f.cause, DIAG_CAUSE_IPC_LOCK);
	close_doctor(&x);

	/* IPC_LOCK in the bounding set of a uid 1000 container: the more precise cause */
	proc_self("status-nonroot-ipclock");
	open_doctor(&x, "v100-ib", true);
	assert_int_equal(diag_run_check(x.d, "pod.ipc_lock", NULL, &f), 1);
	assert_int_equal(f.status, DIAG_FAIL);
	assert_int_equal(f.cause, DIAG_CAUSE_IPC_LOCK_NON_ROOT);
	close_doctor(&x);

	/* root with IPC_LOCK: ok findings name no cause */
	proc_self("status-root");
	open_doctor(&x, "v100-ib", true);
	assert_int_equal(diag_run_check(x.d, "pod.ipc_lock", NULL, &f), 1);
	assert_int_equal(f.status, DIAG_OK);
	assert_int_equal(f.cause, DIAG_CAUSE_NONE);
	close_doctor(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_node_check),
		cmocka_unit_test(test_pod_causes),
	};
	int r;

	assert_non_null(mkdtemp(tmp));
	r = cmocka_run_group_tests(tests, NULL, NULL);
	{
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
		if (system(cmd) != 0)
			r = r ? r : 1;
	}
	return r;
}
