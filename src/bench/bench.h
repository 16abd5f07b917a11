/* SPDX-License-Identifier: Apache-2.0 */
/* `rdmak bench`: run perftest, model what the path can carry, and judge the result.
 *
 * The module's pieces, one file each:
 *   perftest.c  the perftest output parser (a buffer in, struct bench_perftest_out back; fuzzed)
 *   ceiling.c   the ceiling model: port, link layer, path MTU, headers, PCIe links, GPU relation
 *   verdict.c   pass / warn / fail against thresholds, with the reason in words
 *   diagnose.c  when perftest failed: the cause and its fix, with the doctor's checks
 *   runner.c    the perftest command line chosen from the hardware model, and running it
 *   report.c    the result document (JSON) and its text form
 *   k8s.c       the two pods, and `--run` through kubectl
 *   bench.c     the role's main and its subcommands
 * Nothing here prints except bench.c, report.c's printers and k8s.c's progress on stderr.
 */
#ifndef RDMAK_BENCH_H
#define RDMAK_BENCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hw/hw.h"

/* Exit codes of every subcommand (docs/bench.md). */
enum {
	BENCH_EXIT_PASS = 0,
	BENCH_EXIT_WARN = 1,
	BENCH_EXIT_FAIL = 2,
	BENCH_EXIT_USAGE = 3,
	BENCH_EXIT_INVALID = 4
};
/* 0 where nothing was judged: --help, or `bench k8s` printing its pods without --run */
enum { BENCH_EXIT_OK = BENCH_EXIT_PASS };

/* ---- perftest output (perftest.c) -------------------------------------------------------- */

enum bench_perftest_kind { BENCH_PT_KIND_UNKNOWN = 0, BENCH_PT_KIND_BW, BENCH_PT_KIND_LAT };
enum bench_perftest_unit {
	BENCH_PT_UNIT_NONE = 0,
	BENCH_PT_UNIT_GBPS,
	BENCH_PT_UNIT_MIBPS,
	BENCH_PT_UNIT_USEC
};
enum bench_perftest_link { BENCH_PT_LINK_UNKNOWN = 0, BENCH_PT_LINK_IB, BENCH_PT_LINK_ETH };

/* One row of a result table. Bandwidth rows: peak/avg in `unit`, msg_rate in Mpps. Latency
 * rows: the t_* columns in microseconds (NAN when the form has no such column). */
struct bench_perftest_row {
	uint64_t bytes, iters;
	enum bench_perftest_unit unit;
	double peak, avg, msg_rate;
	double t_min, t_max, t_typical, t_avg, t_stdev, t_p99, t_p999, tps;
	unsigned line; /* 1-based line of the output */
};

/* What perftest (or libibverbs under it) said went wrong, or warned about. */
enum bench_perftest_event_kind {
	BENCH_PT_EV_NO_DEVICE =
		0, /* " Did not detect devices", " Unable to find the Infiniband/RoCE device" */
	BENCH_PT_EV_DEVICE_NOT_FOUND, /* "IB device %s not found" (arg: the name in `what`) */
	BENCH_PT_EV_PORT_STATE,	      /* " Port number %d state is %s" */
	BENCH_PT_EV_MR, /* "Couldn't allocate MR[ with error=%d]" (arg: errno, -1 unknown) */
	BENCH_PT_EV_READ_KEYS, /* "ethernet_read_keys: Couldn't read remote address", "Failed to exchange data ..." */
	BENCH_PT_EV_CONNECT,  /* "Couldn't connect to %s:%d", "Couldn't listen to port %d" */
	BENCH_PT_EV_GID_TYPE, /* "Found Incompatibility issue with GID types." */
	BENCH_PT_EV_QP_STATE, /* "Failed to modify QP ... to RTR/RTS", " Unable to Connect the HCA's through the link" */
	BENCH_PT_EV_COMPLETION, /* " Completion with error", "Failed status %d", "transport retry counter exceeded" */
	BENCH_PT_EV_ARGS,	 /* " Parser function exited with Error" and the line before it */
	BENCH_PT_EV_VERSION,	 /* "not compatible with versions older than 5.70" */
	BENCH_PT_EV_NO_PROVIDER, /* "libibverbs: Warning: no userspace device-specific driver found" */
	BENCH_PT_EV_DMABUF, /* "DMA-BUF is not supported", "OFED stack does not support DMA-BUF" */
	BENCH_PT_EV_LIMIT,  /* "Error: BW result is below bw limit" (perftest's own --limit_bw) */
	BENCH_PT_EV_RESOURCES, /* " Couldn't create IB resources" and other setup failures not named above */
	/* warnings: the run went on */
	BENCH_PT_EV_CPU_FREQ, /* "Conflicting CPU frequency values detected: %lf != %lf" (val, val2) */
	BENCH_PT_EV_NO_PEAK,	 /* "WARNING: BW peak won't be measured in this run." */
	BENCH_PT_EV_MTU_CHANGED, /* "Changing to active mtu - %d" (arg: the enum, 3 = 1024) */
	BENCH_PT_EV_MEMLOCK_LOW, /* "libibverbs: Warning: RLIMIT_MEMLOCK is %llu bytes." */
	BENCH_PT_EV__MAX
};
#define BENCH_PT_EV_IS_FAILURE(k) ((k) < BENCH_PT_EV_CPU_FREQ)

struct bench_perftest_event {
	enum bench_perftest_event_kind kind;
	unsigned line;
	int arg;	  /* port number, errno, status, MTU enum; -1 when none */
	double val, val2; /* CPU frequencies */
	char what[64];	  /* device name, port state, ... */
	char text[200];	  /* the line as printed (leading blanks trimmed, cut at 199 bytes) */
};

struct bench_perftest_out {
	enum bench_perftest_kind kind;
	char title[64]; /* "RDMA_Write BW Test" */
	char verb[24];	/* "RDMA_Write", "RDMA_Read", "Send", "Atomic" */
	bool bidirectional;
	unsigned n_headers; /* header blocks seen (2 when server and client text interleave) */
	bool server;	    /* "Waiting for client to connect" */
	char device[HW_NAME_MAX];				   /* "Device : mlx5_0" */
	int qps, mtu, gid_index, tx_depth, cq_mod, outstand_reads; /* -1 when not printed */
	enum bench_perftest_link link;
	bool rdma_cm;
	/* GPU memory (CUDA/DMA-BUF preamble) */
	bool cuda, dmabuf;
	int cuda_bus, cuda_dev; /* "CUDA device 0: PCIe address is 57:00" (hex), -1 when absent */
	char gpu_name[64];	/* "NVIDIA A100-SXM4-80GB" */
	/* address lines */
	unsigned n_local, n_remote;
	bool gid_printed, zero_gid; /* a "GID:" line, and one of them all zero */
	struct bench_perftest_row *rows;
	size_t n_rows;
	unsigned n_duplicates; /* rows printed twice (server and client copies) */
	struct bench_perftest_event *events;
	size_t n_events;
	unsigned n_lines;
	/* A result table whose columns are not those of the test its title names (a latency
	 * table under "RDMA_Read BW Test"): the line of its heading, 0 when none, and why. Its
	 * rows are not read: perftest cannot have printed them, so the capture is not perftest's. */
	unsigned bad_table_line;
	char bad_table[200];
};

/* Parse perftest's text (stdout and stderr together, any version since 4.x, leading blanks
 * and markdown quoting tolerated). Always succeeds on any bytes except -ENOMEM; an output
 * with neither a header, a row nor a known message has kind BENCH_PT_KIND_UNKNOWN and no rows. */
int bench_perftest_parse(const char *buf, size_t len, struct bench_perftest_out *ret);
void bench_perftest_out_free(struct bench_perftest_out *o);
/* The row judged: the best average among messages of at least 64 KiB (bandwidth), or the
 * smallest message (latency); NULL when there is none. *small is set when a bandwidth output
 * has only messages below 64 KiB (a message-rate test, not a bandwidth one). */
const struct bench_perftest_row *bench_perftest_judged_row(const struct bench_perftest_out *o,
							   bool *small);
/* The first event of that kind, or NULL. */
const struct bench_perftest_event *bench_perftest_event_find(const struct bench_perftest_out *o,
							     enum bench_perftest_event_kind k);
bool bench_perftest_failed(const struct bench_perftest_out *o);
/* A bandwidth figure in Gb/s whatever the table's unit (perftest's MiB is 2^20 bytes). */
double bench_perftest_gbps(const struct bench_perftest_row *r, double v);
const char *bench_perftest_event_name(
	enum bench_perftest_event_kind k); /* "no_device", ... (the JSON "kind") */

/* ---- the ceiling model (ceiling.c) -------------------------------------------------------- */

enum bench_ceil_factor { BENCH_CEIL_PORT = 0, BENCH_CEIL_PCIE, BENCH_CEIL__MAX };

struct bench_ceil_term {
	enum bench_ceil_factor factor;
	double gbps;
	bool placement; /* a placement or training problem, not the hardware's limit: caps at warn */
	char phrase
		[256]; /* completes "the N Gb/s that ...": "RoCE v2 can carry at path MTU 1024" */
	char what
		[512]; /* "4X EDR InfiniBand: 100 Gb/s of data, 26 B of headers per 4096 B packet" */
};

struct bench_ceil_input {
	const char *device;	  /* RDMA device; required */
	unsigned port;		  /* 0: the first ACTIVE port, else 1 */
	const struct hw_gpu *gpu; /* GPU memory on this side; NULL for host memory */
	const char *
		netdev; /* RoCE: the interface the GID belongs to; NULL: from the GID index or the port */
	int gid_index;	/* as perftest ran, -1 unknown */
	int mtu;	/* path MTU perftest printed, 0 unknown */
	uint64_t bytes; /* message size judged (64 KiB when unknown) */
	int qps;	/* -1 unknown */
	bool bidirectional;
	char verb[24]; /* "RDMA_Write", "RDMA_Read", "Send" */
};

struct bench_ceiling {
	bool known;
	double gbps;
	size_t limit; /* index of the limiting term */
	struct bench_ceil_term terms[8];
	size_t n_terms;
	/* the facts the model used, for the report */
	char device[HW_NAME_MAX];
	unsigned port;
	enum hw_link_layer link;
	double rate_gbps, data_gbps; /* what the port prints, and its data rate after line coding */
	char rate[48];
	unsigned legs; /* RoCE LAG legs the QPs can use */
	unsigned path_mtu, netdev_mtu, header_bytes;
	char netdev[HW_IFNAME_MAX];
	char gid_type[16]; /* "RoCE v2" ... */
	bool ipv6;
	/* RoCE below path MTU 4096: what 4096 would allow (0 when not applicable) */
	double mtu4096_gbps;
	enum hw_topo gpu_rel;
	char gpu_bdf[HW_BDF_MAX];
	char why_unknown[160]; /* when !known */
};

/* Build the ceiling for one side. Returns 0 (ceiling->known says whether a figure came out;
 * why_unknown says why not) or -ENOMEM. */
int bench_ceiling_compute(struct hw_ctx *ctx, const struct hw_node *node,
			  const struct bench_ceil_input *in, struct bench_ceiling *ret);
/* The IB MTU a RoCE port runs at for a netdev MTU (the kernel's iboe_get_mtu()). */
unsigned bench_ceiling_roce_mtu(unsigned netdev_mtu);
/* Usable PCIe bandwidth of a link, Gb/s (line coding, TLP and DLLP overhead). */
double bench_ceiling_pcie_gbps(double gts, unsigned width);
const char *bench_ceiling_factor_name(enum bench_ceil_factor f); /* "port", "pcie" */

/* ---- the verdict (verdict.c) -------------------------------------------------------------- */

/* Ordered: a later one is worse. INVALID: the figures cannot be what perftest measured on
 * this path (above the physical ceiling, a table that does not fit its test): the capture or
 * the model is wrong, and no verdict on the link can be given. */
enum bench_status { BENCH_PASS = 0, BENCH_WARN, BENCH_FAIL, BENCH_INVALID };
const char *bench_status_name(enum bench_status s); /* "pass", "warn", "fail", "invalid" */
/* The status a name gives back; NULL or an unknown name: BENCH_FAIL. */
enum bench_status bench_status_parse(const char *s);
/* The exit code of a verdict (BENCH_EXIT_*). */
int bench_exit_code(enum bench_status s);
/* Whether gbps is above what a path with that ceiling can carry (beyond perftest's timer
 * jitter and the model's rounding). */
bool bench_above_ceiling(double gbps, double ceiling_gbps);

struct bench_thresholds {
	double min_percent;  /* pass at or above this share of the ceiling (default 90) */
	double fail_percent; /* fail below this share (default min_percent - 20) */
	double min_gbps;     /* 0: none; else below it fails */
	double max_usec;     /* latency budget override, 0: the model's */
};
void bench_thresholds_default(struct bench_thresholds *t);
/* Set the threshold of option opt ("--min-percent", "--min-gbps", "--max-usec") from s, up to
 * three decimals (util/opt.h); --min-percent moves the fail line 20 points under it. -EINVAL
 * after the one error line "rdmak ROLE: OPT: expected ..." on stderr, -ENOENT: no such option. */
int bench_thresholds_option(struct bench_thresholds *t, const char *role, const char *opt,
			    const char *s);

struct bench_reason {
	enum bench_status status; /* what this reason alone would make the verdict */
	char code[32];		  /* "below_ceiling", "port_down", ... (docs/bench.md) */
	char text[600];
	char fix[400]; /* "" when there is nothing to do */
};

struct bench_verdict {
	enum bench_status status;
	double gbps, percent;	  /* the figure judged and its share of the ceiling (bandwidth) */
	double usec, budget_usec; /* latency */
	uint64_t bytes;
	struct bench_reason *reasons;
	size_t n_reasons;
};

/* Judge one side's parsed output against its ceiling. Failures in the output are left to
 * bench_diagnose(): this adds only a generic reason for them. */
int bench_verdict_judge(const struct bench_perftest_out *o, const struct bench_ceiling *c,
			const struct bench_thresholds *t, struct bench_verdict *ret);
int bench_verdict_add(struct bench_verdict *v, enum bench_status st, const char *code,
		      const char *fix_fmt, const char *text_fmt, ...)
	__attribute__((format(printf, 5, 6)));
void bench_verdict_free(struct bench_verdict *v);
/* Status for a share of the ceiling under the thresholds. */
enum bench_status bench_verdict_status_for(double percent, double gbps,
					   const struct bench_thresholds *t);

/* ---- failure diagnosis (diagnose.c) ------------------------------------------------------- */

/* Name the cause of each failure perftest printed (and of the peer's, when its output is
 * given) and its fix. With `doctor` (ctx's roots are where perftest ran: on the spot, or a
 * pod's tree), running the doctor's checks that bear on it, which read ctx's roots (sysfs,
 * devfs, and procfs and the image root for the pod checks). Adds fail reasons to v. */
int bench_diagnose(struct hw_ctx *ctx, const struct bench_perftest_out *o,
		   const struct bench_perftest_out *peer, const struct hw_node *node, bool doctor,
		   const struct bench_ceiling *c, struct bench_verdict *v);

/* ---- the runner (runner.c) ---------------------------------------------------------------- */

struct bench_opts {
	const char *test;	  /* "ib_write_bw" */
	const char *perftest_dir; /* NULL: PATH */
	const char *device;	  /* NULL: choose */
	unsigned ib_port;	  /* 0: the device's first ACTIVE port */
	const char *interface;	  /* RoCE: the netdev whose IPv4 GID to use */
	int gid_index;		  /* -1: choose */
	int gpu;		  /* -1: host memory */
	const char *gpu_bdf;	  /* --gpu BDF */
	int cuda_index;		  /* -1: --use_cuda_bus_id; else --use_cuda=N */
	int qps, duration;	  /* 0: default */
	uint64_t size;		  /* 0: default */
	bool all_sizes;
	unsigned tcp_port; /* perftest -p; 0: 18515 */
	bool rails;
	char **passthrough; /* after `--` */
	size_t n_passthrough;
	const char *server; /* client: the server's address */
	bool json;
	struct bench_thresholds thr;
};

/* One perftest process: the device/port/GID chosen and what came back. */
struct bench_run {
	char device[HW_NAME_MAX];
	unsigned port;
	char netdev[HW_IFNAME_MAX];
	int gid_index;
	const struct hw_gpu *gpu;
	unsigned tcp_port;
	char **argv;  /* strv */
	char *output; /* stdout + stderr as they came */
	size_t output_len;
	int exit_status;       /* exit code, 128+signal, -1 not started */
	char start_error[200]; /* why it could not start */
};

/* Choose devices (one, or one per rail) and build each run's command line. Returns the
 * number of runs (> 0) or -errno; on -ENODEV/-EINVAL why[] says what is missing. */
int bench_runner_plan(struct hw_ctx *ctx, const struct hw_node *node, const struct bench_opts *o,
		      bool client, struct bench_run **ret, char *why, size_t why_len);
/* Start every run at once, pass their output through to `tee` (NULL: keep only), wait for all.
 * SIGINT/SIGTERM are forwarded to the children. on_ready (may be NULL) is called once every
 * run listens: its TCP port in LISTEN in /proc/net/tcp or tcp6, or perftest's "Waiting for
 * client to connect" in its output. Returns 0 or -errno. */
int bench_runner_exec(struct bench_run *runs, size_t n, FILE *tee, void (*on_ready)(void *ud),
		      void *ud);
void bench_runner_free(struct bench_run *runs, size_t n);
/* A LISTEN socket on TCP port `port` in a /proc/net/tcp or tcp6 table (the text in buf). */
bool bench_tcp_listening(const char *buf, size_t len, unsigned port);
/* The rails of this node/pod: usable devices with an ACTIVE port (and, on RoCE, a RoCE v2
 * IPv4 GID on a netdev visible here), ordered by netdev then device name. */
int bench_runner_rails(const struct hw_node *node, const struct hw_rdma_dev ***ret, size_t *n);
/* The port asked for (0: the first ACTIVE one), or NULL. */
const struct hw_port *bench_port(const struct hw_rdma_dev *d, unsigned want);
/* RoCE v2 GID of an IPv4 address on the port, preferring the netdev given. -1 when none. */
int bench_runner_roce_gid(const struct hw_port *p, const struct hw_node *node, const char *netdev,
			  char *ndev_out);

/* ---- the document (report.c) -------------------------------------------------------------- */

/* One side judged: its result, ceiling, verdict. `run` may be NULL (judge). */
json_t *bench_report_side(const struct bench_run *run, const struct bench_perftest_out *o,
			  const struct bench_ceiling *c, const struct bench_verdict *v);
/* Sum rails into a total. */
json_t *bench_report_total(json_t *sides, const struct bench_thresholds *t);
/* The verdict block printed after perftest's own output. */
int bench_report_print(FILE *f, const json_t *doc);

/* ---- Kubernetes (k8s.c) -------------------------------------------------------------------- */

int bench_k8s_main(int argc, char **argv);

#endif
