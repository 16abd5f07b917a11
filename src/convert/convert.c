/* SPDX-License-Identifier: Apache-2.0 */
/* `rdmak convert FILE...`: the anchors' resources in, rdmak's out (YAML, or --json's model). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convert/convert.h"
#include "doc/doc.h"
#include "doc/yaml.h"
#include "roles.h"
#include "util/cleanup.h"
#include "util/fileio.h"

#define INPUT_MAX (16 << 20)

enum {
	CONVERT_EXIT_OK = 0,
	CONVERT_EXIT_FIX = 1,
	CONVERT_EXIT_USAGE = 2,
	CONVERT_EXIT_IO = 3,
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rdmak convert [--json] FILE...\n"
		"\n"
		"Read Network Operator's NicClusterPolicy, HostDeviceNetwork, MacvlanNetwork and IPoIBNetwork,\n"
		"Spiderpool's SpiderMultusConfig and SpiderIPPool, and the SR-IOV operator's\n"
		"SriovNetworkNodePolicy (YAML, several documents per file; - is stdin) and write what rdmak\n"
		"reads instead: NetworkAttachmentDefinitions for rdmak-cni and rdmak-ipam, and the values of\n"
		"the chart deploy/chart/rdmak (the plugin's config unchanged). Each thing that could not be\n"
		"carried is said in a comment above its object; a comment starting with FIX means the output\n"
		"needs editing before use. docs/convert.md has the mapping.\n"
		"\n"
		"  -j, --json   the model as JSON (documents, their notes and objects, values)\n"
		"  -h, --help   this text\n"
		"\n"
		"Exit: 0 converted, 1 converted with at least one FIX note, 2 usage error, 3 a file could not\n"
		"be read or parsed, or the output could not be written.\n");
}

static int read_inputs(int n, char **files, json_t *inputs)
{
	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *buf = NULL;
		char err[256];
		json_t *docs, *d;
		size_t len, k;
		int r;

		r = fileio_read_at(AT_FDCWD, strcmp(files[i], "-") ? files[i] : "/dev/stdin",
				   INPUT_MAX, &buf, &len);
		if (r < 0) {
			fprintf(stderr, "rdmak convert: cannot read %s: %s\n", files[i],
				strerror(-r));
			return r;
		}
		if ((r = doc_parse_all(buf, len, &docs, err, sizeof(err))) < 0) {
			fprintf(stderr, "rdmak convert: %s: %s\n", files[i],
				r == -EINVAL ? err : strerror(-r));
			return r;
		}
		json_array_foreach(docs, k, d)
		{
			/* a List (kubectl get -o yaml) holds its objects in items */
			const json_t *items = json_object_get(d, "items");
			size_t m, cnt = json_is_array(items) ? json_array_size(items) : 1;

			for (m = 0; m < cnt; m++) {
				json_t *o = json_is_array(items) ? json_array_get(items, m) : d;

				if (json_array_append_new(inputs,
							  json_pack("{s:s,s:O}", "file", files[i],
								    "object", o)) < 0) {
					json_decref(docs);
					return -ENOMEM;
				}
			}
		}
		json_decref(docs);
	}
	return 0;
}

static int write_yaml(FILE *f, const json_t *model, int nfiles, char **files)
{
	json_int_t fixes = json_integer_value(json_object_get(model, "fixes"));
	const json_t *values = json_object_get(model, "values");
	size_t i, j;
	json_t *d, *x;

	fprintf(f, "# rdmak convert");
	for (int k = 0; k < nfiles; k++)
		fprintf(f, " %s", files[k]);
	fprintf(f,
		"\n# %" JSON_INTEGER_FORMAT
		" FIX note%s: the output needs editing where one says so.\n",
		fixes, fixes == 1 ? "" : "s");
	json_array_foreach(json_object_get(model, "documents"), i, d)
	{
		const json_t *from = json_object_get(d, "from");
		const char *kind = json_string_value(json_object_get(from, "kind"));
		const char *name = json_string_value(json_object_get(from, "name"));
		char head[512];
		json_t *n;

		snprintf(head, sizeof(head), "\nFrom %s %s (%s):", kind ? kind : "(no kind)",
			 name ? name : "(no name)",
			 json_string_value(json_object_get(from, "file")));
		if (doc_write_yaml_comment(f, head) < 0)
			return -EIO;
		json_array_foreach(json_object_get(d, "notes"), j, n)
		{
			const char *path = json_string_value(json_object_get(n, "path"));
			char line[1400];

			snprintf(line, sizeof(line), "  %s%s%s%s",
				 json_is_true(json_object_get(n, "fix")) ? "FIX " : "", path,
				 *path ? ": " : "", json_string_value(json_object_get(n, "text")));
			if (doc_write_yaml_comment(f, line) < 0)
				return -EIO;
		}
		json_array_foreach(json_object_get(d, "objects"), j,
				   x) if (fputs("---\n", f) < 0 ||
					  doc_write_yaml(f, x) < 0) return -EIO;
	}
	if (values) {
		if (doc_write_yaml_comment(
			    f,
			    "\nThe chart's values. Its node parts need a namespace that Pod Security "
			    "admission lets run privileged pods (hostPath: docs/deploy.md):\n"
			    "  kubectl create namespace rdmak\n"
			    "  kubectl label namespace rdmak pod-security.kubernetes.io/enforce=privileged\n"
			    "  helm install rdmak deploy/chart/rdmak -n rdmak -f <this document>") <
			    0 ||
		    fputs("---\n", f) < 0 || doc_write_yaml(f, values) < 0)
			return -EIO;
	}
	return 0;
}

int convert_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	json_t *inputs = NULL, *model = NULL;
	bool json = false;
	int c, r, rc = CONVERT_EXIT_IO;

	signal(SIGPIPE, SIG_IGN);
	optind = 1;
	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'h': usage(stdout); return CONVERT_EXIT_OK;
		default: usage(stderr); return CONVERT_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "rdmak convert: give one FILE or more\n");
		usage(stderr);
		return CONVERT_EXIT_USAGE;
	}
	inputs = json_array();
	if (!inputs || read_inputs(argc - optind, argv + optind, inputs) < 0)
		goto out;
	if ((r = convert_run(inputs, &model)) < 0) {
		fprintf(stderr, "rdmak convert: %s\n", strerror(-r));
		goto out;
	}
	r = json ? doc_json(stdout, model)
		 : write_yaml(stdout, model, argc - optind, argv + optind);
	if (r < 0 || fflush(stdout) == EOF || ferror(stdout)) {
		fprintf(stderr, "rdmak convert: cannot write the output: %s\n",
			strerror(r < 0 ? -r : errno));
		goto out;
	}
	rc = json_integer_value(json_object_get(model, "fixes")) > 0 ? CONVERT_EXIT_FIX
								     : CONVERT_EXIT_OK;
out:
	json_decref(inputs);
	json_decref(model);
	return rc;
}
