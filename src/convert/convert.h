/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak convert: the anchors' custom resources (Network Operator's NicClusterPolicy,
 * HostDeviceNetwork, MacvlanNetwork, IPoIBNetwork; Spiderpool's SpiderMultusConfig and
 * SpiderIPPool; the SR-IOV operator's SriovNetworkNodePolicy) turned into what rdmak reads:
 * NetworkAttachmentDefinitions for rdmak-cni and rdmak-ipam, and the chart's values (the
 * plugin's config unchanged, which components to enable). What cannot be carried is said, per
 * object, as a note; a note that the output needs the user's hand (a pool no input defines, a
 * value no parser of rdmak's accepts) is a "fix". Nothing here prints. */
#ifndef RDMAK_CONVERT_H
#define RDMAK_CONVERT_H

#include <jansson.h>

/* Convert the objects of one run. inputs: an array of {"file": name, "object": the parsed
 * resource}; SpiderIPPools are looked up across all of them (a pool and its network are often
 * in different files). *ret (written only on success) is the model docs/convert.md describes:
 * {"documents": [{"from": {kind, name, namespace, file}, "notes": [{"path", "fix", "text"}],
 * "objects": [...]}], "values": {...} or absent, "fixes": N}. Returns 0 or -ENOMEM. */
int convert_run(const json_t *inputs, json_t **ret);

#endif
