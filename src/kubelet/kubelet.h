/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet device plugin transport (v1beta1), behind an interface of our own: the rest of
 * the plugin deals in these plain structs and never sees gRPC or protobuf-c types.
 *
 * One struct kubelet per process holds what every resource shares: the watch on
 * <kubelet_dir>/device-plugins (one inotify instance, which the caller may use for its own
 * folders too), one completion queue and two threads. One struct kubelet_server serves one
 * resource on its own unix socket (<kubelet_dir>/device-plugins/<socket_name>, mode 0600) and
 * registers it with the kubelet through <kubelet_dir>/device-plugins/kubelet.sock.
 *
 * Names: kubelet_ for the functions of the two objects, kl_ for the module's plain types and
 * helpers (and, in internal.h, for what its files share).
 */
#ifndef RDMAK_KUBELET_H
#define RDMAK_KUBELET_H

#include <stdbool.h>
#include <stddef.h>

struct kubelet;
struct kubelet_server;

struct kubelet_device {
	char id[64];
	bool healthy;
	int numa_node; /* -1: no topology */
};

struct kubelet_kv {
	char *key;
	char *value;
};

struct kubelet_device_spec {
	char *container_path;
	char *host_path;
	char permissions[4]; /* "rw", "rwm" */
};

struct kubelet_mount {
	char *container_path;
	char *host_path;
	bool read_only;
};

/* One container's share of an AllocateResponse. */
struct kubelet_container_alloc {
	struct kubelet_kv *envs;
	size_t n_envs;
	struct kubelet_mount *mounts;
	size_t n_mounts;
	struct kubelet_device_spec *devices;
	size_t n_devices;
	struct kubelet_kv *annotations;
	size_t n_annotations;
	char **cdi_devices; /* fully qualified CDI names, "rdmak.io/rdma=mlx5_0" */
	size_t n_cdi_devices;
};
void kubelet_container_alloc_clear(struct kubelet_container_alloc *a);

/* Callbacks into the plugin. allocate and prestart run on the transport's completion-queue
 * thread, preferred on its worker thread (so that a slow one never delays an Allocate): each
 * one call at a time for all servers of a struct kubelet, allocate possibly while preferred
 * runs. They may read plugin state under its own lock.
 * They may call kubelet_server_set_devices(), never kubelet_server_stop() or _free(). */
struct kubelet_ops {
	/* Fill *out for one container that asked for ids[0..n). -errno refuses the call
	 * (the kubelet then fails the pod with the message in *msg, a malloc'd string). */
	int (*allocate)(void *ud, const char *const *ids, size_t n,
			struct kubelet_container_alloc *out, char **msg);
	/* Choose `size` ids from available, keeping every must_include; *out is a strv
	 * (util/strv.h: malloc'd, NULL-terminated, freed with strv_free) of *n_out ids.
	 * NULL: the server answers with the first `size` available. */
	int (*preferred)(void *ud, const char *const *available, size_t n_available,
			 const char *const *must_include, size_t n_must, size_t size, char ***out,
			 size_t *n_out);
	/* PreStartContainer; NULL: nothing to do. */
	int (*prestart)(void *ud, const char *const *ids, size_t n);
};

struct kubelet_server_config {
	const char *resource_name; /* "rdma/rdma_a100" */
	const char *socket_name;   /* "rdmak-rdma_a100.sock" */
	bool preferred_allocation; /* advertise GetPreferredAllocationAvailable */
	bool prestart_required;
	const struct kubelet_ops *ops;
	void *userdata;
};

/* Logging hook: the daemon's loop is the only place that logs; the transport reports events
 * ("registered", "kubelet restarted", "stream opened", errors) through this callback.
 * It is called from the transport's threads (gRPC's own lines too, at level 3, or 1 for its
 * errors), possibly at once for several servers: it must be thread-safe and must not call
 * back into kubelet_server_*(). */
typedef void (*kubelet_log_fn)(int level /* 0 err, 1 warn, 2 info, 3 debug */, const char *msg,
			       void *ud);

/* The transport for kubelet_dir (default "/var/lib/kubelet"): starts gRPC and the threads.
 * log gets the events that belong to no server (gRPC's own lines, the folder watch). */
int kubelet_new(const char *kubelet_dir, kubelet_log_fn log, void *log_ud, struct kubelet **ret);
/* Watch another folder on the transport's inotify instance (fs.inotify.max_user_instances is
 * 128 per user, shared with the kubelet and containerd): fn(ud) runs on the transport's watch
 * thread after files in dir were created, written, moved in, deleted or changed attributes. */
int kubelet_watch_dir(struct kubelet *k, const char *dir, void (*fn)(void *ud), void *ud);
/* Free every server first. */
void kubelet_free(struct kubelet *k);

int kubelet_server_new(struct kubelet *k, const struct kubelet_server_config *cfg,
		       kubelet_log_fn log, void *log_ud, struct kubelet_server **ret);
/* Create the socket and serve, without registering yet (so that files the kubelet's Allocate
 * answers point at can be written first). From then on a removed socket is re-created.
 * -EADDRINUSE: another live process serves the socket (logged with its pid); it is left alone.
 * Returns once the server is listening. */
int kubelet_server_listen(struct kubelet_server *srv);
/* Listen if not yet, register with the kubelet (waiting for it if absent), and from then on
 * watch for a kubelet restart (kubelet.sock re-created or our socket removed): re-create the
 * socket and re-register within 1 s. -EALREADY when started before. */
int kubelet_server_start(struct kubelet_server *srv);
/* Replace the device list; every open ListAndWatch stream gets the new full list. */
int kubelet_server_set_devices(struct kubelet_server *srv, const struct kubelet_device *devs,
			       size_t n);
/* Stop serving and remove our socket. */
void kubelet_server_stop(struct kubelet_server *srv);
void kubelet_server_free(struct kubelet_server *srv);
/* Times the server registered with the kubelet since start (for tests and logs). */
unsigned kubelet_server_registrations(const struct kubelet_server *srv);

/* ---- PodResources (v1.PodResourcesLister/List), a client ------------------------------------
 * Which pod's container holds which device of which resource, as the kubelet knows it: the API
 * GPU exporters read for the same purpose. Independent of the device plugin transport above (no
 * struct kubelet needed). */

#define KUBELET_POD_RESOURCES_SOCKET	 "/var/lib/kubelet/pod-resources/kubelet.sock"
#define KUBELET_POD_RESOURCES_TIMEOUT_MS 2000

/* One container's devices of one resource. */
struct kubelet_pod_device {
	char *namespace_, *pod, *container, *resource;
	char **ids; /* strv (util/strv.h) */
	size_t n_ids;
};

struct kubelet_pod_devices {
	struct kubelet_pod_device *v;
	size_t n;
};
void kubelet_pod_devices_clear(struct kubelet_pod_devices *d);

/* A ListPodResourcesResponse's bytes into rows (a container without devices gives none).
 * -EBADMSG: not such a message; -ENOMEM. *ret written only on success. */
int kubelet_pod_resources_parse(const void *buf, size_t len, struct kubelet_pod_devices *ret);

/* A client of one socket (NULL: KUBELET_POD_RESOURCES_SOCKET). gRPC is started (grpc_init, its
 * threads) at the first call and held up until free(), so that a caller calling every few seconds
 * does not start and stop it each time; the first call's thread's signal mask is theirs. One call
 * at a time. Nothing is connected before a call. -ENAMETOOLONG; -ENOMEM. */
struct kubelet_pod_resources;
int kubelet_pod_resources_new(const char *socket_path, struct kubelet_pod_resources **ret);
void kubelet_pod_resources_free(struct kubelet_pod_resources *c);
const char *kubelet_pod_resources_socket(const struct kubelet_pod_resources *c);

/* Call List on a fresh connection, waiting at most timeout_ms for the whole call. -ENOENT /
 * -ECONNREFUSED: nobody serves the socket; -ETIMEDOUT: no answer in time; -EOPNOTSUPP: the
 * kubelet does not serve v1 List (before 1.20, or its feature gate off); -EPROTO: another gRPC
 * failure; -EBADMSG: the answer does not parse. A one-line reason, for the caller's log, in
 * why (may be NULL). *ret written only on success. */
int kubelet_pod_resources_list(struct kubelet_pod_resources *c, unsigned timeout_ms,
			       struct kubelet_pod_devices *ret, char *why, size_t why_len);

/* Does a live process listen on the unix socket at path? 1 (its pid in *pid, 0 if unknown), 0
 * when nobody does (no file, or a socket its process left), -errno. */
int kubelet_socket_live(const char *path, int *pid);

/* ---- DRA: the kubelet plugin registration and the DRAPlugin service -------------------------
 * A DRA driver's side of the kubelet (Kubernetes 1.32+): the Registration service on
 * <registry_dir>/<driver>-reg.sock, where the kubelet's plugin watcher finds it, answering type
 * "DRAPlugin", the driver's name, the endpoint <plugin_dir>/<driver>/dra.sock and the versions
 * "v1.DRAPlugin", "v1beta1.DRAPlugin" and "v1alpha1.DRAResourceHealth"; and on that endpoint
 * NodePrepareResources and NodeUnprepareResources of both versions, and the devices' health
 * stream NodeWatchResources (KEP-4680, alpha). Independent of the device plugin transport
 * above. */

struct kubelet_dra;

struct kubelet_dra_claim {
	const char *namespace_, *uid, *name;
};

/* One device of a prepared claim (every string malloc'd). */
struct kubelet_dra_device {
	char **requests; /* strv (util/strv.h); NULL: every request of the claim */
	char *pool, *device;
	char **cdi_ids; /* strv of fully qualified CDI device names */
};

/* One claim's answer: devices, or error (malloc'd; non-NULL: the claim failed). */
struct kubelet_dra_result {
	struct kubelet_dra_device *v;
	size_t n;
	char *error;
};
void kubelet_dra_result_clear(struct kubelet_dra_result *r);

/* The driver's callbacks, on the transport's thread, one call at a time (the kubelet's own
 * plugin helper serializes them too): a claim is prepared or unprepared while no other is. */
struct kubelet_dra_ops {
	void (*prepare)(void *ud, const struct kubelet_dra_claim *c,
			struct kubelet_dra_result *out);
	/* *error: malloc'd, NULL when done */
	void (*unprepare)(void *ud, const struct kubelet_dra_claim *c, char **error);
	/* NotifyRegistrationStatus: whether the kubelet took the registration; may be NULL */
	void (*registered)(void *ud, bool ok, const char *error);
};

struct kubelet_dra_config {
	const char *driver;	  /* "rdma.rdmak.io" */
	const char *registry_dir; /* "/var/lib/kubelet/plugins_registry" */
	const char *plugin_dir;	  /* "/var/lib/kubelet/plugins" */
	const struct kubelet_dra_ops *ops;
	void *userdata;
	kubelet_log_fn log; /* as for the device plugin transport; gRPC's own lines too */
	void *log_ud;
};

/* The health stream's service, as the registration names it and as its method path begins. */
#define KUBELET_DRA_HEALTH_SERVICE "v1alpha1.DRAResourceHealth"

enum kubelet_dra_health {
	KUBELET_DRA_HEALTH_UNKNOWN,
	KUBELET_DRA_HEALTH_HEALTHY,
	KUBELET_DRA_HEALTH_UNHEALTHY,
};

struct kubelet_dra_device_health {
	const char *pool;   /* the pool's full name, "<node>/pci-0000-18-00-0" */
	const char *device; /* "pci-0000-18-00-0" */
	enum kubelet_dra_health health;
};

/* Make both sockets (mode 0600; a stale file replaced, a live process's left alone:
 * -EADDRINUSE) and serve. Returns once both listen. */
int kubelet_dra_start(const struct kubelet_dra_config *cfg, struct kubelet_dra **ret);
/* Re-create a socket whose file went away (call it now and then: the kubelet finds plugins by
 * their registration socket). 1 when one was re-created, 0 when both are there, -errno. */
int kubelet_dra_check(struct kubelet_dra *d);
/* The kubelet stamps each list it receives with its own clock and reads a device it has heard
 * nothing of for 30 s as Unknown (pkg/kubelet/cm/dra healthInfoCache): the list is sent again at
 * least this often, changed or not. */
#define KUBELET_DRA_HEALTH_RESEND_S 10

/* The health of every device of the driver on this node, the whole list each time (a device
 * left out is one the driver no longer has): every open NodeWatchResources stream gets it. A
 * device whose health differs from the last call's, or that is new, gets now as the time of its
 * last change; the others keep theirs. A stream opened before the first call waits for it; one
 * that reads slowly gets the newest list, never the ones between. 1 when a device's health
 * changed or a device came or went, else 0; -EINVAL, -ENOMEM. */
int kubelet_dra_set_health(struct kubelet_dra *d, const struct kubelet_dra_device_health *v,
			   size_t n);
/* Stop serving, remove both sockets. */
void kubelet_dra_free(struct kubelet_dra *d);
/* The two sockets' paths. */
const char *kubelet_dra_registration_socket(const struct kubelet_dra *d);
const char *kubelet_dra_endpoint(const struct kubelet_dra *d);

#endif
