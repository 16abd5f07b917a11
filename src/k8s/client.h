/* SPDX-License-Identifier: Apache-2.0 */
/* A client of the Kubernetes API server over src/httpc: its address and credentials from a
 * kubeconfig (--kubeconfig: the current context's cluster and user) or from inside a pod (the
 * KUBERNETES_SERVICE_HOST/PORT environment and the service account's token and CA), JSON in
 * and out, and watches. The credentials are the node owner's: a kubeconfig or the pod's own
 * service account, never anything a request names. */
#ifndef RDMAK_K8S_CLIENT_H
#define RDMAK_K8S_CLIENT_H

#include <jansson.h>
#include <stddef.h>

/* Where a pod's service account lives (the kubelet mounts it there). */
#define K8S_SERVICE_ACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct k8s_client;

/* From the kubeconfig at path (YAML or JSON; its current context), or, for NULL, from inside a
 * pod. What a kubeconfig may use: the cluster's server (https only), certificate-authority or
 * -data (else the system's CAs), the user's token, tokenFile, or client-certificate and
 * client-key (or their -data). Refused by name: insecure-skip-tls-verify, exec and
 * auth-provider plugins (rdmak runs no programs for credentials). -EINVAL with the field's
 * path in err, -ENOENT when a file is missing or (in a pod) KUBERNETES_SERVICE_HOST is unset. */
int k8s_client_new(const char *kubeconfig, struct k8s_client **ret, char *err, size_t errlen);
void k8s_client_free(struct k8s_client *c);
/* "https://10.0.0.1:443", for messages. */
const char *k8s_client_server(const struct k8s_client *c);
/* Each call's deadline, connect to last byte (default 10 s). */
void k8s_client_set_timeout(struct k8s_client *c, unsigned ms);

/* One request: path from the server's root ("/api/v1/nodes/n1"), body sent as JSON (NULL:
 * none). 0 with *status and *ret (the answer parsed as JSON; NULL when it is not, or ret is
 * NULL) for any HTTP status, else the transport's -errno with a sentence in err. */
int k8s_client_call(struct k8s_client *c, const char *method, const char *path, const json_t *body,
		    int *status, json_t **ret, char *err, size_t errlen);

/* A watch (path with "watch=1"): fn(ud, type, object) for each event ("ADDED", "MODIFIED",
 * "DELETED", "BOOKMARK", "ERROR") as it comes; a negative return stops it. Returns as
 * httpc_stream does: 0 when the server ended it, -ECANCELED for stop_fd, -ETIMEDOUT after
 * idle_ms without a byte; a status other than 200 is -EPROTO with the answer's message in err
 * (its code in *status). */
int k8s_client_watch(struct k8s_client *c, const char *path, int stop_fd, unsigned idle_ms,
		     int (*fn)(void *ud, const char *type, json_t *obj), void *ud, int *status,
		     char *err, size_t errlen);

/* The "message" of a Status answer, or "" (a borrowed string). */
const char *k8s_status_message(const json_t *answer);

#endif
