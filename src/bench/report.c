/* SPDX-License-Identifier: Apache-2.0 */
/* The result document: built once as JSON (docs/bench.schema.json), printed either as JSON
 * (--json) or as the verdict block that follows perftest's own table. Each field is named
 * once, here. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "doc/doc.h"
#include "util/cleanup.h"

static json_t *num_or_null(double v)
{
	return isnan(v) || isinf(v) ? json_null() : json_real(round(v * 100) / 100);
}

static json_t *int_or_null(long long v)
{
	return v < 0 ? json_null() : json_integer(v);
}

static const char *kind_name(enum bench_perftest_kind k)
{
	return k == BENCH_PT_KIND_BW ? "bw" : k == BENCH_PT_KIND_LAT ? "lat" : "unknown";
}

static const char *unit_name(enum bench_perftest_unit u)
{
	return u == BENCH_PT_UNIT_GBPS	  ? "Gb/s"
	       : u == BENCH_PT_UNIT_MIBPS ? "MiB/s"
	       : u == BENCH_PT_UNIT_USEC  ? "usec"
					  : NULL;
}

static json_t *row_json(const struct bench_perftest_row *r)
{
	if (r->unit == BENCH_PT_UNIT_USEC)
		return json_pack("{s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "bytes",
				 (json_int_t)r->bytes, "iterations", (json_int_t)r->iters,
				 "t_min_usec", num_or_null(r->t_min), "t_max_usec",
				 num_or_null(r->t_max), "t_typical_usec", num_or_null(r->t_typical),
				 "t_avg_usec", num_or_null(r->t_avg), "t_stdev_usec",
				 num_or_null(r->t_stdev), "p99_usec", num_or_null(r->t_p99),
				 "p999_usec", num_or_null(r->t_p999));
	return json_pack("{s:I, s:I, s:o, s:o, s:o, s:o, s:o}", "bytes", (json_int_t)r->bytes,
			 "iterations", (json_int_t)r->iters, "peak", num_or_null(r->peak),
			 "average", num_or_null(r->avg), "peak_gbps",
			 num_or_null(bench_perftest_gbps(r, r->peak)), "average_gbps",
			 num_or_null(bench_perftest_gbps(r, r->avg)), "msg_rate_mpps",
			 num_or_null(r->msg_rate));
}

static json_t *result_json(const struct bench_perftest_out *o)
{
	json_t *rows = json_array(), *events = json_array(), *res;

	for (size_t i = 0; rows && i < o->n_rows; i++)
		json_array_append_new(rows, row_json(&o->rows[i]));
	for (size_t i = 0; events && i < o->n_events; i++) {
		const struct bench_perftest_event *e = &o->events[i];

		json_array_append_new(events, json_pack("{s:s, s:b, s:i, s:s}", "kind",
							bench_perftest_event_name(e->kind),
							"failure", BENCH_PT_EV_IS_FAILURE(e->kind),
							"line", (int)e->line, "text", e->text));
	}
	res = json_pack(
		"{s:s?, s:s, s:s?, s:b, s:s?, s:o, s:o, s:s?, s:o, s:b, s:b, s:b, s:s?, s:s?, s:b, s:i, s:o, s:o}",
		"test", o->title[0] ? o->title : NULL, "kind", kind_name(o->kind), "verb",
		o->verb[0] ? o->verb : NULL, "bidirectional", o->bidirectional, "device",
		o->device[0] ? o->device : NULL, "qps", int_or_null(o->qps), "mtu",
		int_or_null(o->mtu), "link",
		o->link == BENCH_PT_LINK_IB    ? "IB"
		: o->link == BENCH_PT_LINK_ETH ? "Ethernet"
					       : NULL,
		"gid_index", int_or_null(o->gid_index), "rdma_cm", o->rdma_cm, "cuda", o->cuda,
		"dmabuf", o->dmabuf, "gpu_name", o->gpu_name[0] ? o->gpu_name : NULL, "unit",
		o->n_rows ? unit_name(o->rows[0].unit) : NULL, "server", o->server,
		"duplicate_rows", (int)o->n_duplicates, "rows", rows ? rows : json_array(),
		"events", events ? events : json_array());
	return res;
}

static json_t *ceiling_json(const struct bench_ceiling *c)
{
	json_t *terms = json_array();

	for (size_t i = 0; terms && i < c->n_terms; i++)
		json_array_append_new(terms,
				      json_pack("{s:s, s:o, s:b, s:s, s:s}", "factor",
						bench_ceiling_factor_name(c->terms[i].factor),
						"gbps", num_or_null(c->terms[i].gbps), "placement",
						c->terms[i].placement, "phrase", c->terms[i].phrase,
						"detail", c->terms[i].what));
	return json_pack(
		"{s:b, s:o, s:s?, s:s?, s:o, s:s?, s:s?, s:o, s:o, s:o, s:s?, s:o, s:o, s:o, s:s?, s:o, s:s?, s:o}",
		"known", c->known, "gbps", c->known ? num_or_null(c->gbps) : json_null(),
		"limited_by",
		c->known ? bench_ceiling_factor_name(c->terms[c->limit].factor) : NULL, "device",
		c->device[0] ? c->device : NULL, "port",
		int_or_null(c->port ? (long long)c->port : -1), "link_layer",
		c->link != HW_LINK_UNKNOWN ? hw_link_layer_name(c->link) : NULL, "rate",
		c->rate[0] ? c->rate : NULL, "data_gbps",
		c->known ? num_or_null(c->data_gbps) : json_null(), "path_mtu",
		int_or_null(c->path_mtu ? (long long)c->path_mtu : -1), "header_bytes",
		int_or_null(c->header_bytes ? (long long)c->header_bytes : -1), "netdev",
		c->netdev[0] ? c->netdev : NULL, "netdev_mtu",
		int_or_null(c->netdev_mtu ? (long long)c->netdev_mtu : -1), "legs",
		int_or_null(c->legs ? (long long)c->legs : -1), "mtu4096_gbps",
		c->mtu4096_gbps > 0 ? num_or_null(c->mtu4096_gbps) : json_null(), "gpu_relation",
		c->gpu_rel != HW_TOPO_UNKNOWN ? hw_topo_name(c->gpu_rel) : NULL, "factors",
		terms ? terms : json_array(), "why_unknown",
		c->why_unknown[0] ? c->why_unknown : NULL, "placement",
		json_boolean(c->known && c->terms[c->limit].placement));
}

json_t *bench_report_side(const struct bench_run *run, const struct bench_perftest_out *o,
			  const struct bench_ceiling *c, const struct bench_verdict *v)
{
	json_t *side, *reasons = json_array(), *cmd = NULL;

	for (size_t i = 0; reasons && i < v->n_reasons; i++) {
		const struct bench_reason *r = &v->reasons[i];

		json_array_append_new(reasons,
				      json_pack("{s:s, s:s, s:s, s:s?}", "status",
						bench_status_name(r->status), "code", r->code,
						"text", r->text, "fix", r->fix[0] ? r->fix : NULL));
	}
	if (run && run->argv) {
		cmd = json_array();
		for (char **a = run->argv; cmd && *a; a++)
			json_array_append_new(cmd, json_string(*a));
	}
	side = json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "verdict",
			 bench_status_name(v->status), "gbps", num_or_null(v->gbps), "percent",
			 num_or_null(floor(v->percent * 10) / 10), "bytes",
			 v->bytes ? json_integer((json_int_t)v->bytes) : json_null(), "usec",
			 num_or_null(v->usec), "budget_usec", num_or_null(v->budget_usec),
			 "reasons", reasons ? reasons : json_array(), "ceiling", ceiling_json(c),
			 "result", result_json(o));
	if (!side)
		return NULL;
	if (run) {
		json_object_set_new(side, "device", json_string(run->device));
		json_object_set_new(side, "port", json_integer(run->port));
		json_object_set_new(side, "netdev",
				    run->netdev[0] ? json_string(run->netdev) : json_null());
		json_object_set_new(side, "gid_index", int_or_null(run->gid_index));
		json_object_set_new(side, "tcp_port", json_integer(run->tcp_port));
		json_object_set_new(side, "gpu",
				    run->gpu ? json_pack("{s:i, s:s}", "index",
							 (int)run->gpu->index, "bdf",
							 run->gpu->pci ? run->gpu->pci->bdf : "")
					     : json_null());
		json_object_set_new(side, "command", cmd ? cmd : json_null());
		json_object_set_new(side, "exit_status",
				    run->exit_status >= 0 ? json_integer(run->exit_status)
							  : json_null());
		json_object_set_new(side, "output",
				    json_stringn(run->output ? run->output : "", run->output_len));
	}
	return side;
}

static enum bench_status status_of(const json_t *o)
{
	return bench_status_parse(json_string_value(json_object_get(o, "verdict")));
}

json_t *bench_report_total(json_t *sides, const struct bench_thresholds *t)
{
	double sum = 0, ceil = 0;
	bool all = true;
	enum bench_status worst = BENCH_PASS, st;
	size_t i;
	json_t *s;

	json_array_foreach(sides, i, s)
	{
		json_t *g = json_object_get(s, "gbps"),
		       *c = json_object_get(json_object_get(s, "ceiling"), "gbps");

		if (status_of(s) > worst)
			worst = status_of(s);
		if (json_is_number(g))
			sum += json_number_value(g);
		else
			all = false;
		if (json_is_number(c))
			ceil += json_number_value(c);
		else
			all = false;
	}
	/* latency rails have no bandwidth to add up: the total is the worst rail */
	st = all && ceil > 0 ? bench_verdict_status_for(sum / ceil * 100, sum, t)
	     : !sum	     ? BENCH_PASS
			     : BENCH_WARN;
	if (worst > st)
		st = worst;
	return json_pack(
		"{s:s, s:i, s:o, s:o, s:o}", "verdict", bench_status_name(st), "rails",
		(int)json_array_size(sides), "gbps", sum > 0 ? num_or_null(sum) : json_null(),
		"ceiling_gbps", all ? num_or_null(ceil) : json_null(), "percent",
		all && ceil > 0 ? num_or_null(floor(sum / ceil * 1000) / 10) : json_null());
}

/* ---- text -------------------------------------------------------------------------------- */

static void print_side(FILE *f, const json_t *s, const char *label)
{
	static const struct doc_column cols[] = { { "FACTOR", "factor" },
						  { "GB/S", "gbps" },
						  { "DETAIL", "detail" } };
	const json_t *c = json_object_get(s, "ceiling"), *res = json_object_get(s, "result"), *r;
	const char *dev = json_string_value(json_object_get(s, "device"));
	size_t i;

	if (!dev)
		dev = json_string_value(json_object_get(c, "device"));
	fprintf(f, "%s%s%s: %s", label ? label : "", label ? " " : "", dev ? dev : "?",
		json_string_value(json_object_get(s, "verdict")));
	if (json_is_number(json_object_get(s, "gbps")))
		fprintf(f, ", %.2f Gb/s", json_number_value(json_object_get(s, "gbps")));
	if (json_is_number(json_object_get(s, "usec")))
		fprintf(f, ", %.2f us", json_number_value(json_object_get(s, "usec")));
	if (json_is_string(json_object_get(res, "test")))
		fprintf(f, " (%s%s%lld QP%s)", json_string_value(json_object_get(res, "test")),
			", ",
			json_integer_value(json_object_get(res, "qps"))
				? json_integer_value(json_object_get(res, "qps"))
				: 1,
			json_integer_value(json_object_get(res, "qps")) > 1 ? "s" : "");
	fputc('\n', f);
	if (json_is_true(json_object_get(c, "known"))) {
		fprintf(f, "ceiling %.1f Gb/s, set by %s\n",
			json_number_value(json_object_get(c, "gbps")),
			json_string_value(json_object_get(c, "limited_by")));
		doc_table(f, json_object_get(c, "factors"), cols, ELEMENTSOF(cols));
	} else if (json_is_string(json_object_get(c, "why_unknown"))) {
		fprintf(f, "ceiling unknown: %s\n",
			json_string_value(json_object_get(c, "why_unknown")));
	}
	json_array_foreach(json_object_get(s, "reasons"), i, r)
	{
		fprintf(f, "%-4s %s\n", json_string_value(json_object_get(r, "status")),
			json_string_value(json_object_get(r, "text")));
		if (json_is_string(json_object_get(r, "fix")))
			fprintf(f, "     fix: %s\n", json_string_value(json_object_get(r, "fix")));
	}
}

int bench_report_print(FILE *f, const json_t *doc)
{
	const json_t *sides = json_object_get(doc, "sides"), *s, *t = json_object_get(doc, "total");
	size_t i, n = json_array_size(sides);

	fprintf(f, "\n== rdmak bench: %s ==\n", json_string_value(json_object_get(doc, "verdict")));
	json_array_foreach(sides, i, s)
	{
		char label[64];
		const char *lab = json_string_value(json_object_get(s, "label"));

		snprintf(label, sizeof(label), "%s", lab ? lab : "");
		if (i)
			fputc('\n', f);
		print_side(f, s, label[0] ? label : n > 1 ? "side" : NULL);
	}
	if (t) {
		fprintf(f, "\ntotal over %lld rails: %s, %.2f Gb/s",
			json_integer_value(json_object_get(t, "rails")),
			json_string_value(json_object_get(t, "verdict")),
			json_number_value(json_object_get(t, "gbps")));
		if (json_is_number(json_object_get(t, "ceiling_gbps")))
			fprintf(f, " of %.1f Gb/s (%.1f %%)",
				json_number_value(json_object_get(t, "ceiling_gbps")),
				json_number_value(json_object_get(t, "percent")));
		fputc('\n', f);
	}
	return ferror(f) ? -EIO : 0;
}
