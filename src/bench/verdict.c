/* SPDX-License-Identifier: Apache-2.0 */
/* The verdict: the figure perftest measured against the ceiling, in words.
 *
 * Bandwidth: pass at or above min_percent of the ceiling (default 90 %), warn down to
 * fail_percent (default 20 points lower), fail below; --min-gbps is a hard floor. A ceiling
 * set by a placement problem (GPU on the other socket, a PCIe link trained down) caps the
 * verdict at warn: the number may be all the path allows, but the path is wrong.
 * Latency: the smallest message's typical latency against a budget (a generous base for the
 * link layer and verb, plus the time to serialise the message at the ceiling): pass within
 * it, warn within three times it, fail beyond.
 * The thresholds are in docs/bench.md; every reason has a code documented there. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "util/cleanup.h"
#include "util/opt.h"
#include "util/strutil.h"

#define MSG_FLOOR 65536

/* A figure this far above the ceiling is not a measurement: perftest's averages carry a
 * little timer jitter and the model rounds its overheads, but not by more than this. */
#define ABOVE_CEILING 1.02

static const char *const status_names[] = {
	[BENCH_PASS] = "pass",
	[BENCH_WARN] = "warn",
	[BENCH_FAIL] = "fail",
	[BENCH_INVALID] = "invalid",
};

const char *bench_status_name(enum bench_status s)
{
	return (unsigned)s < ELEMENTSOF(status_names) ? status_names[s] : "fail";
}

enum bench_status bench_status_parse(const char *s)
{
	for (size_t i = 0; s && i < ELEMENTSOF(status_names); i++)
		if (!strcmp(s, status_names[i]))
			return (enum bench_status)i;
	return BENCH_FAIL;
}

int bench_exit_code(enum bench_status s)
{
	switch (s) {
	case BENCH_PASS: return BENCH_EXIT_PASS;
	case BENCH_WARN: return BENCH_EXIT_WARN;
	case BENCH_INVALID: return BENCH_EXIT_INVALID;
	default: return BENCH_EXIT_FAIL;
	}
}

bool bench_above_ceiling(double gbps, double ceiling_gbps)
{
	return ceiling_gbps > 0 && gbps > ceiling_gbps * ABOVE_CEILING;
}

void bench_thresholds_default(struct bench_thresholds *t)
{
	*t = (struct bench_thresholds){ .min_percent = 90, .fail_percent = 70 };
}

int bench_thresholds_option(struct bench_thresholds *t, const char *role, const char *opt,
			    const char *s)
{
	/* the bounds in thousandths: 1 to 100 %, 0.001 Gb/s to 100 Tb/s, 0.01 us to 1 s */
	static const struct {
		const char *opt, *unit;
		unsigned long long lo, hi;
	} rows[] = {
		{ "--min-percent", "%", 1000, 100000 },
		{ "--min-gbps", "Gb/s", 1, 100000000 },
		{ "--max-usec", "us", 10, 1000000000 },
	};
	unsigned long long v;

	for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
		if (strcmp(rows[i].opt, opt))
			continue;
		if (opt_decimal(role, opt, s, 3, rows[i].lo, rows[i].hi, rows[i].unit, &v) < 0)
			return -EINVAL;
		if (i == 0) {
			t->min_percent = (double)v / 1000;
			t->fail_percent = t->min_percent > 20 ? t->min_percent - 20 : 0;
		} else if (i == 1)
			t->min_gbps = (double)v / 1000;
		else
			t->max_usec = (double)v / 1000;
		return 0;
	}
	return -ENOENT;
}

enum bench_status bench_verdict_status_for(double percent, double gbps,
					   const struct bench_thresholds *t)
{
	if (t->min_gbps > 0 && !(gbps >= t->min_gbps))
		return BENCH_FAIL;
	if (isnan(percent))
		return t->min_gbps > 0 ? BENCH_PASS : BENCH_WARN;
	if (percent >= t->min_percent)
		return BENCH_PASS;
	return percent >= t->fail_percent ? BENCH_WARN : BENCH_FAIL;
}

int bench_verdict_add(struct bench_verdict *v, enum bench_status st, const char *code,
		      const char *fix_fmt, const char *text_fmt, ...)
{
	struct bench_reason *r, *nr = realloc(v->reasons, (v->n_reasons + 1) * sizeof(*v->reasons));
	va_list ap;

	if (!nr)
		return -ENOMEM;
	v->reasons = nr;
	r = &nr[v->n_reasons++];
	memset(r, 0, sizeof(*r));
	r->status = st;
	str_copy(r->code, sizeof(r->code), code);
	va_start(ap, text_fmt);
	vsnprintf(r->text, sizeof(r->text), text_fmt, ap);
	va_end(ap);
	if (fix_fmt)
		str_copy(r->fix, sizeof(r->fix), fix_fmt);
	if (st > v->status)
		v->status = st;
	return 0;
}

void bench_verdict_free(struct bench_verdict *v)
{
	if (!v)
		return;
	free(v->reasons);
	v->reasons = NULL;
	v->n_reasons = 0;
}

static const char *num(double v, char *buf, size_t n)
{
	snprintf(buf, n, v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : "%.2f", v);
	return buf;
}

/* Why a figure may fall short, as far as the output and the ceiling tell. */
static int hints(const struct bench_perftest_out *o, const struct bench_ceiling *c,
		 const struct bench_perftest_row *r, struct bench_verdict *v)
{
	int e = 0;

	if (o->qps == 1 && c->gbps >= 150)
		e |= bench_verdict_add(
			v, BENCH_WARN, "one_qp",
			"Run with several QPs (rdmak bench uses -q 4; perftest's default is 1).",
			"one QP drives the link from one send queue: at %s Gb/s that usually leaves a tenth of the "
			"link unused (a single QP reached 87 %% of NDR in crucible#661)",
			c->rate);
	if (c->gpu_rel == HW_TOPO_PHB || c->gpu_rel == HW_TOPO_NODE)
		e |= bench_verdict_add(
			v, BENCH_WARN, "gpu_placement",
			"Use the GPU behind the HCA's PCIe switch (rdmak bench --gpu N picks the nearest HCA), or run "
			"with host memory to compare.",
			"the GPU (%s) reaches the HCA through the CPU's root complex (%s), where peer-to-peer "
			"throughput depends on the platform",
			c->gpu_bdf, hw_topo_name(c->gpu_rel));
	if (o->cuda && c->gpu_rel != HW_TOPO_SYS)
		e |= bench_verdict_add(
			v, BENCH_WARN, "gpu_memory",
			"Run the same test with host memory (drop --gpu): if it reaches the ceiling, look at the GPU "
			"side: ACS on the bridges between GPU and HCA (rdmak doctor, gpudirect.acs), nvidia_peermem "
			"against DMA-BUF, the GPU's own PCIe link.",
			"the run used GPU memory (GPUDirect%s%s%s): every byte crosses the GPU's PCIe path as well",
			c->gpu_rel != HW_TOPO_UNKNOWN ? ", " : "",
			c->gpu_rel != HW_TOPO_UNKNOWN ? hw_topo_name(c->gpu_rel) : "",
			c->gpu_rel != HW_TOPO_UNKNOWN ? " to the HCA" : "");
	if (o->cuda && c->gpu_rel != HW_TOPO_SYS && r && r->bytes < 1048576)
		e |= bench_verdict_add(
			v, BENCH_WARN, "gpu_small_messages",
			"Judge GPU memory with -s 1048576 or larger, or -a.",
			"GPU memory at %llu B messages: PCIe peer-to-peer reads favour larger messages",
			(unsigned long long)r->bytes);
	return e;
}

static int judge_bw(const struct bench_perftest_out *o, const struct bench_ceiling *c,
		    const struct bench_thresholds *t, struct bench_verdict *v)
{
	bool small = false;
	const struct bench_perftest_row *r = bench_perftest_judged_row(o, &small);
	char a[16], b[16], m[256] = "";
	enum bench_status st;
	int e = 0;

	if (!r)
		return bench_verdict_add(
			v, BENCH_FAIL, "no_result",
			"Run the test to its end; the client prints the table.",
			"perftest printed no result row%s",
			o->server ? " (a server that was still waiting, or stopped)" : "");
	v->bytes = r->bytes;
	v->gbps = bench_perftest_gbps(r, r->avg);
	if (small) {
		v->percent = NAN;
		return bench_verdict_add(
			v, BENCH_WARN, "small_messages",
			"Judge bandwidth with -s 65536 or larger, or -a.",
			"the largest message is %llu B: below 64 KiB perftest measures message rate "
			"(%.2f Mpps here), not what the link carries",
			(unsigned long long)r->bytes, r->msg_rate);
	}
	if (!c->known) {
		v->percent = NAN;
		st = bench_verdict_status_for(NAN, v->gbps, t);
		if (t->min_gbps > 0)
			return bench_verdict_add(
				v, st, "min_gbps",
				st == BENCH_FAIL
					? "Find out why with the hardware model: give "
					  "--root (a snapshot or the node) so the ceiling can be computed."
					: NULL,
				"%.2f Gb/s against --min-gbps %g; no ceiling: %s", v->gbps,
				t->min_gbps, c->why_unknown);
		return bench_verdict_add(
			v, BENCH_WARN, "no_ceiling",
			"Judge where the test ran, or give --root with that node's snapshot (rdmak snapshot).",
			"%.2f Gb/s at %llu B, but no ceiling to judge it by: %s", v->gbps,
			(unsigned long long)r->bytes, c->why_unknown);
	}
	v->percent = v->gbps / c->gbps * 100;
	if (bench_above_ceiling(v->gbps, c->gbps))
		return bench_verdict_add(
			v, BENCH_INVALID, "above_ceiling",
			"Judge the output exactly as perftest printed it, on the node it ran on (--root with that "
			"node's snapshot); if it is, the model of this path is wrong: report it with the snapshot.",
			"%.2f Gb/s at %llu B (line %u) is %.0f %% of the %s Gb/s that %s: no such path carries it, "
			"so either the capture was altered or the ceiling's model of this node is wrong",
			v->gbps, (unsigned long long)r->bytes, r->line, floor(v->percent),
			num(c->gbps, a, sizeof(a)), c->terms[c->limit].phrase);
	st = bench_verdict_status_for(v->percent, v->gbps, t);
	if (c->mtu4096_gbps > 0)
		snprintf(
			m, sizeof(m),
			"; raising the interface MTU%s%s to 9000 (path MTU 4096) allows about %s Gb/s",
			c->netdev[0] ? " of " : "", c->netdev, num(c->mtu4096_gbps, b, sizeof(b)));
	e |= bench_verdict_add(
		v, st, "measured",
		st == BENCH_PASS
			? NULL
			: "See the other reasons; rdmak doctor checks the node and the pod.",
		"%.2f Gb/s is %.0f %% of the %s Gb/s that %s%s", v->gbps, floor(v->percent),
		num(c->gbps, a, sizeof(a)), c->terms[c->limit].phrase, m);
	if (t->min_gbps > 0 && v->gbps < t->min_gbps)
		e |= bench_verdict_add(v, BENCH_FAIL, "min_gbps",
				       "Find out why from the other reasons.",
				       "%.2f Gb/s is below --min-gbps %g", v->gbps, t->min_gbps);
	if (c->mtu4096_gbps > 0)
		e |= bench_verdict_add(
			v, BENCH_PASS, "mtu",
			"Set the MTU of the RDMA interface (and the switch ports) to 9000; RoCE then runs at path MTU 4096.",
			"RoCE's path MTU follows the interface MTU (%u gives %u)", c->netdev_mtu,
			c->path_mtu);
	for (size_t i = 0; i < c->n_terms; i++) {
		const struct bench_ceil_term *tm = &c->terms[i];

		if (!tm->placement)
			continue;
		/* the path is wrong even where the number is all it allows */
		e |= bench_verdict_add(
			v, BENCH_WARN, "pcie_degraded",
			"Move the card to a slot that matches its link (check the riser and the BIOS link settings) "
			"or reseat it.",
			"%s", tm->what);
	}
	if (c->gpu_rel == HW_TOPO_SYS)
		e |= bench_verdict_add(
			v, BENCH_WARN, "gpu_sys",
			"Use a GPU on the HCA's socket, ideally behind its PCIe switch (rdmak bench --gpu N picks "
			"the nearest HCA; nvidia-smi topo -m shows PIX/PXB).",
			"GPU memory at %s is on the other CPU socket from %s (SYS): GPUDirect crosses the "
			"inter-socket link, which carried half of the link in perftest#241",
			c->gpu_bdf, c->device);
	if (st != BENCH_PASS)
		e |= hints(o, c, r, v);
	return e ? -ENOMEM : 0;
}

/* Generous bases (µs) for the smallest messages, round-trip halves as perftest reports them:
 * a read is a full round trip. */
static double latency_base(enum hw_link_layer ll, const char *verb)
{
	bool read = !strcmp(verb, "RDMA_Read");

	return ll == HW_LINK_ETH ? (read ? 6.0 : 4.0) : (read ? 4.0 : 2.5);
}

static int judge_lat(const struct bench_perftest_out *o, const struct bench_ceiling *c,
		     const struct bench_thresholds *t, struct bench_verdict *v)
{
	const struct bench_perftest_row *r = bench_perftest_judged_row(o, NULL);
	enum hw_link_layer ll = c->known		       ? c->link
				: o->link == BENCH_PT_LINK_ETH ? HW_LINK_ETH
							       : HW_LINK_IB;
	double us, budget;
	enum bench_status st;

	if (!r)
		return bench_verdict_add(
			v, BENCH_FAIL, "no_result",
			"Run the test to its end; the client prints the table.",
			"perftest printed no result row%s",
			o->server ? " (a server that was still waiting, or stopped)" : "");
	us = !isnan(r->t_typical) ? r->t_typical : r->t_avg;
	v->bytes = r->bytes;
	v->usec = us;
	budget = t->max_usec > 0 ? t->max_usec : latency_base(ll, o->verb);
	if (t->max_usec <= 0 && c->known && c->gbps > 0)
		budget += (double)r->bytes * 8 / (c->gbps * 1000);
	v->budget_usec = budget;
	v->gbps = v->percent = NAN;
	if (isnan(us))
		return bench_verdict_add(v, BENCH_WARN, "no_latency",
					 "Use a perftest that prints t_typical or t_avg.",
					 "no latency column in the result");
	st = us <= budget ? BENCH_PASS : us <= 3 * budget ? BENCH_WARN : BENCH_FAIL;
	return bench_verdict_add(
		v, st, "latency",
		st == BENCH_PASS
			? NULL
			: "Check the hops between the two hosts, the CPU frequency governor and "
			  "interrupt moderation; compare with both pods on one switch.",
		"%.2f us typical at %llu B against a budget of %.2f us for %s %s%s", us,
		(unsigned long long)r->bytes, budget, o->verb[0] ? o->verb : "RDMA",
		ll == HW_LINK_ETH ? "RoCE" : "InfiniBand", t->max_usec > 0 ? " (--max-usec)" : "");
}

int bench_verdict_judge(const struct bench_perftest_out *o, const struct bench_ceiling *c,
			const struct bench_thresholds *t, struct bench_verdict *ret)
{
	struct bench_verdict v = {
		.status = BENCH_PASS, .gbps = NAN, .percent = NAN, .usec = NAN, .budget_usec = NAN
	};
	const struct bench_perftest_event *cpu = bench_perftest_event_find(o, BENCH_PT_EV_CPU_FREQ);
	int r = 0;

	if (o->bad_table_line) {
		/* no figure of that table is perftest's: judging one would print nan or nonsense */
		r = bench_verdict_add(
			&v, BENCH_INVALID, "table_mismatch",
			"Give perftest's output as it printed it: header and table of the same run.",
			"line %u: %s", o->bad_table_line, o->bad_table);
		if (r < 0)
			return r;
		*ret = v;
		return 0;
	}
	if (bench_perftest_failed(o)) {
		/* bench_diagnose() names the cause; the figures of a failed run mean nothing */
		v.status = BENCH_FAIL;
		*ret = v;
		return 0;
	}
	if (o->kind == BENCH_PT_KIND_LAT)
		r = judge_lat(o, c, t, &v);
	else if (o->kind == BENCH_PT_KIND_BW || o->n_rows)
		r = judge_bw(o, c, t, &v);
	else if (!o->zero_gid)
		r = bench_verdict_add(
			&v, BENCH_FAIL, "no_result",
			"Give the whole output of perftest (stdout and stderr).",
			"not a perftest output: no test header, result table or known message");
	if (r >= 0 && cpu)
		r = bench_verdict_add(
			&v, BENCH_PASS, "cpu_frequency",
			"Set the CPU frequency governor to performance (cpupower frequency-set -g performance) for "
			"stable figures.",
			"perftest saw the CPU clock below its maximum (%.0f vs %.0f MHz): it times with the cycle "
			"counter, so %s",
			cpu->val, cpu->val2,
			o->kind == BENCH_PT_KIND_LAT
				? "latencies converted at the wrong frequency can be off"
				: "bandwidth stands, but the run may have been slowed");
	if (r < 0) {
		bench_verdict_free(&v);
		return r;
	}
	*ret = v;
	return 0;
}
