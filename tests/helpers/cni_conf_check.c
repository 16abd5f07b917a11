/* SPDX-License-Identifier: Apache-2.0 */
/* cni_conf_check FILE...: each FILE a CNI network configuration (a NetworkAttachmentDefinition's
 * spec.config, as Multus hands it to the plugin), checked by the parsers an ADD runs first, and
 * nothing else, so that deploy/'s examples are validated without touching a host:
 * cnispec_conf_parse (the protocol's keys), cniconf_parse (rdmak-cni's own keys: an unknown
 * key is code 2, a bad value code 7 naming its JSON path) and ipamconf_parse (rdmak-ipam's
 * "ipam" object). One line per file on stdout, "FILE: ok" or "FILE: code N: msg: details".
 * Exit 0 when every file passes, 1 when one does not, 2 on bad usage or an unreadable file. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cniconf/cniconf.h"
#include "cnispec/cnispec.h"
#include "ipamconf/ipamconf.h"
#include "util/cleanup.h"
#include "util/fileio.h"

static int check(const char *buf, size_t len, struct cnispec_error *err)
{
	struct cnispec_conf *conf = NULL;
	struct cniconf cfg = { 0 };
	struct ipamconf *ic = NULL;
	int r;

	r = cnispec_conf_parse(buf, len, CNISPEC_CMD_ADD, &conf, err);
	if (r < 0)
		return r;
	r = cniconf_parse(conf, &cfg, err);
	if (r >= 0 && conf->ipam_type && !strcmp(conf->ipam_type, "rdmak-ipam"))
		r = ipamconf_parse(conf->ipam, conf->name, &ic, err);
	if (r >= 0)
		cniconf_clear(&cfg);
	ipamconf_free(ic);
	cnispec_conf_free(conf);
	return r;
}

int main(int argc, char **argv)
{
	int bad = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: cni_conf_check FILE...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		_cleanup_free_ char *buf = NULL;
		struct cnispec_error err = { 0 };
		size_t len;

		if (fileio_read_at(AT_FDCWD, argv[i], 1 << 20, &buf, &len) < 0) {
			fprintf(stderr, "cni_conf_check: cannot read %s\n", argv[i]);
			return 2;
		}
		if (check(buf, len, &err) < 0) {
			printf("%s: code %u: %s: %s\n", argv[i], err.code, err.msg, err.details);
			bad = 1;
		} else {
			printf("%s: ok\n", argv[i]);
		}
	}
	return bad;
}
