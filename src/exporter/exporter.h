/* SPDX-License-Identifier: Apache-2.0 */
/* `rdmak exporter`: the node's RDMA counters in the Prometheus text format.
 *
 * The topology (which devices, ports, counter files and PCI functions there are, and the
 * doctor's findings about them) comes from the hardware model (hw_load) and is cached; a scrape
 * reads only the files that change (counters, hw_counters, port state, phys_state, rate and the
 * PCIe link attributes) through directory fds opened when the topology was loaded, never a
 * process spawned. The cache is reloaded when the set of RDMA devices changes (one readdir of
 * class/infiniband per scrape says so), when a port's directory is gone, and by
 * exporter_refresh() (the daemon's periodic refresh, for the doctor's findings).
 *
 * Metric names: docs/exporter.md. Thread-safe: scrapes run concurrently (up to max_scrapes of
 * them), a reload waits for the scrapes in progress. */
#ifndef RDMAK_EXPORTER_H
#define RDMAK_EXPORTER_H

#include <stdbool.h>
#include <stddef.h>

#include "hw/hw.h"

struct exporter;

enum exporter_format {
	EXPORTER_TEXT,	      /* text/plain; version=0.0.4 */
	EXPORTER_OPENMETRICS, /* application/openmetrics-text; version=1.0.0 */
};

/* The format an Accept header asks for: OpenMetrics when it names application/openmetrics-text
 * (with a q above 0), else the text format. NULL: text. */
enum exporter_format exporter_format_from_accept(const char *accept);
const char *exporter_content_type(enum exporter_format f);

/* An exporter over ctx (borrowed: it must outlive the exporter), serving at most max_scrapes
 * at once. Loads the topology now. -errno (hw_load's failure, with its path in err). */
int exporter_new(struct hw_ctx *ctx, unsigned max_scrapes, struct exporter **ret,
		 struct hw_error *err);
void exporter_free(struct exporter *e);

/* Reload the topology and the doctor's findings (waits for the scrapes in progress). */
int exporter_refresh(struct exporter *e, struct hw_error *err);

/* One scrape: the whole answer, malloc'd, in *ret (*ret_len bytes). -EBUSY when max_scrapes
 * are in progress already; -ENOMEM. An unreadable counter file never fails it: it is left
 * out and counted in rdmak_exporter_read_errors_total{file}. */
int exporter_scrape(struct exporter *e, enum exporter_format f, char **ret, size_t *ret_len);

/* Add the counter objects of RDMA netlink (rdmak_rdma_counter_*) to every scrape. Tried once:
 * -EPROTONOSUPPORT where the kernel has no RDMA subsystem, and the scrapes then have none of
 * those series (never a failed scrape). */
int exporter_rdma_enable(struct exporter *e);

/* How many times the topology was loaded (1 after exporter_new). */
unsigned long exporter_loads(struct exporter *e);

#endif
