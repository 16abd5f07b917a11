// SPDX-License-Identifier: Apache-2.0
// The Pod Security Standards (kubernetes.io/docs/concepts/security/pod-security-standards, as the
// Pod Security admission controller of Kubernetes 1.32 enforces them, version "latest"), written
// from the published controls: which of a pod template's fields make it fail `baseline` and
// `restricted`. No API server runs here: this is a stand-in for the admission controller's
// checks, control by control, each named as the page names it.
const BASELINE_CAPS = new Set(['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE',
	'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT']);
const SAFE_SYSCTLS = new Set(['kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range', 'net.ipv4.ip_unprivileged_port_start',
	'net.ipv4.tcp_syncookies', 'net.ipv4.ping_group_range', 'net.ipv4.ip_local_reserved_ports', 'net.ipv4.tcp_keepalive_time',
	'net.ipv4.tcp_fin_timeout', 'net.ipv4.tcp_keepalive_intvl', 'net.ipv4.tcp_keepalive_probes']);
const SELINUX_TYPES = new Set(['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t']);
const RESTRICTED_VOLUMES = ['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret'];

function containersOf(spec) {
	return [...(spec.initContainers || []), ...(spec.containers || []), ...(spec.ephemeralContainers || [])];
}

// the violations of `baseline`, as [control, detail]
export function baselineViolations(spec, meta = {}) {
	const v = [];
	const cs = containersOf(spec);
	const psc = spec.securityContext || {};
	for (const f of ['hostNetwork', 'hostPID', 'hostIPC']) if (spec[f]) v.push(['Host Namespaces', `${f}: true`]);
	if (psc.windowsOptions?.hostProcess) v.push(['HostProcess', 'pod windowsOptions.hostProcess']);
	for (const vol of spec.volumes || []) if (vol.hostPath) v.push(['HostPath Volumes', `volume ${vol.name}: hostPath ${vol.hostPath.path}`]);
	for (const s of psc.sysctls || []) if (!SAFE_SYSCTLS.has(s.name)) v.push(['Sysctls', s.name]);
	const seLinux = (o, where) => {
		if (!o) return;
		if (!SELINUX_TYPES.has(o.type || '')) v.push(['SELinux', `${where} type ${o.type}`]);
		if (o.user || o.role) v.push(['SELinux', `${where} user/role set`]);
	};
	seLinux(psc.seLinuxOptions, 'pod');
	if (psc.seccompProfile?.type === 'Unconfined') v.push(['Seccomp', 'pod seccompProfile Unconfined']);
	if (psc.appArmorProfile?.type === 'Unconfined') v.push(['AppArmor', 'pod appArmorProfile Unconfined']);
	for (const [k, val] of Object.entries(meta.annotations || {}))
		if (k.startsWith('container.apparmor.security.beta.kubernetes.io/') && val === 'unconfined') v.push(['AppArmor', k]);
	for (const c of cs) {
		const sc = c.securityContext || {};
		const w = `container ${c.name}`;
		if (sc.privileged) v.push(['Privileged Containers', `${w}: privileged`]);
		if (sc.windowsOptions?.hostProcess) v.push(['HostProcess', w]);
		for (const cap of sc.capabilities?.add || []) if (!BASELINE_CAPS.has(cap)) v.push(['Capabilities', `${w} adds ${cap}`]);
		for (const p of c.ports || []) if (p.hostPort) v.push(['Host Ports', `${w} hostPort ${p.hostPort}`]);
		seLinux(sc.seLinuxOptions, w);
		if (sc.procMount && sc.procMount !== 'Default') v.push(['/proc Mount Type', `${w}: ${sc.procMount}`]);
		if (sc.seccompProfile?.type === 'Unconfined') v.push(['Seccomp', `${w} seccompProfile Unconfined`]);
		if (sc.appArmorProfile?.type === 'Unconfined') v.push(['AppArmor', `${w} appArmorProfile Unconfined`]);
	}
	return v;
}

// the violations of `restricted` beyond baseline's
export function restrictedViolations(spec) {
	const v = [];
	const cs = containersOf(spec);
	const psc = spec.securityContext || {};
	for (const vol of spec.volumes || []) {
		const type = Object.keys(vol).find((k) => k !== 'name');
		if (!RESTRICTED_VOLUMES.includes(type)) v.push(['Volume Types', `volume ${vol.name}: ${type}`]);
	}
	if (psc.runAsUser === 0) v.push(['Running as Non-root user', 'pod runAsUser 0']);
	const podSeccomp = ['RuntimeDefault', 'Localhost'].includes(psc.seccompProfile?.type);
	for (const c of cs) {
		const sc = c.securityContext || {};
		const w = `container ${c.name}`;
		if (sc.allowPrivilegeEscalation !== false) v.push(['Privilege Escalation', `${w}: allowPrivilegeEscalation not false`]);
		const nonRoot = sc.runAsNonRoot ?? psc.runAsNonRoot;
		if (nonRoot !== true) v.push(['Running as Non-root', `${w}: runAsNonRoot not true`]);
		if (sc.runAsUser === 0) v.push(['Running as Non-root user', `${w}: runAsUser 0`]);
		const t = sc.seccompProfile?.type;
		if (!(['RuntimeDefault', 'Localhost'].includes(t) || (t === undefined && podSeccomp)))
			v.push(['Seccomp', `${w}: no RuntimeDefault or Localhost profile`]);
		if (!(sc.capabilities?.drop || []).includes('ALL')) v.push(['Capabilities', `${w}: does not drop ALL`]);
		for (const cap of sc.capabilities?.add || [])
			if (cap !== 'NET_BIND_SERVICE') v.push(['Capabilities', `${w} adds ${cap}`]);
	}
	return v;
}

// the lowest level the pod template passes: 'restricted', 'baseline' or 'privileged', and why
// not lower
export function level(template) {
	const spec = template.spec;
	const b = baselineViolations(spec, template.metadata);
	if (b.length) return { level: 'privileged', why: b };
	const r = restrictedViolations(spec);
	if (r.length) return { level: 'baseline', why: r };
	return { level: 'restricted', why: [] };
}

// the pod template of a workload object (a Pod's own spec)
export function podTemplate(obj) {
	if (obj.kind === 'Pod') return { metadata: obj.metadata, spec: obj.spec };
	if (obj.kind === 'CronJob') return obj.spec.jobTemplate.spec.template;
	return obj.spec?.template;
}
export const WORKLOADS = ['Pod', 'Deployment', 'DaemonSet', 'StatefulSet', 'Job', 'CronJob', 'ReplicaSet'];
