/* SPDX-License-Identifier: Apache-2.0 */
/* The ceiling model: what one side of a perftest run can carry at most, from the hardware
 * model, and which factor sets it. Three factors, each a term in Gb/s of payload:
 *
 *  port  the port's data rate (after line coding) times the share of each packet that is
 *        payload: per packet the transport headers, per message the RDMA extended header.
 *        InfiniBand: LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 B (+ GRH 40 with a GID index).
 *        RoCE v2/IPv4: preamble+SFD 8 + IFG 12 + Ethernet 14 + FCS 4 + IPv4 20 + UDP 8 + BTH 12
 *        + ICRC 4 = 82 B (IPv6 +20, RoCE v1: GRH 40 instead of IP/UDP). The path MTU of a RoCE
 *        port follows its netdev MTU (iboe_get_mtu: MTU - 96, rounded down to 256..4096).
 *        A RoCE LAG over 802.3ad/balance-xor spreads several QPs over its legs.
 *  pcie  every PCIe link the data crosses: the HCA's (a VF's is its PF's), and with GPU
 *        memory the GPU's and the bridges between them, else the bridges up to the root port.
 *        Usable = GT/s x width x line coding x TLP efficiency (256 B payload, 24 B framing,
 *        header, sequence and LCRC) x 0.96 for DLLPs and read requests.
 * The GPU-HCA relation is not a term: what GPU memory across the CPU sockets (SYS) reaches
 * differs from one report to the next (perftest#241; docs/bench.md's table), so there is no
 * figure to model; the verdict names it as a placement problem instead.
 * docs/bench.md checks the model against every real figure we have. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "util/cleanup.h"
#include "util/strutil.h"

#define IB_HDR	     26 /* LRH 8 + BTH 12 + ICRC 4 + VCRC 2 */
#define IB_GRH	     40
#define ROCE2_V4_HDR 82	 /* 8 + 12 + 14 + 4 + 20 + 8 + 12 + 4 */
#define ROCE2_V6_HDR 102 /* IPv6 header is 40, not 20 */
#define ROCE1_HDR    94	 /* 8 + 12 + 14 + 4 + GRH 40 + 12 + 4 */
#define RETH	     16	 /* RDMA write/read request: first packet of each message */
#define AETH_READ    8	 /* read responses: first and last packet carry an AETH */

static const char *const factor_names[BENCH_CEIL__MAX] = { "port", "pcie" };

const char *bench_ceiling_factor_name(enum bench_ceil_factor f)
{
	return (unsigned)f < BENCH_CEIL__MAX ? factor_names[f] : "?";
}

unsigned bench_ceiling_roce_mtu(unsigned netdev_mtu)
{
	/* GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4, as include/rdma/ib_addr.h */
	int m = (int)netdev_mtu - 96;

	for (unsigned mtu = 4096; mtu >= 256; mtu /= 2)
		if (m >= (int)mtu)
			return mtu;
	return 0;
}

double bench_ceiling_pcie_gbps(double gts, unsigned width)
{
	/* 8b/10b up to 5 GT/s, 128b/130b for Gen3-5, Gen6 FLIT mode 236 of 256 bytes */
	double coding = gts <= 5.0 ? 0.8 : gts < 64 ? 128.0 / 130 : 236.0 / 256;

	return gts * width * coding * (256.0 / (256 + 24)) * 0.96;
}

/* Data rate of the lanes: the kernel prints the signalling class (4X FDR = 56, QDR = 40 with
 * 8b/10b), Ethernet speeds are already data rates. */
static double data_rate(const struct hw_rate *r, enum hw_link_layer ll, char *coding, size_t n)
{
	const char *s = r->speed;

	coding[0] = '\0';
	if (ll != HW_LINK_IB)
		return r->gbps;
	if (!strcmp(s, "SDR") || !strcmp(s, "DDR") || !strcmp(s, "QDR")) {
		snprintf(coding, n, "8b/10b line coding");
		return r->gbps * 0.8;
	}
	if (!strcmp(s, "FDR")) {
		/* 14.0625 GBd per lane, 64b/66b */
		snprintf(coding, n, "64b/66b at 14.0625 GBd");
		return r->width * 14.0625 * 64 / 66;
	}
	return r->gbps; /* FDR10, EDR, HDR, NDR, XDR: the printed rate is the data rate */
}

static const char *gbps_text(double v, char *buf, size_t n)
{
	snprintf(buf, n, v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : "%.2f", v);
	return buf;
}

static double wire_share(uint64_t bytes, unsigned mtu, unsigned hdr, unsigned per_msg)
{
	uint64_t pkts = (bytes + mtu - 1) / mtu;

	return (double)bytes / ((double)bytes + (double)pkts * hdr + per_msg);
}

static struct bench_ceil_term *term_add(struct bench_ceiling *c, enum bench_ceil_factor f,
					double gbps)
{
	struct bench_ceil_term *t;

	if (c->n_terms == ELEMENTSOF(c->terms))
		return NULL;
	t = &c->terms[c->n_terms++];
	memset(t, 0, sizeof(*t));
	t->factor = f;
	t->gbps = gbps;
	return t;
}

static const struct hw_gid *gid_at(const struct hw_port *p, int idx)
{
	for (size_t i = 0; idx >= 0 && i < p->n_gids; i++)
		if ((int)p->gids[i].index == idx)
			return &p->gids[i];
	return NULL;
}

/* The netdev whose MTU sets a RoCE port's path MTU: the one named, the owner of the GID
 * perftest used, the LAG's bond, or the port's netdev. */
static const struct hw_netdev *roce_netdev(const struct hw_node *node, const struct hw_rdma_dev *d,
					   const struct hw_port *p,
					   const struct bench_ceil_input *in)
{
	const struct hw_gid *g = gid_at(p, in->gid_index);
	const struct hw_netdev *nd = NULL;

	if (in->netdev)
		nd = hw_node_netdev(node, in->netdev);
	if (!nd && g && g->ndev[0])
		nd = hw_node_netdev(node, g->ndev);
	if (!nd && d->lag)
		nd = d->lag;
	if (!nd)
		nd = p->netdev;
	return nd;
}

static unsigned lag_legs(const struct hw_rdma_dev *d, int qps)
{
	const struct hw_bond *b = d->lag ? d->lag->bond : NULL;
	unsigned up = 0;

	/* active-backup uses one leg; 802.3ad and balance-xor hash each QP's flow onto one */
	if (!b || (b->mode_id != 4 && b->mode_id != 2) || qps < 2)
		return 1;
	for (size_t i = 0; i < b->n_slaves; i++)
		if (b->slaves[i]->carrier == 1)
			up++;
	return up > 1 ? (qps < (int)up ? (unsigned)qps : up) : 1;
}

static void port_term(struct bench_ceiling *c, const struct hw_node *node,
		      const struct hw_rdma_dev *d, const struct hw_port *p,
		      const struct bench_ceil_input *in)
{
	uint64_t bytes = in->bytes ? in->bytes : 65536;
	unsigned per_msg = !strcmp(in->verb, "RDMA_Write")  ? RETH
			   : !strcmp(in->verb, "RDMA_Read") ? AETH_READ
							    : 0;
	double mult = in->bidirectional ? 2 : 1, share;
	char coding[48], a[16], lagtxt[64] = "", name[80];
	struct bench_ceil_term *t;

	c->data_gbps = data_rate(&p->rate, c->link, coding, sizeof(coding));
	if (c->link == HW_LINK_IB) {
		c->path_mtu = in->mtu > 0 ? (unsigned)in->mtu : 4096;
		c->header_bytes = IB_HDR + (in->gid_index >= 0 ? IB_GRH : 0);
		snprintf(name, sizeof(name), "%uX %s InfiniBand", p->rate.width, p->rate.speed);
	} else {
		const struct hw_netdev *nd = roce_netdev(node, d, p, in);
		const struct hw_gid *g = gid_at(p, in->gid_index);

		if (nd) {
			str_copy(c->netdev, sizeof(c->netdev), nd->name);
			c->netdev_mtu = nd->mtu;
		}
		/* what perftest printed is what ran (both sides' minimum); else the netdev's */
		c->path_mtu = in->mtu > 0     ? (unsigned)in->mtu
			      : c->netdev_mtu ? bench_ceiling_roce_mtu(c->netdev_mtu)
					      : 1024;
		if (!c->path_mtu)
			c->path_mtu = 256;
		str_copy(c->gid_type, sizeof(c->gid_type), g && g->type[0] ? g->type : "RoCE v2");
		c->ipv6 = g && strcmp(g->type, "RoCE v2") == 0 && !g->ipv4;
		c->header_bytes = strcmp(c->gid_type, "RoCE v2") ? ROCE1_HDR
				  : c->ipv6			 ? ROCE2_V6_HDR
								 : ROCE2_V4_HDR;
		c->legs = lag_legs(d, in->qps);
		if (c->legs > 1)
			snprintf(lagtxt, sizeof(lagtxt), " over %u LAG legs", c->legs);
		snprintf(name, sizeof(name), "%s%s", c->gid_type, c->ipv6 ? "/IPv6" : "");
	}
	if (!c->legs)
		c->legs = 1;
	share = wire_share(bytes, c->path_mtu, c->header_bytes, per_msg);
	t = term_add(c, BENCH_CEIL_PORT, c->data_gbps * c->legs * share * mult);
	if (!t)
		return;
	snprintf(t->phrase, sizeof(t->phrase), "%s%s can carry at path MTU %u%s", name, lagtxt,
		 c->path_mtu, in->bidirectional ? " in both directions" : "");
	snprintf(t->what, sizeof(t->what),
		 "%s %s port %s/%u: %s Gb/s of data%s%s%s, %u B of headers per %u B packet%s",
		 p->rate.raw, hw_link_layer_name(c->link), d->name, p->num,
		 gbps_text(c->data_gbps, a, sizeof(a)), coding[0] ? " (" : "", coding,
		 coding[0] ? ")" : "", c->header_bytes, c->path_mtu,
		 per_msg ? (per_msg == RETH ? " and 16 B per message" : " and 8 B per message")
			 : "");
	if (c->legs > 1)
		snprintf(t->what + strlen(t->what), sizeof(t->what) - strlen(t->what), ", %u legs",
			 c->legs);
	/* RoCE below 4096: what a jumbo interface MTU would allow */
	if (c->link == HW_LINK_ETH && c->path_mtu < 4096)
		c->mtu4096_gbps = c->data_gbps * c->legs *
				  wire_share(bytes, 4096, c->header_bytes, per_msg) * mult;
}

/* The PCI function whose link carries a device's traffic: a VF's is its PF's. */
static const struct hw_pci *link_owner(const struct hw_pci *p)
{
	return p && p->physfn ? p->physfn : p;
}

struct link_seen {
	char bdf[HW_BDF_MAX];
	struct hw_pci_link l;
	const char *role; /* "mlx5_0", "GPU3", "bridge" */
	bool endpoint;
};

static void pcie_terms(struct bench_ceiling *c, struct hw_ctx *ctx, const struct hw_rdma_dev *d,
		       const struct bench_ceil_input *in)
{
	const struct hw_pci *nic = link_owner(d->pci), *gpu = in->gpu ? in->gpu->pci : NULL;
	struct link_seen seen[40];
	size_t n = 0, common = 0, best = SIZE_MAX;
	double mult = in->bidirectional ? 2 : 1;
	char gpuname[16] = "";
	struct bench_ceil_term *t;

	if (!nic)
		return;
	if (gpu) {
		snprintf(gpuname, sizeof(gpuname), "GPU%u", in->gpu->index);
		common = hw_pci_common_path(nic, gpu);
	}
	/* endpoints first, then the bridges the data crosses: below the common ancestor towards
	 * the GPU, or every bridge up to the root port for host memory */
	const struct hw_pci *ends[2] = { nic, gpu };
	for (int e = 0; e < 2; e++) {
		const struct hw_pci *f = ends[e];

		if (!f)
			continue;
		for (size_t k = gpu ? common : 0; k <= f->path_len && n < ELEMENTSOF(seen); k++) {
			const char *bdf = k < f->path_len ? f->path[k] : f->bdf;
			bool dup = false;

			for (size_t i = 0; i < n; i++)
				dup |= !strcmp(seen[i].bdf, bdf);
			if (dup || hw_pci_read_link(ctx, bdf, &seen[n].l) < 0 ||
			    !seen[n].l.cur_gts || !seen[n].l.cur_width)
				continue;
			str_copy(seen[n].bdf, sizeof(seen[n].bdf), bdf);
			seen[n].endpoint = k == f->path_len;
			seen[n].role = !seen[n].endpoint ? "bridge" : e == 0 ? d->name : gpuname;
			n++;
		}
	}
	for (size_t i = 0; i < n; i++) {
		double g = bench_ceiling_pcie_gbps(seen[i].l.cur_gts, seen[i].l.cur_width);

		double bg = best == SIZE_MAX ? 0
					     : bench_ceiling_pcie_gbps(seen[best].l.cur_gts,
								       seen[best].l.cur_width);

		/* at equal speed name an endpoint (the HCA, the GPU) rather than a bridge */
		if (best == SIZE_MAX || g < bg - 1e-9 ||
		    (g < bg + 1e-9 && seen[i].endpoint && !seen[best].endpoint))
			best = i;
	}
	if (best != SIZE_MAX) {
		const struct link_seen *s = &seen[best];
		char a[16];

		t = term_add(c, BENCH_CEIL_PCIE,
			     bench_ceiling_pcie_gbps(s->l.cur_gts, s->l.cur_width) * mult);
		if (t) {
			snprintf(t->phrase, sizeof(t->phrase),
				 "the PCIe link of %s%s (%.1f GT/s x%u) can carry",
				 s->endpoint ? "" : "bridge ", s->endpoint ? s->role : s->bdf,
				 s->l.cur_gts, s->l.cur_width);
			snprintf(
				t->what, sizeof(t->what),
				"PCIe %.1f GT/s x%u at %s (%s): about %s Gb/s after line coding and "
				"TLP/DLLP overhead; %zu link%s on the path",
				s->l.cur_gts, s->l.cur_width, s->bdf, s->role,
				gbps_text(t->gbps / mult, a, sizeof(a)), n, n == 1 ? "" : "s");
		}
	}
	/* an endpoint that trained below what it can do: a slower slot or a bad link */
	for (size_t i = 0; i < n; i++) {
		const struct link_seen *s = &seen[i];

		if (!s->endpoint || !s->l.max_gts || !s->l.max_width ||
		    (s->l.cur_gts >= s->l.max_gts && s->l.cur_width >= s->l.max_width))
			continue;
		t = term_add(c, BENCH_CEIL_PCIE,
			     bench_ceiling_pcie_gbps(s->l.cur_gts, s->l.cur_width) * mult);
		if (!t)
			break;
		t->placement = true;
		snprintf(t->phrase, sizeof(t->phrase),
			 "the PCIe link of %s (%.1f GT/s x%u, trained below its %.1f GT/s x%u) "
			 "can carry",
			 s->role, s->l.cur_gts, s->l.cur_width, s->l.max_gts, s->l.max_width);
		snprintf(
			t->what, sizeof(t->what),
			"%.63s (%.15s) runs its PCIe link at %.1f GT/s x%u but can do %.1f GT/s x%u: "
			"a slower or narrower slot, or a link that trained down",
			s->role, s->bdf, s->l.cur_gts, s->l.cur_width, s->l.max_gts,
			s->l.max_width);
	}
}

int bench_ceiling_compute(struct hw_ctx *ctx, const struct hw_node *node,
			  const struct bench_ceil_input *in, struct bench_ceiling *ret)
{
	struct bench_ceiling c = { .gpu_rel = HW_TOPO_UNKNOWN };
	const struct hw_rdma_dev *d = node && in->device ? hw_node_rdma(node, in->device) : NULL;
	const struct hw_port *p;

	if (in->device)
		str_copy(c.device, sizeof(c.device), in->device);
	if (!d) {
		snprintf(c.why_unknown, sizeof(c.why_unknown),
			 "%s is not in the hardware model read%s",
			 in->device ? in->device : "the device",
			 in->device ? "" : " (perftest printed no Device)");
		goto out;
	}
	/* the port asked for, else the first ACTIVE one, else port 1 to say it is down */
	p = bench_port(d, in->port);
	if (!p && !in->port && d->n_ports)
		p = &d->ports[0];
	if (!p) {
		snprintf(c.why_unknown, sizeof(c.why_unknown), "%s has no port %u", d->name,
			 in->port);
		goto out;
	}
	c.port = p->num;
	c.link = p->link_layer;
	str_copy(c.rate, sizeof(c.rate), p->rate.raw);
	c.rate_gbps = p->rate.gbps;
	if (!hw_port_state_is_active(p->state)) {
		snprintf(c.why_unknown, sizeof(c.why_unknown),
			 "%s port %u is %s, its rate means nothing", d->name, p->num,
			 p->state_name[0] ? p->state_name : "not ACTIVE");
		goto out;
	}
	if (!(p->rate.gbps > 0) || c.link == HW_LINK_UNKNOWN) {
		snprintf(c.why_unknown, sizeof(c.why_unknown),
			 "%s port %u has no readable rate or link layer", d->name, p->num);
		goto out;
	}
	port_term(&c, node, d, p, in);
	pcie_terms(&c, ctx, d, in);
	if (in->gpu && in->gpu->pci && d->pci) {
		c.gpu_rel = hw_topo_relation(in->gpu->pci, d->pci);
		str_copy(c.gpu_bdf, sizeof(c.gpu_bdf), in->gpu->pci->bdf);
	}
	c.known = c.n_terms > 0;
	/* at equal figures the placement problem is the one to name: it is what can be fixed */
	for (size_t i = 1; i < c.n_terms; i++)
		if (c.terms[i].gbps < c.terms[c.limit].gbps - 1e-9 ||
		    (c.terms[i].gbps < c.terms[c.limit].gbps + 1e-9 && c.terms[i].placement &&
		     !c.terms[c.limit].placement))
			c.limit = i;
	c.gbps = c.known ? c.terms[c.limit].gbps : 0;
out:
	*ret = c;
	return 0;
}
