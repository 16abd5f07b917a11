/* SPDX-License-Identifier: Apache-2.0 */
/* Kubernetes' name rules and quantities, once for every role: the plugin's resource names, the
 * webhook's namespaces, NAD names, resources and sizes, the CNI's pod names, bench's options.
 *
 * The rules are apimachinery's (pkg/util/validation: IsDNS1123Label, IsDNS1123Subdomain,
 * IsDNS1035Label, IsQualifiedName, IsValidLabelValue), core's IsExtendedResourceName
 * (pkg/apis/core/helper), which is what the kubelet's device manager checks a device plugin's
 * resource name with, and resource.Quantity's grammar (pkg/api/resource/quantity.go).
 *
 * Each check returns true when s is valid. Otherwise it returns false and, where why is not
 * NULL, points *why at a static sentence naming the rule that failed, in Kubernetes' own words
 * where it has them ("a lowercase RFC 1123 label must consist of ..."). *why is left alone on
 * success. Lengths are in bytes, as Kubernetes counts them. */
#ifndef K8S_NAMES_H
#define K8S_NAMES_H

#include <stdbool.h>
#include <stdint.h>

#define K8S_DNS1123_LABEL_MAX	  63
#define K8S_DNS1123_SUBDOMAIN_MAX 253
#define K8S_DNS1035_LABEL_MAX	  63
#define K8S_QUALIFIED_NAME_MAX	  63 /* the name part, after an optional "prefix/" */
#define K8S_LABEL_VALUE_MAX	  63
/* an extended resource's domain: quota names the resource "requests.<domain>/<name>", and
 * that prefix must still be a DNS-1123 subdomain */
#define K8S_EXTENDED_DOMAIN_MAX (K8S_DNS1123_SUBDOMAIN_MAX - 9)

/* [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63: a namespace, a node name's part. */
bool k8s_dns1123_label(const char *s, const char **why);

/* DNS-1123 labels joined by '.', at most 253 in all (no limit per label): most object names
 * (pods, NetworkAttachmentDefinitions, nodes). */
bool k8s_dns1123_subdomain(const char *s, const char **why);

/* [a-z]([-a-z0-9]*[a-z0-9])?, at most 63: a Service's name. */
bool k8s_dns1035_label(const char *s, const char **why);

/* [prefix/]name: prefix a DNS-1123 subdomain, name 1 to 63 of [A-Za-z0-9._-] starting and
 * ending alphanumeric. A label key, an annotation key. */
bool k8s_qualified_name(const char *s, const char **why);

/* "" or 1 to 63 of [A-Za-z0-9._-] starting and ending alphanumeric. */
bool k8s_label_value(const char *s, const char **why);

/* domain/name as the API server takes it in a container's resources and the kubelet from a
 * device plugin: a '/' (a name without one is native), no "kubernetes.io/" anywhere (that
 * domain and its subdomains are native), not starting "requests." (quota's prefix), and
 * "requests." + s a qualified name (so the domain is at most 244). */
bool k8s_extended_resource_name(const char *s, const char **why);

/* A resource.Quantity ("64Gi", "1.5", "500m", "1e3", "-2k"): [+-] digits [. digits] then a
 * binary suffix (Ki Mi Gi Ti Pi Ei), a decimal one (n u m "" k M G T P E) or an exponent (e or
 * E, a signed integer within int32). *ret: the value as a whole number, rounded up away from
 * 0 as Quantity.Value() does ("500m" is 1). 0, or -EINVAL for what Kubernetes would not parse,
 * -ERANGE for a value beyond int64 (which Kubernetes caps at 2^63-1 instead). *ret is written
 * only on success. */
int k8s_quantity_parse(const char *s, int64_t *ret, const char **why);

#endif
