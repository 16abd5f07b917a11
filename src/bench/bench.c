/* SPDX-License-Identifier: Apache-2.0 */
/* `rdmak bench`: the role's main and its subcommands.
 *   server [options]            run perftest's server side on a chosen HCA
 *   client [options] SERVER     run the client side against SERVER, judge the result
 *   judge [options] FILE [PEER] judge a perftest output captured elsewhere
 *   k8s [options]               the two pods, and with --run the whole test through kubectl
 * Exit: 0 pass, 1 warn, 2 fail, 3 usage (or an unreadable input). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "doc/doc.h"
#include "roles.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/opt.h"
#include "util/strutil.h"

#define INPUT_MAX (16u << 20)

static void usage(FILE *f)
{
	fputs("Usage: rdmak bench server [options] [-- PERFTEST-ARGS]\n"
	      "       rdmak bench client [options] SERVER [-- PERFTEST-ARGS]\n"
	      "       rdmak bench judge [options] FILE [PEER-FILE]\n"
	      "       rdmak bench k8s --resource NAME --node A --node B [options] [--run]\n"
	      "Run perftest between two hosts or pods with settings chosen from the hardware, and judge the\n"
	      "result against what the path can carry (docs/bench.md).\n\n"
	      "Test:\n"
	      "  --test NAME           ib_write_bw (default), ib_read_bw, ib_send_bw, ib_write_lat, ib_read_lat, ib_send_lat\n"
	      "  --perftest-dir DIR    where the perftest programs are (default: PATH)\n"
	      "  -d, --device DEV      the HCA (default: a healthy one, or the GPU's nearest)\n"
	      "  --ib-port N           its port (default: the first ACTIVE one)\n"
	      "  --interface IF        RoCE: use the RoCE v2 GID of IF's IPv4 address\n"
	      "  --gid-index N         force perftest's -x\n"
	      "  --gpu N|BDF|auto      GPU memory (GPUDirect): GPU N in PCI order, or this pod's only GPU\n"
	      "  --cuda-index N        pass --use_cuda=N instead of --use_cuda_bus_id (older perftest)\n"
	      "  -q, --qps N           queue pairs (bandwidth tests; default 4)\n"
	      "  -s, --size BYTES      message size (perftest's default when not given)\n"
	      "  -a, --all             every message size from 2 B to 8 MiB\n"
	      "  -D, --duration S      run for S seconds\n"
	      "  --tcp-port N          perftest's TCP port (default 18515; rails use N, N+1, ...)\n"
	      "  --rails               one pair per RDMA interface of the pod, all at once\n"
	      "Judging:\n"
	      "  --min-percent P       pass at or above P % of the ceiling (default 90; warn down to P-20)\n"
	      "  --min-gbps G          fail below G Gb/s whatever the ceiling\n"
	      "  --max-usec U          latency budget (default: from the link layer and message size)\n" HW_ROOT_USAGE
	      "                  (--root: also DIR/proc and DIR as the image, for the doctor's pod checks)\n"
	      "  -j, --json            the result as JSON (docs/bench.schema.json)\n"
	      "  -h, --help\n\n"
	      "`rdmak bench k8s --help` describes the Kubernetes mode.\n"
	      "Exit: 0 pass, 1 warn, 2 fail, 3 usage, 4 invalid (a figure above what the path can carry, or a\n"
	      "table that does not fit its test: the capture or the model is wrong).\n",
	      f);
}

struct cli {
	struct bench_opts o;
	struct hw_roots roots;
	const char *files[2];
	size_t n_files;
};

static bool test_known(const char *t)
{
	static const char *const tests[] = { "ib_write_bw",  "ib_read_bw",  "ib_send_bw",
					     "ib_write_lat", "ib_read_lat", "ib_send_lat" };

	for (size_t i = 0; i < ELEMENTSOF(tests); i++)
		if (!strcmp(tests[i], t))
			return true;
	return false;
}

/* 0 to go on, -1 for --help, or BENCH_EXIT_USAGE. */
static int parse_args(int argc, char **argv, const char *sub, struct cli *c)
{
	static const struct option opts[] = { { "test", required_argument, NULL, 'T' },
					      { "perftest-dir", required_argument, NULL, 'P' },
					      { "device", required_argument, NULL, 'd' },
					      { "ib-port", required_argument, NULL, 'i' },
					      { "interface", required_argument, NULL, 'I' },
					      { "gid-index", required_argument, NULL, 'x' },
					      { "gpu", required_argument, NULL, 'G' },
					      { "cuda-index", required_argument, NULL, 'C' },
					      { "qps", required_argument, NULL, 'q' },
					      { "size", required_argument, NULL, 's' },
					      { "all", no_argument, NULL, 'a' },
					      { "duration", required_argument, NULL, 'D' },
					      { "tcp-port", required_argument, NULL, 'p' },
					      { "rails", no_argument, NULL, 'R' },
					      { "min-percent", required_argument, NULL, 'm' },
					      { "min-gbps", required_argument, NULL, 'g' },
					      { "max-usec", required_argument, NULL, 'u' },
					      HW_ROOT_LONGOPTS,
					      { "json", no_argument, NULL, 'j' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	struct bench_opts *o = &c->o;
	unsigned long long v;
	int ch, dashes = argc;

	/* perftest's own arguments follow `--`; options and positionals may mix before it */
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			dashes = i;
			break;
		}
	optind = 1;
	while ((ch = getopt_long(dashes, argv, "d:q:s:aD:jh", opts, NULL)) != -1) {
		if (hw_roots_option(&c->roots, ch, optarg))
			continue;
		switch (ch) {
		case 'T':
			if (!test_known(optarg)) {
				fprintf(stderr,
					"rdmak bench: --test: '%s' is not one of ib_{write,read,send}_{bw,lat}\n",
					optarg);
				return BENCH_EXIT_USAGE;
			}
			o->test = optarg;
			break;
		case 'P': o->perftest_dir = optarg; break;
		case 'd':
			if (!str_is_safe_name(optarg, HW_NAME_MAX - 1)) {
				fprintf(stderr,
					"rdmak bench: --device: '%s' is not a device name\n",
					optarg);
				return BENCH_EXIT_USAGE;
			}
			o->device = optarg;
			break;
		case 'i':
			if (opt_uint("bench", "--ib-port", optarg, 1, 255, "", &v) < 0)
				return BENCH_EXIT_USAGE;
			o->ib_port = (unsigned)v;
			break;
		case 'I':
			if (!str_is_safe_name(optarg, HW_IFNAME_MAX - 1)) {
				fprintf(stderr,
					"rdmak bench: --interface: '%s' is not an interface name\n",
					optarg);
				return BENCH_EXIT_USAGE;
			}
			o->interface = optarg;
			break;
		case 'x':
			if (opt_uint("bench", "--gid-index", optarg, 0, 65535, "", &v) < 0)
				return BENCH_EXIT_USAGE;
			o->gid_index = (int)v;
			break;
		case 'G':
			if (!strcmp(optarg, "auto"))
				o->gpu = -2;
			else if (hw_is_bdf(optarg))
				o->gpu_bdf = optarg;
			else if (opt_parse_uint(optarg, 0, 1023, &v) < 0) {
				fprintf(stderr,
					"rdmak bench: --gpu wants N, a PCI address (0000:57:00.0) or auto\n");
				return BENCH_EXIT_USAGE;
			} else
				o->gpu = (int)v;
			break;
		case 'C':
			if (opt_uint("bench", "--cuda-index", optarg, 0, 1023, "", &v) < 0)
				return BENCH_EXIT_USAGE;
			o->cuda_index = (int)v;
			break;
		case 'q':
			if (opt_uint("bench", "--qps", optarg, 1, 16384, "", &v) < 0)
				return BENCH_EXIT_USAGE;
			o->qps = (int)v;
			break;
		case 's':
			if (opt_uint("bench", "--size", optarg, 1, 1ll << 32, "bytes", &v) < 0)
				return BENCH_EXIT_USAGE;
			o->size = (uint64_t)v;
			break;
		case 'a': o->all_sizes = true; break;
		case 'D':
			if (opt_uint("bench", "--duration", optarg, 1, 86400, "s", &v) < 0)
				return BENCH_EXIT_USAGE;
			o->duration = (int)v;
			break;
		case 'p':
			if (opt_uint("bench", "--tcp-port", optarg, 1, 65000, "", &v) < 0)
				return BENCH_EXIT_USAGE;
			o->tcp_port = (unsigned)v;
			break;
		case 'R': o->rails = true; break;
		case 'm':
		case 'g':
		case 'u':
			if (bench_thresholds_option(&o->thr, "bench",
						    ch == 'm'	? "--min-percent"
						    : ch == 'g' ? "--min-gbps"
								: "--max-usec",
						    optarg) < 0)
				return BENCH_EXIT_USAGE;
			break;
		case 'j': o->json = true; break;
		case 'h': usage(stdout); return -1;
		default: usage(stderr); return BENCH_EXIT_USAGE;
		}
	}
	for (; optind < dashes; optind++) {
		if (c->n_files == ELEMENTSOF(c->files)) {
			fprintf(stderr, "rdmak bench %s: unexpected argument '%s'\n", sub,
				argv[optind]);
			return BENCH_EXIT_USAGE;
		}
		c->files[c->n_files++] = argv[optind];
	}
	o->passthrough = dashes < argc ? argv + dashes + 1 : NULL;
	o->n_passthrough = dashes < argc ? (size_t)(argc - dashes - 1) : 0;
	if (!strcmp(sub, "judge") && (c->n_files < 1 || o->n_passthrough)) {
		fprintf(stderr, "rdmak bench judge: wants FILE [PEER-FILE] (\"-\" reads stdin)\n");
		return BENCH_EXIT_USAGE;
	}
	if (!strcmp(sub, "client") && c->n_files != 1) {
		fprintf(stderr,
			"rdmak bench client: wants the server's address: rdmak bench client [options] SERVER\n");
		return BENCH_EXIT_USAGE;
	}
	if (!strcmp(sub, "server") && c->n_files) {
		fprintf(stderr,
			"rdmak bench server: unexpected argument '%s' (the server takes no address)\n",
			c->files[0]);
		return BENCH_EXIT_USAGE;
	}
	if (o->rails && (o->device || o->gpu != -1 || o->gpu_bdf || o->interface)) {
		fprintf(stderr,
			"rdmak bench: --rails chooses every device itself: drop --device, --gpu and --interface\n");
		return BENCH_EXIT_USAGE;
	}
	if (o->all_sizes && o->size) {
		fprintf(stderr, "rdmak bench: --all and --size exclude each other\n");
		return BENCH_EXIT_USAGE;
	}
	if (!strcmp(sub, "client"))
		o->server = c->files[0];
	return 0;
}

/* ---- one side judged -------------------------------------------------------------------------- */

static const struct hw_gpu *gpu_of_output(const struct hw_node *node,
					  const struct bench_perftest_out *o)
{
	for (size_t i = 0; node && o->cuda_bus >= 0 && i < node->n_gpus; i++) {
		unsigned dom, bus, dev, fn;

		if (node->gpus[i].pci &&
		    sscanf(node->gpus[i].pci->bdf, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) == 4 &&
		    (int)bus == o->cuda_bus && (int)dev == o->cuda_dev)
			return &node->gpus[i];
	}
	return NULL;
}

struct side_in {
	const struct bench_run *run; /* NULL when judging a file */
	const char *device;	     /* override */
	unsigned port;
	const struct hw_gpu *gpu;
	const char *netdev;
	const char *label;
};

static json_t *judge_side(struct hw_ctx *ctx, const struct hw_node *node, bool doctor,
			  const struct bench_perftest_out *o, const struct bench_perftest_out *peer,
			  const struct bench_thresholds *thr, const struct side_in *si)
{
	struct bench_ceil_input in = { .gid_index = o->gid_index,
				       .mtu = o->mtu,
				       .qps = o->qps,
				       .bidirectional = o->bidirectional };
	struct bench_ceiling c;
	struct bench_verdict v = { 0 };
	const struct bench_perftest_row *row = bench_perftest_judged_row(o, NULL);
	json_t *side = NULL;

	in.device = si->device ? si->device : o->device[0] ? o->device : NULL;
	in.port = si->port;
	in.gpu = si->gpu ? si->gpu : gpu_of_output(node, o);
	in.netdev = si->netdev;
	in.bytes = row ? row->bytes : 0;
	str_copy(in.verb, sizeof(in.verb), o->verb);
	if (si->run && in.gid_index < 0)
		in.gid_index = si->run->gid_index;
	if (bench_ceiling_compute(ctx, node, &in, &c) < 0 ||
	    bench_verdict_judge(o, &c, thr, &v) < 0)
		return NULL;
	if (si->run && si->run->start_error[0])
		bench_verdict_add(&v, BENCH_FAIL, "perftest_missing",
				  "Install perftest (Debian: apt-get install perftest) or give "
				  "--perftest-dir; the rdmak bench image has it.",
				  "%s", si->run->start_error);
	else if (si->run && si->run->exit_status != 0 && !bench_perftest_failed(o))
		bench_verdict_add(&v, BENCH_FAIL, "perftest_exit",
				  si->run->exit_status > 128 ? "It was killed; run it again."
							     : "Read perftest's output above.",
				  "%s exited with status %d%s", si->run->argv[0],
				  si->run->exit_status,
				  si->run->exit_status > 128 ? " (killed by a signal)" : "");
	if (bench_diagnose(ctx, o, peer, node, doctor, &c, &v) >= 0)
		side = bench_report_side(si->run, o, &c, &v);
	if (side && si->label)
		json_object_set_new(side, "label", json_string(si->label));
	bench_verdict_free(&v);
	return side;
}

static int finish(json_t *doc, json_t *sides, const struct bench_opts *o, const char *mode)
{
	enum bench_status worst = BENCH_PASS;
	size_t i;
	json_t *s;
	int r;

	json_array_foreach(sides, i, s)
	{
		const char *v = json_string_value(json_object_get(s, "verdict"));
		enum bench_status st = bench_status_parse(v);

		if (st > worst)
			worst = st;
	}
	if (o->rails && json_array_size(sides) > 1) {
		json_t *t = bench_report_total(sides, &o->thr);
		enum bench_status st =
			bench_status_parse(json_string_value(json_object_get(t, "verdict")));

		if (st > worst)
			worst = st;
		json_object_set_new(doc, "total", t);
	}
	json_object_set_new(doc, "mode", json_string(mode));
	json_object_set_new(doc, "verdict", json_string(bench_status_name(worst)));
	json_object_set(doc, "sides", sides);
	r = o->json ? doc_json(stdout, doc) : bench_report_print(stdout, doc);
	if (r < 0) {
		fprintf(stderr, "rdmak bench: writing the result: %s\n", strerror(-r));
		return BENCH_EXIT_FAIL;
	}
	return bench_exit_code(worst);
}

static int load_model(const struct cli *c, struct hw_ctx **ctx, struct hw_node **node)
{
	struct hw_error herr = { 0 };
	int r;

	char missing[PATH_MAX];

	r = hw_ctx_new_roots(&c->roots, ctx, missing, sizeof(missing));
	if (r < 0) {
		fprintf(stderr, "rdmak bench: cannot open sysfs root %s: %s\n", missing,
			strerror(-r));
		return r;
	}
	r = hw_load(*ctx, HW_LOAD_GIDS, node, &herr);
	if (r < 0)
		fprintf(stderr, "rdmak bench: reading %s: %s\n", herr.path[0] ? herr.path : "sysfs",
			hw_strerror(herr.err ? herr.err : -r));
	return r;
}

static int read_input(const char *path, char **buf, size_t *len)
{
	int r = !strcmp(path, "-") ? fileio_read_fd(STDIN_FILENO, INPUT_MAX, buf, len)
				   : fileio_read_at(AT_FDCWD, path, INPUT_MAX, buf, len);

	if (r < 0)
		fprintf(stderr, "rdmak bench judge: %s: %s\n", path,
			r == -EFBIG ? "larger than 16 MiB" : strerror(-r));
	return r;
}

/* ---- judge --------------------------------------------------------------------------------- */

static int cmd_judge(struct cli *c)
{
	_cleanup_free_ char *b0 = NULL, *b1 = NULL;
	size_t l0 = 0, l1 = 0;
	struct bench_perftest_out out = { 0 }, peer = { 0 };
	struct hw_ctx *ctx = NULL;
	struct hw_node *node = NULL;
	const struct hw_gpu *gpu = NULL;
	json_t *doc = json_object(), *sides = json_array(), *s;
	int ret = BENCH_EXIT_USAGE;
	char why[200];

	if (!doc || !sides || read_input(c->files[0], &b0, &l0) < 0 ||
	    (c->n_files > 1 && read_input(c->files[1], &b1, &l1) < 0))
		goto out;
	if (bench_perftest_parse(b0, l0, &out) < 0 ||
	    (b1 && bench_perftest_parse(b1, l1, &peer) < 0))
		goto out;
	if (load_model(c, &ctx, &node) < 0)
		goto out;
	if (c->o.gpu != -1 || c->o.gpu_bdf) {
		struct bench_opts go = c->o;
		struct bench_run *runs = NULL;

		/* the same --gpu rules as the runner: N, a PCI address or auto */
		go.device = go.device ? go.device : out.device[0] ? out.device : NULL;
		go.server = "x";
		if (bench_runner_plan(ctx, node, &go, false, &runs, why, sizeof(why)) < 0) {
			fprintf(stderr, "rdmak bench judge: --gpu: %s\n", why);
			goto out;
		}
		gpu = runs[0].gpu;
		bench_runner_free(runs, 1);
	}
	/* the doctor's pod checks read the roots given; without them the capture came from
	 * elsewhere and this machine's /proc says nothing about it */
	bool roots_given = c->roots.root || c->roots.dir[HW_ROOT_SYSFS];
	s = judge_side(ctx, node, roots_given, &out, b1 ? &peer : NULL, &c->o.thr,
		       &(struct side_in){ .device = c->o.device,
					  .port = c->o.ib_port,
					  .gpu = gpu,
					  .netdev = c->o.interface,
					  .label = b1 ? "this side" : NULL });
	if (!s || json_array_append_new(sides, s) < 0)
		goto out;
	if (b1) {
		s = judge_side(ctx, node, roots_given, &peer, &out, &c->o.thr,
			       &(struct side_in){ .label = "peer" });
		if (!s || json_array_append_new(sides, s) < 0)
			goto out;
	}
	ret = finish(doc, sides, &c->o, "judge");
out:
	json_decref(sides);
	json_decref(doc);
	bench_perftest_out_free(&out);
	bench_perftest_out_free(&peer);
	hw_node_free(node);
	hw_ctx_free(ctx);
	return ret;
}

/* ---- server / client ------------------------------------------------------------------------- */

static void announce_ready(void *ud)
{
	const struct bench_run *runs = ud;

	/* k8s mode waits for this line on the server's stderr before it starts the client */
	fprintf(stderr, "rdmak bench: ready: perftest listening on TCP port %u\n",
		runs[0].tcp_port);
	fflush(stderr);
}

static int cmd_run(struct cli *c, bool client)
{
	struct hw_ctx *ctx = NULL;
	struct hw_node *node = NULL;
	struct bench_run *runs = NULL;
	json_t *doc = json_object(), *sides = json_array();
	char why[512];
	int n = 0, ret = BENCH_EXIT_USAGE, r;

	if (!doc || !sides || load_model(c, &ctx, &node) < 0)
		goto out;
	n = bench_runner_plan(ctx, node, &c->o, client, &runs, why, sizeof(why));
	if (n < 0) {
		/* nothing to run: the verdict is a failure with the doctor's view of why */
		struct bench_perftest_out none = { .qps = -1, .mtu = -1, .gid_index = -1 };
		struct bench_ceiling ceil = { 0 };
		struct bench_verdict v = { .status = BENCH_FAIL,
					   .gbps = NAN,
					   .percent = NAN,
					   .usec = NAN,
					   .budget_usec = NAN };
		json_t *s;

		if (n != -ENODEV && n != -EINVAL) {
			fprintf(stderr, "rdmak bench: %s\n", strerror(-n));
			goto out;
		}
		snprintf(ceil.why_unknown, sizeof(ceil.why_unknown), "nothing to run");
		bench_verdict_add(
			&v, BENCH_FAIL, "no_usable_device",
			"Request the RDMA resource in the pod, bring a port up, or name the device with --device; "
			"rdmak doctor --pod explains what is missing.",
			"no perftest run: %s", why);
		s = bench_report_side(NULL, &none, &ceil, &v);
		bench_verdict_free(&v);
		if (!s || json_array_append_new(sides, s) < 0)
			goto out;
		ret = finish(doc, sides, &c->o, client ? "client" : "server");
		goto out;
	}
	/* one run: perftest's own text as it comes; rails: each one's text after the lot */
	r = bench_runner_exec(runs, (size_t)n, c->o.json || n > 1 ? NULL : stdout,
			      client ? NULL : announce_ready, runs);
	if (r < 0) {
		fprintf(stderr, "rdmak bench: running perftest: %s\n", strerror(-r));
		ret = BENCH_EXIT_FAIL;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		struct bench_perftest_out o = { 0 };
		char label[64];
		json_t *s;

		if (!c->o.json && n > 1) {
			printf("== rail %d: %s%s%s ==\n", i + 1, runs[i].device,
			       runs[i].netdev[0] ? " " : "", runs[i].netdev);
			fwrite(runs[i].output ? runs[i].output : "", 1, runs[i].output_len, stdout);
		}
		if (bench_perftest_parse(runs[i].output ? runs[i].output : "", runs[i].output_len,
					 &o) < 0)
			goto out;
		snprintf(label, sizeof(label), "rail %d", i + 1);
		s = judge_side(
			ctx, node, true, &o, NULL, &c->o.thr,
			&(struct side_in){ .run = &runs[i],
					   .device = runs[i].device,
					   .port = runs[i].port,
					   .gpu = runs[i].gpu,
					   .netdev = runs[i].netdev[0] ? runs[i].netdev : NULL,
					   .label = n > 1 ? label : NULL });
		bench_perftest_out_free(&o);
		if (!s || json_array_append_new(sides, s) < 0)
			goto out;
	}
	ret = finish(doc, sides, &c->o, client ? "client" : "server");
out:
	bench_runner_free(runs, n > 0 ? (size_t)n : 0);
	json_decref(sides);
	json_decref(doc);
	hw_node_free(node);
	hw_ctx_free(ctx);
	return ret;
}

int bench_main(int argc, char **argv)
{
	struct cli c = {
		.o = { .test = "ib_write_bw", .gid_index = -1, .gpu = -1, .cuda_index = -1 }
	};
	const char *sub = argc > 1 ? argv[1] : NULL;
	int r;

	bench_thresholds_default(&c.o.thr);
	if (!sub || !strcmp(sub, "-h") || !strcmp(sub, "--help") || !strcmp(sub, "help")) {
		usage(sub ? stdout : stderr);
		return sub ? BENCH_EXIT_OK : BENCH_EXIT_USAGE;
	}
	if (!strcmp(sub, "k8s"))
		return bench_k8s_main(argc - 1, argv + 1);
	if (strcmp(sub, "server") && strcmp(sub, "client") && strcmp(sub, "judge")) {
		fprintf(stderr,
			"rdmak bench: unknown subcommand '%s' (server, client, judge, k8s)\n", sub);
		return BENCH_EXIT_USAGE;
	}
	r = parse_args(argc - 1, argv + 1, sub, &c);
	if (r)
		return r < 0 ? BENCH_EXIT_OK : r;
	if (!strcmp(sub, "judge"))
		return cmd_judge(&c);
	return cmd_run(&c, !strcmp(sub, "client"));
}
