/* SPDX-License-Identifier: Apache-2.0 */
/* Entry points of the roles of the multi-call binary. Each returns the process exit code.
 *
 * Command lines, the same in every role: getopt_long from optind = 1, long options always
 * (--root, --sysfs, --devfs, --json, --config, -h/--help to stdout with exit 0), an unknown
 * option or a stray argument prints the usage to stderr, and options that would be ignored
 * (list --pkeys without --json) are refused rather than accepted. Each role names its exit
 * codes in one enum beside its usage text. What differs, on purpose: the usage exit is 2
 * (list, snapshot, plugin, webhook, ipam), but 3 for doctor and bench, whose 2 already means
 * "a check / the run failed" for scripts and CI gates; rdmak-cni answers usage errors in the
 * CNI error JSON (code 4), as the CNI spec asks. */
#ifndef RDMAK_ROLES_H
#define RDMAK_ROLES_H

int list_main(int argc, char **argv);
int snapshot_main(int argc, char **argv);
int plugin_main(int argc, char **argv);
int doctor_main(int argc, char **argv);
int cni_main(int argc, char **argv);
/* rdmak cni: `install` (src/cni/install.c), else the CNI plugin (cni_main) */
int cni_cli_main(int argc, char **argv);
int cni_install_main(int argc, char **argv);
int ipam_main(int argc, char **argv);
int webhook_main(int argc, char **argv);
int bench_main(int argc, char **argv);
int vf_main(int argc, char **argv);
int exporter_main(int argc, char **argv);
int convert_main(int argc, char **argv);
int fabric_main(int argc, char **argv);
int probe_main(int argc, char **argv);
int dra_main(int argc, char **argv);

#endif
