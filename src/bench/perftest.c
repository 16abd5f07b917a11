/* SPDX-License-Identifier: Apache-2.0 */
/* The perftest output parser. perftest has no machine format that every version prints (its
 * --out_json is recent), so we read the text users know: the header block of
 * ctx_print_test_info(), the result tables of print_report_bw()/print_report_lat(), and the
 * messages its error paths print. Versions differ in column names, units (MB/sec, MiB/sec,
 * Gb/sec), optional header fields and blanks, so every field is found by name and every
 * table column by its heading. Captures pasted into documents add indentation and markdown
 * quoting; both are skipped. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "util/cleanup.h"
#include "util/strutil.h"

#define LINE_MAX_BYTES 4096
#define MAX_ROWS       100000
#define MAX_EVENTS     256
#define MAX_CUDA       32

enum col {
	COL_SKIP = 0,
	COL_BYTES,
	COL_SL,
	COL_ITERS,
	COL_PEAK,
	COL_AVG,
	COL_RATE,
	COL_TMIN,
	COL_TMAX,
	COL_TTYP,
	COL_TAVG,
	COL_TSTDEV,
	COL_P99,
	COL_P999,
	COL_TPS,
};

/* Table headings, by the words perftest prints over each column (RESULT_FMT*, all versions). */
static const struct {
	const char *word;
	enum col col;
} headings[] = {
	{ "#bytes", COL_BYTES },
	{ "#sl", COL_SL },
	{ "#iterations", COL_ITERS },
	{ "BW peak", COL_PEAK },
	{ "BW average", COL_AVG },
	{ "MsgRate[", COL_RATE },
	{ "BW Port1", COL_SKIP },
	{ "MsgRate Port1", COL_SKIP },
	{ "BW Port2", COL_SKIP },
	{ "MsgRate Port2", COL_SKIP },
	{ "t_min", COL_TMIN },
	{ "t_max", COL_TMAX },
	{ "t_typical", COL_TTYP },
	{ "t_avg", COL_TAVG },
	{ "t_stdev", COL_TSTDEV },
	{ "99% percentile", COL_P99 },
	{ "99.9% percentile", COL_P999 },
	{ "tps average", COL_TPS },
	{ "CPU_Util", COL_SKIP },
};

struct table {
	bool on;
	enum bench_perftest_unit unit;
	enum col cols[24];
	size_t n_cols;
};

struct parser {
	struct bench_perftest_out *o;
	struct table t;
	unsigned title_line; /* the line of the test's title, 0 before one */
	size_t rows_cap, events_cap;
	struct {
		int bus, dev;
		bool set;
	} cuda[MAX_CUDA];
	int cuda_pick;
	char prev[200]; /* the previous non-blank line, for " Parser function exited with Error" */
};

static const char *const event_names[BENCH_PT_EV__MAX] = {
	[BENCH_PT_EV_NO_DEVICE] = "no_device",
	[BENCH_PT_EV_DEVICE_NOT_FOUND] = "device_not_found",
	[BENCH_PT_EV_PORT_STATE] = "port_state",
	[BENCH_PT_EV_MR] = "mr",
	[BENCH_PT_EV_READ_KEYS] = "read_keys",
	[BENCH_PT_EV_CONNECT] = "connect",
	[BENCH_PT_EV_GID_TYPE] = "gid_type",
	[BENCH_PT_EV_QP_STATE] = "qp_state",
	[BENCH_PT_EV_COMPLETION] = "completion",
	[BENCH_PT_EV_ARGS] = "arguments",
	[BENCH_PT_EV_VERSION] = "version",
	[BENCH_PT_EV_NO_PROVIDER] = "no_provider",
	[BENCH_PT_EV_DMABUF] = "dmabuf",
	[BENCH_PT_EV_LIMIT] = "limit",
	[BENCH_PT_EV_RESOURCES] = "resources",
	[BENCH_PT_EV_CPU_FREQ] = "cpu_frequency",
	[BENCH_PT_EV_NO_PEAK] = "no_peak",
	[BENCH_PT_EV_MTU_CHANGED] = "mtu_changed",
	[BENCH_PT_EV_MEMLOCK_LOW] = "memlock_low",
};

const char *bench_perftest_event_name(enum bench_perftest_event_kind k)
{
	return (unsigned)k < BENCH_PT_EV__MAX && event_names[k] ? event_names[k] : "?";
}

/* ---- small text helpers -------------------------------------------------------------------- */

/* Leading blanks and markdown quote marks ("  > "), trailing blanks. */
static char *trim(char *s)
{
	for (;;) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s != '>')
			break;
		s++;
	}
	str_rstrip(s);
	return s;
}

static bool is_dashes(const char *s)
{
	size_t n = strspn(s, "-");
	return n >= 20 && s[n] == '\0';
}

/* "Key   : value" anywhere in the line, the key at a word start; the value ends at a tab or a
 * run of two blanks (ctx_print_test_info prints two fields per line, tab separated). */
static bool field(const char *line, const char *key, char *val, size_t n)
{
	size_t kl = strlen(key);

	for (const char *p = strstr(line, key); p; p = strstr(p + 1, key)) {
		const char *q = p + kl;
		size_t l = 0;

		if (p != line && !isspace((unsigned char)p[-1]))
			continue;
		while (*q == ' ' || *q == '\t')
			q++;
		if (*q != ':')
			continue;
		q++;
		while (*q == ' ' || *q == '\t')
			q++;
		while (q[l] && q[l] != '\t' && !(q[l] == ' ' && q[l + 1] == ' ') && l + 1 < n)
			l++;
		memcpy(val, q, l);
		val[l] = '\0';
		str_rstrip(val);
		return true;
	}
	return false;
}

static bool field_int(const char *line, const char *key, int *ret)
{
	char v[32], *end;
	long x;

	if (!field(line, key, v, sizeof(v)) || !isdigit((unsigned char)v[0]))
		return false;
	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || x < 0 || x > 1000000000 || (*end && *end != '['))
		return false;
	*ret = (int)x;
	return true;
}

static void copy_text(char *dst, size_t n, const char *src)
{
	size_t l = strlen(src);

	if (l >= n)
		l = n - 1;
	memcpy(dst, src, l);
	dst[l] = '\0';
}

/* ---- events --------------------------------------------------------------------------------- */

static struct bench_perftest_event *event_add(struct parser *p, enum bench_perftest_event_kind k,
					      unsigned line, const char *text)
{
	struct bench_perftest_out *o = p->o;
	struct bench_perftest_event *e;

	/* one message printed over consecutive lines is one event */
	if (o->n_events && o->events[o->n_events - 1].kind == k &&
	    o->events[o->n_events - 1].line + 1 == line) {
		o->events[o->n_events - 1].line = line;
		return NULL;
	}
	if (o->n_events == MAX_EVENTS)
		return NULL;
	if (o->n_events == p->events_cap) {
		size_t cap = p->events_cap ? p->events_cap * 2 : 8;
		void *ne = realloc(o->events, cap * sizeof(*o->events));

		if (!ne)
			return NULL;
		o->events = ne;
		p->events_cap = cap;
	}
	e = &o->events[o->n_events++];
	memset(e, 0, sizeof(*e));
	e->kind = k;
	e->line = line;
	e->arg = -1;
	copy_text(e->text, sizeof(e->text), text);
	return e;
}

static void match_events(struct parser *p, const char *s, unsigned line)
{
	struct bench_perftest_event *e;
	const char *q;
	int a;

	if (strstr(s, "Did not detect devices") ||
	    strstr(s, "Unable to find the Infiniband/RoCE device") ||
	    strstr(s, "If device exists, check if driver is up") ||
	    strstr(s, "Failed to get IB devices list")) {
		event_add(p, BENCH_PT_EV_NO_DEVICE, line, s);
	} else if ((q = strstr(s, "IB device ")) && strstr(q, " not found")) {
		if ((e = event_add(p, BENCH_PT_EV_DEVICE_NOT_FOUND, line, s)))
			sscanf(q, "IB device %63s", e->what);
	} else if ((q = strstr(s, "Port number ")) && strstr(q, " state is ")) {
		if ((e = event_add(p, BENCH_PT_EV_PORT_STATE, line, s)) &&
		    sscanf(q, "Port number %d state is %63[^\n]", &a, e->what) >= 1)
			e->arg = a;
	} else if ((q = strstr(s, "Couldn't allocate MR"))) {
		if ((e = event_add(p, BENCH_PT_EV_MR, line, s)) && (q = strstr(q, "error=")) &&
		    sscanf(q, "error=%d", &a) == 1)
			e->arg = a;
	} else if (strstr(s, "ERRNO: Bad address")) {
		/* perftest's rdma_cm path prints the errno of a failed registration on lines of its
		 * own ("Couldn't allocate MR" ... "ERRNO: Bad address.", perftest#126): EFAULT, the
		 * address no peer-memory client took, as "error=14" says on the other path */
		for (size_t i = p->o->n_events; i-- > 0;)
			if (p->o->events[i].kind == BENCH_PT_EV_MR) {
				if (p->o->events[i].arg < 0)
					p->o->events[i].arg = EFAULT;
				break;
			}
	} else if (strstr(s, "ethernet_read_keys") || strstr(s, "Couldn't read remote address") ||
		   strstr(s, "Unable to read to socket/rdma_cm") ||
		   strstr(s, "Failed to exchange data between server and clients") ||
		   strstr(s, "Unable to read from socket")) {
		event_add(p, BENCH_PT_EV_READ_KEYS, line, s);
	} else if (strstr(s, "Couldn't connect to ") || strstr(s, "Couldn't listen to port") ||
		   strstr(s, "Unable to open file descriptor for socket connection")) {
		event_add(p, BENCH_PT_EV_CONNECT, line, s);
	} else if (strstr(s, "Incompatibility issue with GID types") ||
		   strstr(s, "Please Try to use a different IP version")) {
		event_add(p, BENCH_PT_EV_GID_TYPE, line, s);
	} else if (strstr(s, "Failed to modify QP") ||
		   strstr(s, "Unable to Connect the HCA's through the link")) {
		event_add(p, BENCH_PT_EV_QP_STATE, line, s);
	} else if (strstr(s, "Completion with error") || strstr(s, "Failed status") ||
		   strstr(s, "transport retry counter exceeded")) {
		e = event_add(p, BENCH_PT_EV_COMPLETION, line, s);
		if (!e && p->o->n_events &&
		    p->o->events[p->o->n_events - 1].kind == BENCH_PT_EV_COMPLETION)
			e = &p->o->events[p->o->n_events - 1];
		/* "Failed status 12: wr_id 0 syndrom 0x81", "Failed status-transport retry counter
		 * exceeded (12): ...", "... exceeded (12)" */
		if (e && e->arg < 0) {
			if ((q = strstr(s, "Failed status ")) &&
			    sscanf(q, "Failed status %d", &a) == 1)
				e->arg = a;
			else if ((q = strstr(s, "exceeded (")) &&
				 sscanf(q, "exceeded (%d)", &a) == 1)
				e->arg = a;
			else if (strstr(s, "transport retry counter exceeded"))
				e->arg = 12; /* IBV_WC_RETRY_EXC_ERR */
		}
	} else if (strstr(s, "Parser function exited with Error")) {
		if ((e = event_add(p, BENCH_PT_EV_ARGS, line, s)))
			copy_text(e->what, sizeof(e->what), p->prev);
	} else if (strstr(s, "not compatible with versions older than")) {
		event_add(p, BENCH_PT_EV_VERSION, line, s);
	} else if (strstr(s, "no userspace device-specific driver found")) {
		event_add(p, BENCH_PT_EV_NO_PROVIDER, line, s);
	} else if (strstr(s, "DMA-BUF is not supported") || strstr(s, "does not support DMA-BUF")) {
		event_add(p, BENCH_PT_EV_DMABUF, line, s);
	} else if (strstr(s, "is below bw limit") || strstr(s, "is below msg_rate limit")) {
		event_add(p, BENCH_PT_EV_LIMIT, line, s);
	} else if (strstr(s, "Couldn't create IB resources") || strstr(s, "Couldn't create QP") ||
		   strstr(s, "Couldn't allocate PD") || strstr(s, "Couldn't create CQ")) {
		event_add(p, BENCH_PT_EV_RESOURCES, line, s);
	} else if ((q = strstr(s, "Conflicting CPU frequency values detected:"))) {
		double a1, a2;

		if ((e = event_add(p, BENCH_PT_EV_CPU_FREQ, line, s)) &&
		    sscanf(q, "Conflicting CPU frequency values detected: %lf != %lf", &a1, &a2) ==
			    2) {
			e->val = a1;
			e->val2 = a2;
		}
	} else if ((q = strstr(s, "measured timestamp frequency"))) {
		double a1, a2;

		if ((e = event_add(p, BENCH_PT_EV_CPU_FREQ, line, s)) &&
		    sscanf(q, "measured timestamp frequency %lf differs from nominal %lf", &a1,
			   &a2) == 2) {
			e->val = a1;
			e->val2 = a2;
		}
	} else if (strstr(s, "BW peak won't be measured")) {
		event_add(p, BENCH_PT_EV_NO_PEAK, line, s);
	} else if ((q = strstr(s, "Changing to active mtu - "))) {
		if ((e = event_add(p, BENCH_PT_EV_MTU_CHANGED, line, s)) &&
		    sscanf(q, "Changing to active mtu - %d", &a) == 1)
			e->arg = a;
	} else if (strstr(s, "RLIMIT_MEMLOCK is ")) {
		event_add(p, BENCH_PT_EV_MEMLOCK_LOW, line, s);
	}
}

/* ---- header, tables, rows ----------------------------------------------------------------- */

/* "RDMA_Write BW Test", "RDMA_Read Latency Test", "Send Bidirectional BW Test",
 * "RDMA_Write Post List BW Test", "Atomic FETCH_AND_ADD ... BW Test". */
static bool title_line(struct parser *p, const char *s, unsigned line)
{
	size_t l = strlen(s);
	bool bw = l > 8 && !strcmp(s + l - 8, " BW Test"),
	     lat = l > 13 && !strcmp(s + l - 13, " Latency Test");
	struct bench_perftest_out *o = p->o;

	if ((!bw && !lat) || strchr(s, ':') || l >= sizeof(o->title))
		return false;
	o->n_headers++;
	p->title_line = line;
	copy_text(o->title, sizeof(o->title), s);
	o->kind = bw ? BENCH_PT_KIND_BW : BENCH_PT_KIND_LAT;
	o->bidirectional = strstr(s, "Bidirectional") != NULL;
	sscanf(s, "%23s", o->verb);
	return true;
}

static void header_fields(struct parser *p, const char *s)
{
	struct bench_perftest_out *o = p->o;
	char v[HW_NAME_MAX];

	if (field(s, "Device", v, sizeof(v)) && v[0])
		copy_text(o->device, sizeof(o->device), v);
	field_int(s, "Number of qps", &o->qps);
	field_int(s, "Mtu", &o->mtu);
	field_int(s, "GID index", &o->gid_index);
	field_int(s, "TX depth", &o->tx_depth);
	field_int(s, "CQ Moderation", &o->cq_mod);
	field_int(s, "Outstand reads", &o->outstand_reads);
	if (field(s, "Link type", v, sizeof(v)))
		o->link = !strcmp(v, "IB")	   ? BENCH_PT_LINK_IB
			  : !strcmp(v, "Ethernet") ? BENCH_PT_LINK_ETH
						   : o->link;
	if (field(s, "rdma_cm QPs", v, sizeof(v)))
		o->rdma_cm = !strcmp(v, "ON");
}

/* Whether the table's columns are those of the test the title named: a bandwidth test prints
 * "BW average", a latency test t_typical or t_avg (print_report_bw, print_report_lat). A
 * mismatch is recorded once, and the table's rows are not read. */
static bool table_fits(struct parser *p, unsigned line)
{
	struct bench_perftest_out *o = p->o;
	bool bw = false, lat = false;

	for (size_t i = 0; i < p->t.n_cols; i++) {
		bw |= p->t.cols[i] == COL_AVG;
		lat |= p->t.cols[i] == COL_TTYP || p->t.cols[i] == COL_TAVG;
	}
	if (o->kind == BENCH_PT_KIND_UNKNOWN || (o->kind == BENCH_PT_KIND_BW ? bw : lat))
		return true;
	if (!o->bad_table_line) {
		o->bad_table_line = line;
		snprintf(o->bad_table, sizeof(o->bad_table),
			 "a %s table under the title \"%s\" of line %u: the columns do "
			 "not match the test",
			 bw    ? "bandwidth"
			 : lat ? "latency"
			       : "result",
			 o->title, p->title_line);
	}
	return false;
}

static bool table_header(struct parser *p, const char *s, unsigned line)
{
	struct {
		const char *at;
		enum col col;
	} found[24];
	size_t n = 0;

	if (!strstr(s, "#bytes") || !strstr(s, "#iterations"))
		return false;
	for (size_t i = 0; i < ELEMENTSOF(headings) && n < ELEMENTSOF(found); i++) {
		const char *at = strstr(s, headings[i].word);

		if (at) {
			found[n].at = at;
			found[n++].col = headings[i].col;
		}
	}
	/* by position in the line: that is the order of the numbers in each row */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && found[j].at < found[j - 1].at; j--) {
			__typeof__(found[0]) t = found[j];
			found[j] = found[j - 1];
			found[j - 1] = t;
		}
	p->t.on = true;
	p->t.n_cols = n;
	for (size_t i = 0; i < n; i++)
		p->t.cols[i] = found[i].col;
	if (strstr(s, "[Gb/sec]"))
		p->t.unit = BENCH_PT_UNIT_GBPS;
	else if (strstr(s, "[MB/sec]") || strstr(s, "[MiB/sec]"))
		p->t.unit = BENCH_PT_UNIT_MIBPS;
	else
		p->t.unit = strstr(s, "usec") ? BENCH_PT_UNIT_USEC : BENCH_PT_UNIT_NONE;
	p->t.on = table_fits(p, line);
	return true;
}

static bool same(double a, double b)
{
	return a == b || (isnan(a) && isnan(b));
}

static bool same_row(const struct bench_perftest_row *a, const struct bench_perftest_row *b)
{
	return a->bytes == b->bytes && a->iters == b->iters && a->unit == b->unit &&
	       same(a->peak, b->peak) && same(a->avg, b->avg) && same(a->msg_rate, b->msg_rate) &&
	       same(a->t_typical, b->t_typical) && same(a->t_avg, b->t_avg);
}

static int row_line(struct parser *p, const char *s, unsigned line)
{
	struct bench_perftest_out *o = p->o;
	struct bench_perftest_row r = { .unit = p->t.unit, .line = line };
	double v[32];
	size_t n = 0;
	const char *q = s;

	if (!p->t.on || !isdigit((unsigned char)*s))
		return 0;
	while (*q) {
		char *end;

		while (isspace((unsigned char)*q))
			q++;
		if (!*q)
			break;
		if (n == ELEMENTSOF(v))
			return 0;
		errno = 0;
		v[n] = strtod(q, &end);
		if (end == q || errno || !isfinite(v[n]) || (*end && !isspace((unsigned char)*end)))
			return 0;
		n++;
		q = end;
	}
	if (n < 2 || n < p->t.n_cols)
		return 0;
	r.peak = r.avg = r.msg_rate = NAN;
	r.t_min = r.t_max = r.t_typical = r.t_avg = r.t_stdev = r.t_p99 = r.t_p999 = r.tps = NAN;
	for (size_t i = 0; i < p->t.n_cols; i++) {
		double x = v[i];

		switch (p->t.cols[i]) {
		case COL_BYTES:
			if (x < 1 || x > 1e12 || x != floor(x))
				return 0;
			r.bytes = (uint64_t)x;
			break;
		case COL_ITERS:
			if (x < 0 || x > 1e18 || x != floor(x))
				return 0;
			r.iters = (uint64_t)x;
			break;
		case COL_PEAK: r.peak = x; break;
		case COL_AVG: r.avg = x; break;
		case COL_RATE: r.msg_rate = x; break;
		case COL_TMIN: r.t_min = x; break;
		case COL_TMAX: r.t_max = x; break;
		case COL_TTYP: r.t_typical = x; break;
		case COL_TAVG: r.t_avg = x; break;
		case COL_TSTDEV: r.t_stdev = x; break;
		case COL_P99: r.t_p99 = x; break;
		case COL_P999: r.t_p999 = x; break;
		case COL_TPS: r.tps = x; break;
		default: break;
		}
	}
	if (r.bytes == 0)
		return 0;
	/* the server prints the client's report: the same row twice when both sides' text is
	 * in one capture */
	for (size_t i = 0; i < o->n_rows; i++)
		if (same_row(&o->rows[i], &r)) {
			o->n_duplicates++;
			return 1;
		}
	if (o->n_rows == MAX_ROWS)
		return 1;
	if (o->n_rows == p->rows_cap) {
		size_t cap = p->rows_cap ? p->rows_cap * 2 : 32;
		void *nr = realloc(o->rows, cap * sizeof(*o->rows));

		if (!nr)
			return -ENOMEM;
		o->rows = nr;
		p->rows_cap = cap;
	}
	o->rows[o->n_rows++] = r;
	if (o->kind == BENCH_PT_KIND_UNKNOWN)
		o->kind = r.unit == BENCH_PT_UNIT_USEC ? BENCH_PT_KIND_LAT : BENCH_PT_KIND_BW;
	return 1;
}

/* "GID: 254:128:00:00:00:00:00:00:148:109:174:03:00:50:07:120": bytes in DECIMAL. */
static void gid_line(struct parser *p, const char *s)
{
	const char *q = s + 4;
	unsigned b, n = 0, nonzero = 0;
	int used;

	while (n < 16 && sscanf(q, " %u%n", &b, &used) == 1 && b < 256) {
		nonzero |= b;
		n++;
		q += used;
		if (*q != ':')
			break;
		q++;
	}
	if (n != 16)
		return;
	p->o->gid_printed = true;
	if (!nonzero)
		p->o->zero_gid = true;
}

static void cuda_line(struct parser *p, const char *s)
{
	struct bench_perftest_out *o = p->o;
	const char *q;
	int idx, bus, dev;

	/* "allocated GPU buffer address at" is printed by every GPU memory backend of perftest
	 * (CUDA, ROCm's hipMalloc, the others), so a ROCm run counts as GPU memory too */
	if (strstr(s, "initializing CUDA") || strstr(s, "cuMemAlloc") ||
	    strstr(s, "CUDA_MEM_DEVICE") || strstr(s, "hipMalloc") ||
	    strstr(s, "allocated GPU buffer"))
		o->cuda = true;
	if (strstr(s, "using DMA-BUF") || strstr(s, "ibv_reg_dmabuf_mr"))
		o->cuda = o->dmabuf = true;
	if ((q = strstr(s, "CUDA device ")) &&
	    sscanf(q, "CUDA device %d: PCIe address is %x:%x", &idx, &bus, &dev) == 3 && idx >= 0 &&
	    idx < MAX_CUDA && bus >= 0 && bus < 256 && dev >= 0 && dev < 32) {
		o->cuda = true;
		p->cuda[idx].bus = bus;
		p->cuda[idx].dev = dev;
		p->cuda[idx].set = true;
	}
	if ((q = strstr(s, "Picking device No. ")) &&
	    sscanf(q, "Picking device No. %d", &idx) == 1 && idx >= 0 && idx < MAX_CUDA)
		p->cuda_pick = idx;
	if ((q = strstr(s, "device name = [")))
		sscanf(q, "device name = [%63[^]]", o->gpu_name);
}

static int one_line(struct parser *p, char *raw, unsigned line)
{
	char *s = trim(raw);
	int r;

	if (!*s)
		return 0;
	if (is_dashes(s))
		goto out;
	if (strstr(s, "Waiting for client to connect"))
		p->o->server = true;
	if (title_line(p, s, line))
		goto out;
	if (table_header(p, s, line))
		goto out;
	if ((r = row_line(p, s, line)) != 0)
		return r < 0 ? r : 0;
	if (str_startswith(s, "local address:"))
		p->o->n_local++;
	else if (str_startswith(s, "remote address:"))
		p->o->n_remote++;
	else if (str_startswith(s, "GID:"))
		gid_line(p, s);
	header_fields(p, s);
	cuda_line(p, s);
	match_events(p, s, line);
out:
	copy_text(p->prev, sizeof(p->prev), s);
	return 0;
}

int bench_perftest_parse(const char *buf, size_t len, struct bench_perftest_out *ret)
{
	struct bench_perftest_out o = { .qps = -1,
					.mtu = -1,
					.gid_index = -1,
					.tx_depth = -1,
					.cq_mod = -1,
					.outstand_reads = -1,
					.cuda_bus = -1,
					.cuda_dev = -1 };
	struct parser p = { .o = &o, .cuda_pick = -1 };
	_cleanup_free_ char *line = malloc(LINE_MAX_BYTES);
	size_t i = 0;
	unsigned no = 0;
	int r = 0;

	if (!line)
		return -ENOMEM;
	while (i < len && r >= 0) {
		size_t l = 0;

		/* one line, cut at LINE_MAX_BYTES; NUL bytes and \r end nothing but are dropped */
		while (i < len && buf[i] != '\n') {
			if (buf[i] != '\0' && buf[i] != '\r' && l + 1 < LINE_MAX_BYTES)
				line[l++] = buf[i];
			i++;
		}
		i++;
		line[l] = '\0';
		r = one_line(&p, line, ++no);
	}
	o.n_lines = no;
	if (r < 0) {
		bench_perftest_out_free(&o);
		return r;
	}
	if (p.cuda_pick >= 0 && p.cuda[p.cuda_pick].set) {
		o.cuda_bus = p.cuda[p.cuda_pick].bus;
		o.cuda_dev = p.cuda[p.cuda_pick].dev;
	} else if (p.cuda[0].set) {
		o.cuda_bus = p.cuda[0].bus;
		o.cuda_dev = p.cuda[0].dev;
	}
	*ret = o;
	return 0;
}

void bench_perftest_out_free(struct bench_perftest_out *o)
{
	if (!o)
		return;
	free(o->rows);
	free(o->events);
	o->rows = NULL;
	o->events = NULL;
	o->n_rows = o->n_events = 0;
}

double bench_perftest_gbps(const struct bench_perftest_row *r, double v)
{
	/* perftest's MB and MiB are both 2^20 bytes (format_factor 0x100000) */
	return r->unit == BENCH_PT_UNIT_MIBPS ? v * 1048576.0 * 8 / 1e9 : v;
}

#define BIG_MESSAGE 65536

const struct bench_perftest_row *bench_perftest_judged_row(const struct bench_perftest_out *o,
							   bool *small)
{
	const struct bench_perftest_row *best = NULL, *any = NULL;

	if (small)
		*small = false;
	for (size_t i = 0; i < o->n_rows; i++) {
		const struct bench_perftest_row *r = &o->rows[i];

		if (r->unit == BENCH_PT_UNIT_USEC || o->kind == BENCH_PT_KIND_LAT) {
			if (!best || r->bytes < best->bytes)
				best = r;
			continue;
		}
		if (isnan(r->avg))
			continue;
		if (!any || bench_perftest_gbps(r, r->avg) > bench_perftest_gbps(any, any->avg))
			any = r;
		if (r->bytes >= BIG_MESSAGE &&
		    (!best ||
		     bench_perftest_gbps(r, r->avg) > bench_perftest_gbps(best, best->avg)))
			best = r;
	}
	if (!best && any && small)
		*small = true;
	return best ? best : any;
}

const struct bench_perftest_event *bench_perftest_event_find(const struct bench_perftest_out *o,
							     enum bench_perftest_event_kind k)
{
	for (size_t i = 0; i < o->n_events; i++)
		if (o->events[i].kind == k)
			return &o->events[i];
	return NULL;
}

bool bench_perftest_failed(const struct bench_perftest_out *o)
{
	for (size_t i = 0; i < o->n_events; i++)
		if (BENCH_PT_EV_IS_FAILURE(o->events[i].kind))
			return true;
	return false;
}
