// SPDX-License-Identifier: Apache-2.0
// deploy/chart/rdmak with a real helm: `helm lint` and `helm template` for the default values and
// for each seed's values (tests/fixtures/chart/seedNNN.yaml), every rendered object validated
// against the Kubernetes OpenAPI schemas (kubernetes-models; cert-manager's objects, which it
// lacks, field by field), the least-privilege promises of the templates' comments, the plugin and
// webhook configs accepted by rdmak itself on sample nodes, and values.schema.json refusing bad
// values by name.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import YAML from 'yaml';
import { ALL_ON, CHART, SEEDS, byKind, helmRun, one, render, valuesArgs } from './chart.mjs';
import { TOP } from './kubelet.mjs';

const RDMAK = process.env.RDMAK || path.join(TOP, 'build', 'rdmak');
const NODES = process.env.NODES || path.join(TOP, 'examples', 'nodes');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-chart-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

// kubernetes-models' class for an apiVersion/kind (core "v1" is kubernetes-models/v1)
async function modelOf(apiVersion, kind) {
	const mod = await import(`kubernetes-models/${apiVersion}`);
	assert.ok(mod[kind], `kubernetes-models has ${apiVersion} ${kind}`);
	return mod[kind];
}

// cert-manager.io/v1 has no schema package here: the fields its CRDs require, and their types
function checkCertManager(d) {
	assert.equal(d.apiVersion, 'cert-manager.io/v1');
	assert.match(d.metadata.name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
	assert.equal(typeof d.metadata.namespace, 'string');
	if (d.kind === 'Issuer') {
		const kinds = Object.keys(d.spec).filter((k) => ['selfSigned', 'ca', 'acme', 'vault', 'venafi'].includes(k));
		assert.equal(kinds.length, 1, `${d.metadata.name}: exactly one issuer type`);
		if (d.spec.ca) assert.equal(typeof d.spec.ca.secretName, 'string');
		return;
	}
	assert.equal(d.kind, 'Certificate');
	const s = d.spec;
	assert.equal(typeof s.secretName, 'string');
	assert.equal(typeof s.issuerRef?.name, 'string');
	assert.ok(['Issuer', 'ClusterIssuer'].includes(s.issuerRef.kind));
	assert.ok(s.commonName || s.dnsNames?.length || s.ipAddresses?.length, `${d.metadata.name} names something`);
	for (const k of ['duration', 'renewBefore']) if (s[k]) assert.match(s[k], /^(\d+h)?(\d+m)?(\d+s)?$/);
	for (const u of s.usages ?? []) assert.ok(['server auth', 'client auth', 'digital signature', 'key encipherment', 'cert sign'].includes(u), u);
	assert.ok(['ECDSA', 'RSA', 'Ed25519'].includes(s.privateKey.algorithm));
}

// monitoring.coreos.com/v1 PrometheusRule, which kubernetes-models lacks too: the fields the
// Prometheus Operator's CRD requires (spec.groups[].name, rules[] with expr and alert or record)
function checkPrometheusRule(d) {
	assert.equal(d.apiVersion, 'monitoring.coreos.com/v1');
	assert.equal(d.kind, 'PrometheusRule');
	assert.match(d.metadata.name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
	assert.equal(typeof d.metadata.namespace, 'string');
	assert.ok(Array.isArray(d.spec.groups) && d.spec.groups.length > 0, 'spec.groups');
	for (const g of d.spec.groups) {
		assert.equal(typeof g.name, 'string');
		assert.ok(Array.isArray(g.rules) && g.rules.length > 0, `${g.name}: rules`);
		for (const r of g.rules) {
			assert.ok((typeof r.alert === 'string') !== (typeof r.record === 'string'), 'alert or record');
			assert.ok(['string', 'number'].includes(typeof r.expr) && String(r.expr).length > 0, `${r.alert}: expr`);
			if (r.for !== undefined) assert.match(r.for, /^((\d+)y)?((\d+)w)?((\d+)d)?((\d+)h)?((\d+)m)?((\d+)s)?((\d+)ms)?$/);
			for (const m of [r.labels ?? {}, r.annotations ?? {}]) for (const v of Object.values(m)) assert.equal(typeof v, 'string');
		}
	}
}

// monitoring.coreos.com/v1 PodMonitor and ServiceMonitor, also absent from kubernetes-models, and
// their CRDs are not in this tree: the fields checked by hand against the Prometheus Operator's
// published CRDs (example/prometheus-operator-crd/monitoring.coreos.com_{podmonitors,
// servicemonitors}.yaml, v0.91): spec.selector required (a label selector), the endpoint list
// (podMetricsEndpoints / endpoints) of objects whose port is a string (a port's name), path,
// scheme and interval (a Prometheus duration), namespaceSelector.matchNames strings.
function checkMonitor(d) {
	assert.equal(d.apiVersion, 'monitoring.coreos.com/v1');
	assert.ok(['PodMonitor', 'ServiceMonitor'].includes(d.kind), d.kind);
	assert.match(d.metadata.name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
	assert.equal(typeof d.metadata.namespace, 'string');
	for (const v of Object.values(d.metadata.labels ?? {})) assert.equal(typeof v, 'string');
	const s = d.spec;
	assert.deepEqual(Object.keys(s).filter((k) => !['jobLabel', 'selector', 'namespaceSelector', 'podMetricsEndpoints', 'endpoints'].includes(k)), [], 'known spec fields');
	assert.equal(typeof s.selector, 'object', 'spec.selector is required');
	assert.ok(s.selector.matchLabels && Object.keys(s.selector.matchLabels).length > 0, 'selects by labels');
	for (const v of Object.values(s.selector.matchLabels)) assert.equal(typeof v, 'string');
	if (s.jobLabel !== undefined) assert.equal(typeof s.jobLabel, 'string');
	for (const n of s.namespaceSelector?.matchNames ?? []) assert.equal(typeof n, 'string');
	const list = d.kind === 'PodMonitor' ? s.podMetricsEndpoints : s.endpoints;
	assert.equal(s[d.kind === 'PodMonitor' ? 'endpoints' : 'podMetricsEndpoints'], undefined, 'the other kind\'s list is not there');
	assert.ok(Array.isArray(list) && list.length > 0);
	for (const e of list) {
		assert.deepEqual(Object.keys(e).filter((k) => !['port', 'path', 'scheme', 'interval', 'tlsConfig'].includes(k)), []);
		if (e.tlsConfig !== undefined) checkSafeTLSConfig(e.tlsConfig);
		assert.equal(typeof e.port, 'string');
		assert.match(e.path, /^\//);
		assert.ok(['http', 'https', 'HTTP', 'HTTPS'].includes(e.scheme));
		assert.match(e.interval, /^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$/);
	}
}

// the Prometheus Operator's SafeTLSConfig (the CRDs' tlsConfig of a PodMonitor endpoint; a
// ServiceMonitor's takes these too): ca and cert each a Secret's or a ConfigMap's key, keySecret a
// Secret's key, serverName a string, insecureSkipVerify a boolean; nothing else
function checkSafeTLSConfig(t) {
	const keyRef = (r, what) => {
		assert.equal(typeof r, 'object', what);
		assert.equal(typeof r.name, 'string', `${what}.name`);
		assert.match(r.name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, `${what}.name`);
		assert.equal(typeof r.key, 'string', `${what}.key`);
		assert.deepEqual(Object.keys(r).filter((k) => !['name', 'key', 'optional'].includes(k)), [], what);
	};
	assert.deepEqual(Object.keys(t).filter((k) => !['ca', 'cert', 'keySecret', 'serverName', 'insecureSkipVerify'].includes(k)), [], 'known tlsConfig fields');
	for (const k of ['ca', 'cert']) {
		if (t[k] === undefined) continue;
		const src = Object.keys(t[k]);
		assert.equal(src.length, 1, `tlsConfig.${k}: one of secret, configMap`);
		assert.ok(['secret', 'configMap'].includes(src[0]), `tlsConfig.${k}.${src[0]}`);
		keyRef(t[k][src[0]], `tlsConfig.${k}.${src[0]}`);
	}
	if (t.keySecret !== undefined) keyRef(t.keySecret, 'tlsConfig.keySecret');
	if (t.serverName !== undefined) assert.equal(typeof t.serverName, 'string');
	if (t.insecureSkipVerify !== undefined) assert.equal(typeof t.insecureSkipVerify, 'boolean');
}

async function validateAll(docs) {
	for (const d of docs) {
		if (d.apiVersion.startsWith('cert-manager.io/')) {
			checkCertManager(d);
			continue;
		}
		if (d.apiVersion.startsWith('monitoring.coreos.com/')) {
			if (d.kind === 'PrometheusRule') checkPrometheusRule(d);
			else checkMonitor(d);
			continue;
		}
		const Model = await modelOf(d.apiVersion, d.kind);
		new Model(d).validate(); // throws with the offending path
	}
}

const CASES = [['defaults', []], ['all parts on', [], ALL_ON], ['webhook with helm certificate', [], ['--set', 'webhook.enabled=true', '--set', 'webhook.tls.mode=helm']],
	['etcd from a Secret', [], ['--set', 'etcd.enabled=true', '--set', 'etcd.tls.mode=secret', '--set', 'etcd.tls.secretName=my-etcd']],
	...SEEDS.map((s) => [s, [s]])];

for (const [what, fixtures, extra = []] of CASES) {
	test(`${what}: helm lint passes and every rendered object is valid`, async () => {
		const lint = helmRun(['lint', '--strict', CHART, ...valuesArgs(fixtures, extra)]);
		assert.equal(lint.status, 0, lint.stdout + lint.stderr);
		const docs = render(fixtures, extra);
		assert.ok(docs.length >= 6);
		await validateAll(docs);
	});
}

const pods = (docs) => docs.filter((d) => d.spec?.template?.spec).map((d) => [d, d.spec.template.spec]);
const isTest = (d) => d.metadata.annotations?.['helm.sh/hook'] === 'test';

test('least privilege: no RBAC, no token, no privileged container, read-only roots, RuntimeDefault seccomp', () => {
	for (const fixtures of [[], ...SEEDS.map((s) => [s])]) {
		const docs = render(fixtures, ALL_ON);
		// no component talks to the API server
		assert.deepEqual(docs.filter((d) => /^(Cluster)?Role(Binding)?$/.test(d.kind)), []);
		for (const sa of byKind(docs, 'ServiceAccount')) assert.equal(sa.automountServiceAccountToken, false);
		for (const [d, spec] of pods(docs)) {
			const who = `${d.kind} ${d.metadata.name}`;
			assert.equal(spec.automountServiceAccountToken, false, who);
			if (!isTest(d)) assert.equal(spec.serviceAccountName, d.metadata.name, `${who}: its own ServiceAccount`);
			for (const c of spec.containers) {
				const sc = c.securityContext;
				assert.notEqual(sc.privileged, true, who);
				assert.equal(sc.allowPrivilegeEscalation, false, who);
				assert.equal((sc.seccompProfile ?? spec.securityContext?.seccompProfile)?.type, 'RuntimeDefault', who);
				if (isTest(d)) {
					// the Job copies the workload's securityContext: IPC_LOCK is what it checks
					assert.deepEqual(sc.capabilities, { add: ['IPC_LOCK'] });
					continue;
				}
				assert.equal(sc.readOnlyRootFilesystem, true, who);
				assert.deepEqual(sc.capabilities, { drop: ['ALL'] }, `${who}: no capability`);
				assert.ok(c.resources.requests.cpu && c.resources.requests.memory && c.resources.limits.memory, who);
			}
			// hostPath only for the node parts: the kubelet's and the runtime's folders, the model
			const hostPaths = (spec.volumes ?? []).filter((v) => v.hostPath).map((v) => v.hostPath.path);
			const allowed = {
				'rdmak-plugin': ['/var/lib/kubelet/device-plugins', '/sys', '/dev/infiniband', '/var/run/k8s.cni.cncf.io/devinfo/dp'],
				'rdmak-cni': ['/opt/cni/bin', '/opt/rdmak', '/etc/rdmak'],
				'rdmak-doctor': ['/sys', '/dev', '/proc', '/etc/kubernetes/node-feature-discovery/features.d'],
				'rdmak-exporter': ['/sys', '/dev/infiniband', '/var/lib/kubelet/pod-resources'],
			}[d.metadata.name] ?? [];
			assert.deepEqual(hostPaths, allowed, `${who}: hostPath`);
			// every hostPath but the folders the part writes is mounted read-only
			const writes = ['device-plugins', 'devinfo', 'cni-bin', 'rdmak-opt', 'etc-rdmak', 'features'];
			for (const m of spec.containers[0].volumeMounts ?? []) {
				if (spec.volumes.find((v) => v.name === m.name)?.hostPath && !writes.includes(m.name)) assert.equal(m.readOnly, true, `${who}: ${m.name}`);
			}
			// host namespaces: only the doctor, for the host's netdevs
			assert.equal(spec.hostNetwork === true, d.metadata.name === 'rdmak-doctor', `${who}: hostNetwork`);
			assert.ok(!spec.hostPID && !spec.hostIPC, who);
		}
	}
});

test('exporter: off by default; on, its own DaemonSet, /sys and /dev/infiniband read-only, scrape annotations; root only for the kubelet\'s pod-resources socket; the PrometheusRule is rdmak-rules.yaml', async () => {
	const defaults = render();
	assert.deepEqual(defaults.filter((d) => /exporter/.test(d.metadata.name) || d.kind === 'PrometheusRule'), [], 'defaults render no exporter');
	// the DaemonSet alone: no PrometheusRule unless asked
	const only = render([], ['--set', 'exporter.enabled=true', '--set', 'exporter.port=9555']);
	assert.deepEqual(byKind(only, 'PrometheusRule'), []);
	const ds = one(only, 'DaemonSet', 'rdmak-exporter');
	await validateAll([ds, one(only, 'ServiceAccount', 'rdmak-exporter')]);
	const spec = ds.spec.template.spec;
	assert.equal(spec.containers.length, 1, 'its own pod: one container');
	const c = spec.containers[0];
	assert.deepEqual(c.command, ['rdmak', 'exporter']);
	// pod labels (exporter.podResources, the default): the socket under --root, the plugin's config
	assert.deepEqual(c.args, ['--listen=:9555', '--root=/host', '--plugin-config=/etc/rdmak/plugin/config.json']);
	assert.equal(c.ports[0].containerPort, 9555);
	assert.deepEqual(ds.spec.template.metadata.annotations, { 'prometheus.io/scrape': 'true', 'prometheus.io/port': '9555', 'prometheus.io/path': '/metrics' });
	assert.equal(c.readinessProbe.httpGet.path, '/healthz');
	// uid 0 for the kubelet's root-owned socket, still with no capability
	assert.equal(spec.securityContext.runAsUser, 0);
	assert.equal(c.securityContext.runAsNonRoot, false);
	assert.deepEqual(c.securityContext.capabilities, { drop: ['ALL'] });
	assert.deepEqual(c.volumeMounts, [{ name: 'sys', mountPath: '/host/sys', readOnly: true },
		{ name: 'dev-infiniband', mountPath: '/host/dev/infiniband', readOnly: true },
		{ name: 'pod-resources', mountPath: '/host/var/lib/kubelet/pod-resources', readOnly: true },
		{ name: 'plugin-config', mountPath: '/etc/rdmak/plugin', readOnly: true }]);
	assert.deepEqual(spec.volumes.filter((v) => v.hostPath).map((v) => v.hostPath.path), ['/sys', '/dev/infiniband', '/var/lib/kubelet/pod-resources']);
	assert.equal(spec.volumes.find((v) => v.name === 'plugin-config').configMap.name, 'rdmak-plugin');
	assert.deepEqual(spec.nodeSelector, { 'feature.node.kubernetes.io/pci-15b3.present': 'true' });
	// the plugin off: labels for VFs still, no ConfigMap to read
	const noPlugin = one(render([], ['--set', 'exporter.enabled=true', '--set', 'plugin.enabled=false']), 'DaemonSet', 'rdmak-exporter').spec.template.spec;
	assert.deepEqual(noPlugin.containers[0].args, ['--listen=:9436', '--root=/host']);
	assert.ok(!noPlugin.volumes.some((v) => v.name === 'plugin-config'));
	// podResources false: non-root, as sysfs's counters are world-readable, and no labels
	const plain = one(render([], ['--set', 'exporter.enabled=true', '--set', 'exporter.podResources=false']), 'DaemonSet', 'rdmak-exporter').spec.template.spec;
	assert.deepEqual(plain.containers[0].args, ['--listen=:9436', '--root=/host', '--no-pod-resources']);
	// vfSeries: held by default (no flag), all asks for every VF's series
	const every = one(render([], ['--set', 'exporter.enabled=true', '--set', 'exporter.podResources=false', '--set', 'exporter.vfSeries=all']), 'DaemonSet', 'rdmak-exporter').spec.template.spec;
	assert.deepEqual(every.containers[0].args, ['--listen=:9436', '--root=/host', '--no-pod-resources', '--vf-series=all']);
	assert.equal(plain.securityContext.runAsNonRoot, true);
	assert.equal(plain.securityContext.runAsUser, 65534);
	assert.equal(plain.containers[0].securityContext.runAsNonRoot, true);
	assert.equal(plain.containers[0].securityContext.runAsUser, undefined, 'the pod\'s uid, not root');
	assert.deepEqual(plain.volumes.map((v) => v.hostPath.path), ['/sys', '/dev/infiniband']);
	// hostPID: off by default; on, the pod shares the host's PID namespace (counter objects' pods)
	assert.equal(plain.hostPID, undefined);
	const hostPid = one(render([], ['--set', 'exporter.enabled=true', '--set', 'exporter.hostPID=true']), 'DaemonSet', 'rdmak-exporter');
	await validateAll([hostPid]);
	assert.equal(hostPid.spec.template.spec.hostPID, true);
	// the plugin's pods do not change when the exporter is turned on
	assert.deepEqual(one(only, 'DaemonSet', 'rdmak-plugin'), one(defaults, 'DaemonSet', 'rdmak-plugin'));

	const withRule = render([], ['--set', 'exporter.enabled=true', '--set', 'exporter.prometheusRule.enabled=true', '--set', 'exporter.prometheusRule.labels.release=kube-prometheus-stack']);
	const pr = one(withRule, 'PrometheusRule', 'rdmak-exporter');
	checkPrometheusRule(pr);
	assert.equal(pr.metadata.labels.release, 'kube-prometheus-stack');
	// the groups are deploy/exporter/rdmak-rules.yaml's, which tests/cmd/exporter_rules.sh tests
	const file = YAML.parse(fs.readFileSync(path.join(TOP, 'deploy', 'exporter', 'rdmak-rules.yaml'), 'utf8'));
	assert.deepEqual(pr.spec.groups, file.groups);
	assert.deepEqual(pr.spec.groups.flatMap((g) => g.rules.map((r) => r.alert)),
		['RdmaPortNotActive', 'RdmaLinkDownedIncreasing', 'RdmaSymbolErrorsIncreasing', 'RdmaCnpStorm', 'RdmaPcieDowntrained']);
	// prometheusRule.enabled without the exporter renders no rule
	assert.deepEqual(byKind(render([], ['--set', 'exporter.prometheusRule.enabled=true']), 'PrometheusRule'), []);
});

test('exporter.monitor: off by default; a PodMonitor (no Service) or a ServiceMonitor with a headless Service, both selecting the exporter\'s pods and their metrics port', async () => {
	const off = render([], ['--set', 'exporter.enabled=true']);
	assert.deepEqual(off.filter((d) => /Monitor$/.test(d.kind)), [], 'off by default: the CRDs may be absent');
	const ds = one(off, 'DaemonSet', 'rdmak-exporter');
	const podLabels = ds.spec.template.metadata.labels;
	const sel = (m) => Object.entries(m).every(([k, v]) => podLabels[k] === v);
	const port = ds.spec.template.spec.containers[0].ports.find((p) => p.name === 'metrics');

	const pm = render([], ['--set', 'exporter.enabled=true', '--set', 'exporter.monitor.enabled=true', '--set', 'exporter.monitor.labels.release=kube-prometheus-stack']);
	const mon = one(pm, 'PodMonitor', 'rdmak-exporter');
	await validateAll([mon]);
	assert.equal(mon.metadata.labels.release, 'kube-prometheus-stack');
	assert.ok(sel(mon.spec.selector.matchLabels), 'the PodMonitor selects the exporter\'s pods');
	assert.deepEqual(mon.spec.podMetricsEndpoints, [{ port: 'metrics', path: '/metrics', scheme: 'http', interval: '30s' }]);
	assert.deepEqual(mon.spec.namespaceSelector, { matchNames: [ds.metadata.namespace] });
	assert.deepEqual(byKind(pm, 'Service').filter((d) => /exporter/.test(d.metadata.name)), [], 'a PodMonitor needs no Service');
	assert.deepEqual(byKind(pm, 'ServiceMonitor'), []);

	const sm = render([], ['--set', 'exporter.enabled=true', '--set', 'exporter.monitor.enabled=true', '--set', 'exporter.monitor.kind=ServiceMonitor', '--set', 'exporter.monitor.interval=1m']);
	const smon = one(sm, 'ServiceMonitor', 'rdmak-exporter');
	const svc = one(sm, 'Service', 'rdmak-exporter');
	await validateAll([smon, svc]);
	assert.equal(svc.spec.clusterIP, 'None', 'headless: one endpoint per node\'s pod');
	assert.ok(sel(svc.spec.selector), 'the Service selects the exporter\'s pods');
	assert.deepEqual(svc.spec.ports, [{ name: 'metrics', port: port.containerPort, targetPort: 'metrics', protocol: 'TCP' }]);
	assert.ok(Object.entries(smon.spec.selector.matchLabels).every(([k, v]) => svc.metadata.labels[k] === v), 'the ServiceMonitor selects the Service');
	assert.deepEqual(smon.spec.endpoints, [{ port: 'metrics', path: '/metrics', scheme: 'http', interval: '1m' }]);
	assert.deepEqual(byKind(sm, 'PodMonitor'), []);

	// monitor.enabled without the exporter renders nothing; a bad kind or interval is refused by the schema
	assert.deepEqual(render([], ['--set', 'exporter.monitor.enabled=true']).filter((d) => /Monitor$/.test(d.kind)), []);
	for (const bad of [['exporter.monitor.kind=Probe', /kind/], ['exporter.monitor.interval=30 seconds', /interval/]]) {
		const r = helmRun(['template', 'x', CHART, '--set', 'exporter.enabled=true', '--set', bad[0]]);
		assert.notEqual(r.status, 0, bad[0]);
		assert.match(r.stderr, bad[1]);
	}
});

test('exporter.tls: off by default (plain HTTP, as before); on, the Secret mounted and served, HTTPS probes, the monitor scrapes https with a tlsConfig; a client CA: --client-ca, tcpSocket probes, and the monitor must present a certificate', async () => {
	const on = ['--set', 'exporter.enabled=true', '--set', 'exporter.monitor.enabled=true'];
	const mon = (docs, kind = 'PodMonitor') => one(docs, kind, 'rdmak-exporter');
	const ep = (m) => (m.kind === 'PodMonitor' ? m.spec.podMetricsEndpoints : m.spec.endpoints)[0];
	const help = spawnSync(RDMAK, ['exporter', '--help'], { encoding: 'utf8' }).stdout;

	// off: no TLS argument, volume or annotation; HTTP probes and scrape
	const off = render([], on);
	const offDs = one(off, 'DaemonSet', 'rdmak-exporter');
	const offC = offDs.spec.template.spec.containers[0];
	assert.ok(!offC.args.some((a) => /tls|client-ca/.test(a)));
	assert.ok(!offDs.spec.template.spec.volumes.some((v) => v.secret));
	assert.equal(offDs.spec.template.metadata.annotations['prometheus.io/scheme'], undefined);
	assert.deepEqual(offC.readinessProbe.httpGet, { path: '/healthz', port: 'metrics' });
	assert.deepEqual(ep(mon(off)), { port: 'metrics', path: '/metrics', scheme: 'http', interval: '30s' });
	// an explicit "" is the default
	assert.deepEqual(render([], [...on, '--set', 'exporter.tls.secretName=']), off);

	// on: the Secret's pair, read-only, passed as the flags the exporter takes
	const tls = render([], [...on, '--set', 'exporter.tls.secretName=exporter-tls']);
	const ds = one(tls, 'DaemonSet', 'rdmak-exporter');
	await validateAll([ds, mon(tls)]);
	const c = ds.spec.template.spec.containers[0];
	assert.deepEqual(c.args.slice(-2), ['--tls-cert=/etc/rdmak/exporter-tls/tls.crt', '--tls-key=/etc/rdmak/exporter-tls/tls.key']);
	for (const flag of ['--tls-cert', '--tls-key', '--client-ca']) assert.ok(help.includes(flag), `rdmak exporter takes ${flag}`);
	assert.deepEqual(c.volumeMounts.find((m) => m.name === 'tls'), { name: 'tls', mountPath: '/etc/rdmak/exporter-tls', readOnly: true });
	assert.deepEqual(ds.spec.template.spec.volumes.find((v) => v.name === 'tls').secret,
		{ secretName: 'exporter-tls', items: [{ key: 'tls.crt', path: 'tls.crt' }, { key: 'tls.key', path: 'tls.key' }] });
	assert.equal(ds.spec.template.metadata.annotations['prometheus.io/scheme'], 'https');
	assert.deepEqual(c.readinessProbe.httpGet, { path: '/healthz', port: 'metrics', scheme: 'HTTPS' });
	assert.deepEqual(c.livenessProbe.httpGet, { path: '/healthz', port: 'metrics', scheme: 'HTTPS' });
	// everything else of the DaemonSet is as without TLS
	const strip = (d) => {
		const x = structuredClone(d);
		const k = x.spec.template.spec.containers[0];
		k.args = k.args.filter((a) => !/^--tls-/.test(a));
		k.volumeMounts = k.volumeMounts.filter((m) => m.name !== 'tls');
		delete k.readinessProbe.httpGet.scheme;
		delete k.livenessProbe.httpGet.scheme;
		x.spec.template.spec.volumes = x.spec.template.spec.volumes.filter((v) => v.name !== 'tls');
		delete x.spec.template.metadata.annotations['prometheus.io/scheme'];
		return x;
	};
	assert.deepEqual(strip(ds), offDs);
	// the monitor: https, trusting the Secret's ca.crt for the Service's name
	assert.deepEqual(ep(mon(tls)), { port: 'metrics', path: '/metrics', interval: '30s', scheme: 'https',
		tlsConfig: { ca: { secret: { name: 'exporter-tls', key: 'ca.crt' } }, serverName: 'rdmak-exporter.kube-system.svc' } });
	const sm = render([], [...on, '--set', 'exporter.monitor.kind=ServiceMonitor', '--set', 'exporter.tls.secretName=exporter-tls',
		'--set-json', 'exporter.monitor.tlsConfig={"ca":{"configMap":{"name":"scrape-ca","key":"ca.pem"}},"serverName":"exporter.example"}']);
	await validateAll([mon(sm, 'ServiceMonitor')]);
	assert.deepEqual(ep(mon(sm, 'ServiceMonitor')).tlsConfig, { ca: { configMap: { name: 'scrape-ca', key: 'ca.pem' } }, serverName: 'exporter.example' }, 'monitor.tlsConfig as given');
	assert.equal(ep(mon(sm, 'ServiceMonitor')).scheme, 'https');

	// a client CA: its key of its Secret as --client-ca, probes that only connect
	const client = ['--set', 'exporter.tls.secretName=exporter-tls', '--set', 'exporter.tls.clientCA.secretName=scrapers', '--set', 'exporter.tls.clientCA.key=bundle.pem'];
	const promCert = ['--set-json', 'exporter.monitor.tlsConfig={"ca":{"secret":{"name":"exporter-tls","key":"ca.crt"}},"cert":{"secret":{"name":"prometheus-client","key":"tls.crt"}},"keySecret":{"name":"prometheus-client","key":"tls.key"},"serverName":"rdmak-exporter.kube-system.svc"}'];
	const ca = render([], [...on, ...client, ...promCert]);
	const cds = one(ca, 'DaemonSet', 'rdmak-exporter');
	await validateAll([cds, mon(ca)]);
	const cc = cds.spec.template.spec.containers[0];
	assert.equal(cc.args.at(-1), '--client-ca=/etc/rdmak/exporter-client-ca/bundle.pem');
	assert.deepEqual(cds.spec.template.spec.volumes.find((v) => v.name === 'client-ca').secret, { secretName: 'scrapers', items: [{ key: 'bundle.pem', path: 'bundle.pem' }] });
	assert.deepEqual(cc.volumeMounts.find((m) => m.name === 'client-ca'), { name: 'client-ca', mountPath: '/etc/rdmak/exporter-client-ca', readOnly: true });
	assert.deepEqual(cc.readinessProbe, { tcpSocket: { port: 'metrics' }, periodSeconds: 10 }, 'the kubelet has no client certificate');
	assert.deepEqual(cc.livenessProbe.tcpSocket, { port: 'metrics' });
	assert.equal(ep(mon(ca)).tlsConfig.keySecret.name, 'prometheus-client');
	// refused: a monitor that would present no certificate, a client CA without TLS, a bad Secret name
	for (const [args, why] of [[[...on, ...client], /client certificate/], [['--set', 'exporter.enabled=true', '--set', 'exporter.tls.clientCA.secretName=scrapers'], /needs exporter.tls.secretName/],
		[['--set', 'exporter.enabled=true', '--set', 'exporter.tls.secretName=Bad_Name'], /secretName/]]) {
		const r = helmRun(['template', 'x', CHART, ...args]);
		assert.notEqual(r.status, 0, args.join(' '));
		assert.match(r.stderr, why);
	}
	// without a monitor a client CA needs nothing more
	assert.doesNotThrow(() => render([], ['--set', 'exporter.enabled=true', ...client]));
});

test('exporter.netns: off renders byte for byte what it did; on, the runtime\'s netns folder read-only with HostToContainer, --netns-dir, uid 0 and SYS_ADMIN and nothing else; a relative dir is refused', async () => {
	const on = ['--set', 'exporter.enabled=true'];
	const sec = (d) => d.spec.template.spec.containers[0].securityContext;

	// off (the default): the same bytes, whatever dir says
	const plain = helmRun(['template', 'rdmak', CHART, '-n', 'kube-system', ...on]);
	assert.equal(plain.status, 0, plain.stderr);
	for (const extra of [['--set', 'exporter.netns.enabled=false'], ['--set', 'exporter.netns.dir=/run/netns'], ['--set', 'exporter.netns.dir=run/netns']]) {
		const r = helmRun(['template', 'rdmak', CHART, '-n', 'kube-system', ...on, ...extra]);
		assert.equal(r.status, 0, r.stderr);
		assert.equal(r.stdout, plain.stdout, extra.join(' '));
	}
	const off = one(render([], on), 'DaemonSet', 'rdmak-exporter');
	assert.ok(!off.spec.template.spec.volumes.some((v) => v.name === 'netns'));

	// on: the folder, the mount, the flag, the capability
	const docs = render([], [...on, '--set', 'exporter.netns.enabled=true']);
	const ds = one(docs, 'DaemonSet', 'rdmak-exporter');
	await validateAll([ds, one(docs, 'ServiceAccount', 'rdmak-exporter')]);
	const spec = ds.spec.template.spec;
	const c = spec.containers[0];
	assert.deepEqual(spec.volumes.find((v) => v.name === 'netns'), { name: 'netns', hostPath: { path: '/var/run/netns', type: 'Directory' } });
	assert.deepEqual(c.volumeMounts.find((m) => m.name === 'netns'), { name: 'netns', mountPath: '/run/rdmak-netns', readOnly: true, mountPropagation: 'HostToContainer' });
	assert.deepEqual(c.args.filter((a) => a.startsWith('--netns-dir')), ['--netns-dir=/run/rdmak-netns']);
	assert.ok(spawnSync(RDMAK, ['exporter', '--help'], { encoding: 'utf8' }).stdout.includes('--netns-dir DIR'), 'rdmak exporter takes --netns-dir');
	assert.deepEqual(sec(ds).capabilities, { drop: ['ALL'], add: ['SYS_ADMIN'] });
	for (const k of ['privileged', 'allowPrivilegeEscalation']) assert.equal(sec(ds)[k], false, k);
	assert.equal(sec(ds).readOnlyRootFilesystem, true);
	// everything else of the DaemonSet is as without it (podResources on: uid 0 already)
	const strip = (d) => {
		const x = structuredClone(d);
		const k = x.spec.template.spec.containers[0];
		k.args = k.args.filter((a) => !a.startsWith('--netns-dir'));
		k.volumeMounts = k.volumeMounts.filter((m) => m.name !== 'netns');
		delete k.securityContext.capabilities.add;
		x.spec.template.spec.volumes = x.spec.template.spec.volumes.filter((v) => v.name !== 'netns');
		return x;
	};
	assert.deepEqual(strip(ds), off);

	// without pod labels it still needs uid 0: only uid 0 holds the capability effective
	const noLabels = one(render([], [...on, '--set', 'exporter.netns.enabled=true', '--set', 'exporter.podResources=false', '--set', 'exporter.netns.dir=/run/netns']), 'DaemonSet', 'rdmak-exporter');
	await validateAll([noLabels]);
	const nl = noLabels.spec.template.spec;
	assert.deepEqual([nl.securityContext.runAsNonRoot, nl.securityContext.runAsUser, nl.securityContext.runAsGroup], [false, 0, 0]);
	assert.equal(sec(noLabels).runAsNonRoot, false);
	assert.deepEqual(nl.containers[0].args, ['--listen=:9436', '--root=/host', '--no-pod-resources', '--netns-dir=/run/rdmak-netns']);
	assert.equal(nl.volumes.find((v) => v.name === 'netns').hostPath.path, '/run/netns');
	assert.deepEqual(sec(noLabels).capabilities, { drop: ['ALL'], add: ['SYS_ADMIN'] });

	// refused: a dir that is no absolute hostPath
	for (const dir of ['run/netns', '', '/var/run/../../netns']) {
		const r = helmRun(['template', 'x', CHART, ...on, '--set', 'exporter.netns.enabled=true', '--set', `exporter.netns.dir=${dir}`]);
		assert.notEqual(r.status, 0, dir);
		assert.match(r.stderr, /exporter\.netns\.dir .*must be an absolute path/, r.stderr);
	}
	const bad = helmRun(['template', 'x', CHART, '--set', 'exporter.netns.enabled=yes']);
	assert.match(bad.stderr, /- exporter\.netns\.enabled: Invalid type\. Expected: boolean/);
});

test('node parts: the default nodeSelector is NFD\'s Mellanox label; values reach the pods', () => {
	const docs = render();
	for (const name of ['rdmak-plugin', 'rdmak-cni', 'rdmak-doctor']) {
		const ds = one(docs, 'DaemonSet', name);
		assert.deepEqual(ds.spec.template.spec.nodeSelector, { 'feature.node.kubernetes.io/pci-15b3.present': 'true' });
		assert.equal(ds.spec.template.spec.containers[0].image, 'localhost/rdmak:0.1.0');
	}
	// helm merges maps: a null drops the default label
	const k3s = render([], ['--set', 'cniBinDir=/var/lib/rancher/k3s/data/current/bin', '--set-json', 'cni.nodeSelector={"feature.node.kubernetes.io/pci-15b3.present":null,"rdma":"yes"}', '--set', 'image.tag=0.2.0']);
	const cni = one(k3s, 'DaemonSet', 'rdmak-cni').spec.template.spec;
	assert.ok(cni.containers[0].args.includes('--cni-dir=/var/lib/rancher/k3s/data/current/bin'));
	assert.equal(cni.volumes.find((v) => v.name === 'cni-bin').hostPath.path, '/var/lib/rancher/k3s/data/current/bin');
	assert.deepEqual(cni.nodeSelector, { rdma: 'yes' });
	assert.equal(cni.containers[0].image, 'localhost/rdmak:0.2.0');
	// registry "": the bare name, as a user with its own naming asks for it
	assert.equal(one(render([], ['--set', 'image.registry=']), 'DaemonSet', 'rdmak-plugin').spec.template.spec.containers[0].image, 'rdmak:0.1.0');
	// parts off render nothing of theirs
	const none = render([], ['--set', 'plugin.enabled=false', '--set', 'cni.enabled=false', '--set', 'doctor.enabled=false', '--set', 'doctor.job.enabled=false']);
	assert.deepEqual(none, []);
});

test('seed 002: every image from the offline registry, every pod with the pull Secret', () => {
	const docs = render(['seed002'], ['--set', 'etcd.enabled=true']);
	const images = pods(docs).flatMap(([, s]) => s.containers.map((c) => c.image));
	assert.ok(images.length >= 6);
	for (const i of images) assert.match(i, /^192\.168\.101\.159:5000\/t9kpublic\/(rdmak:0\.1\.0|etcd:)/);
	for (const [d, s] of pods(docs)) assert.deepEqual(s.imagePullSecrets, [{ name: 'offline-registry' }], d.metadata.name);
	// the seed's resource replaces the default one (helm merges maps: a list keeps them apart)
	const job = one(docs, 'Job').spec.template.spec.containers[0].resources;
	assert.deepEqual(job, { requests: { 'rdma/rdma_shared_device_a': 1 }, limits: { 'rdma/rdma_shared_device_a': 1, memory: '8Gi' } });
	// registry without the override
	const own = render([], ['--set', 'image.registry=registry.example.com/', '--set', 'image.repository=ai/rdmak']);
	assert.equal(one(own, 'DaemonSet', 'rdmak-plugin').spec.template.spec.containers[0].image, 'registry.example.com/ai/rdmak:0.1.0');
});

// which sample nodes each values file's plugin config is for: every resource must be advertised
// on at least one of them, and the config accepted on each
const PLUGIN_NODES = {
	defaults: ['s002-a101', 'cx5-roce-sriov'],
	seed002: ['s002-a101', 's002-a31'],
	seed003: ['a100-ib-bond', 'v100-ib', 'cx5-roce-sriov'],
	seed004: ['cx7-rail-1016vf', 'cx5-roce-sriov'],
};

test('the plugin config rendered into the ConfigMap is one `rdmak plugin --dry-run` accepts and that advertises every resource', () => {
	for (const [what, fixtures] of [['defaults', []], ...SEEDS.map((s) => [s, [s]])]) {
		const docs = render(fixtures);
		const ds = one(docs, 'DaemonSet', 'rdmak-plugin');
		const cm = one(docs, 'ConfigMap', ds.spec.template.spec.volumes.find((v) => v.name === 'config').configMap.name);
		const cfgArg = ds.spec.template.spec.containers[0].args.find((a) => a.startsWith('--config='));
		const key = path.basename(cfgArg);
		assert.deepEqual(Object.keys(cm.data), [key]);
		const file = path.join(dir, `${what}-${key}`);
		fs.writeFileSync(file, cm.data[key]);
		const seen = {};
		for (const n of PLUGIN_NODES[what]) {
			const r = spawnSync(RDMAK, ['plugin', '--dry-run', '--json', '--root', path.join(NODES, n), '--config', file], { encoding: 'utf8', maxBuffer: 256 << 20 });
			assert.equal(r.status, 0, `${what} on ${n}: ${r.stderr}`);
			for (const res of JSON.parse(r.stdout).resources) seen[res.resource] = Math.max(seen[res.resource] ?? 0, res.advertised);
		}
		const declared = JSON.parse(cm.data[key]);
		const n = (declared.configList?.length ?? 0) + (declared.resourceList?.length ?? 0);
		assert.equal(Object.keys(seen).length, n, `${what}: ${JSON.stringify(seen)}`);
		for (const [res, count] of Object.entries(seen)) assert.ok(count > 0, `${what}: ${res} advertised on one of ${PLUGIN_NODES[what]}`);
		if (what === 'seed004') assert.equal(n, 8, 'eight rails');
	}
	// and a config rdmak refuses is refused (the check can fail)
	const bad = path.join(dir, 'bad.json');
	fs.writeFileSync(bad, JSON.stringify({ configList: [{ resourceName: 'x', selectors: { ifNames: 'ib0' } }] }));
	const r = spawnSync(RDMAK, ['plugin', '--dry-run', '--root', path.join(NODES, 'v100-ib'), '--config', bad], { encoding: 'utf8' });
	assert.notEqual(r.status, 0);
});

test('the webhook config rendered into its ConfigMap is one `rdmak webhook --check` accepts', () => {
	const groups = { seed002: ['shared-a'], seed003: ['hostdev'], seed004: ['gpu-sriov'] };
	for (const s of SEEDS) {
		const docs = render([s]);
		const dep = one(docs, 'Deployment', 'rdmak-webhook');
		const cm = one(docs, 'ConfigMap', 'rdmak-webhook');
		const c = dep.spec.template.spec.containers[0];
		const key = path.basename(c.args.find((a) => a.startsWith('--config=')));
		const file = path.join(dir, `${s}-${key}`);
		fs.writeFileSync(file, cm.data[key]);
		const r = spawnSync(RDMAK, ['webhook', '--check', '--json', '--config', file], { encoding: 'utf8' });
		assert.equal(r.status, 0, `${s}: ${r.stderr}`);
		assert.deepEqual(JSON.parse(r.stdout).groups.map((g) => g.name), groups[s]);
	}
	// the check can fail: a group whose network has no resource
	const bad = path.join(dir, 'bad.yaml');
	fs.writeFileSync(bad, 'groups:\n  g:\n    networks:\n      - {count: 1}\n');
	assert.notEqual(spawnSync(RDMAK, ['webhook', '--check', '--config', bad], { encoding: 'utf8' }).status, 0);
});

test('webhook certificate made by helm: caBundle is the CA that signed the serving pair, for the Service name', () => {
	const docs = render(['seed002']);
	assert.deepEqual(docs.filter((d) => d.apiVersion.startsWith('cert-manager.io/')), []);
	const secret = one(docs, 'Secret', 'rdmak-webhook-tls');
	assert.equal(secret.type, 'kubernetes.io/tls');
	const dec = (k) => Buffer.from(secret.data[k], 'base64');
	const ca = new X509Certificate(dec('ca.crt'));
	const crt = new X509Certificate(dec('tls.crt'));
	assert.ok(crt.verify(ca.publicKey), 'tls.crt is signed by ca.crt');
	assert.ok(crt.checkHost('rdmak-webhook.kube-system.svc'));
	assert.ok(dec('tls.key').toString().includes('PRIVATE KEY'));
	const mwc = one(docs, 'MutatingWebhookConfiguration');
	assert.equal(mwc.metadata.annotations?.['cert-manager.io/inject-ca-from'], undefined);
	assert.equal(mwc.webhooks[0].clientConfig.caBundle, secret.data['ca.crt']);
	const dep = one(docs, 'Deployment', 'rdmak-webhook');
	assert.equal(dep.spec.template.spec.volumes.find((v) => v.name === 'tls').secret.secretName, secret.metadata.name);
});

test('etcd: three members that name each other through the headless Service, TLS for peers and clients, one down at a time', () => {
	const docs = render(['seed004']);
	const sts = one(docs, 'StatefulSet', 'rdmak-etcd');
	assert.equal(sts.spec.replicas, 3);
	const headless = one(docs, 'Service', sts.spec.serviceName);
	assert.equal(headless.spec.clusterIP, 'None');
	assert.equal(headless.spec.publishNotReadyAddresses, true);
	const client = one(docs, 'Service', 'rdmak-etcd');
	assert.deepEqual(client.spec.ports.map((p) => p.port), [2379]);
	const c = sts.spec.template.spec.containers[0];
	const arg = (n) => c.args.find((a) => a.startsWith(`--${n}=`))?.slice(n.length + 3);
	const members = arg('initial-cluster').split(',');
	assert.deepEqual(members.map((m) => m.split('=')[0]), ['rdmak-etcd-0', 'rdmak-etcd-1', 'rdmak-etcd-2']);
	for (const m of members) {
		const [name, url] = m.split('=');
		assert.equal(url, `https://${name}.${headless.metadata.name}.kube-system.svc:2380`);
	}
	for (const f of ['client-cert-auth', 'peer-client-cert-auth']) assert.ok(c.args.includes(`--${f}`));
	const pdb = one(docs, 'PodDisruptionBudget', 'rdmak-etcd');
	assert.equal(pdb.spec.maxUnavailable, 1);
	assert.deepEqual(pdb.spec.selector.matchLabels, sts.spec.selector.matchLabels);
	// the members' certificate covers every name a peer or a client dials
	const tlsVol = sts.spec.template.spec.volumes.find((v) => v.name === 'tls').secret.secretName;
	const cert = byKind(docs, 'Certificate').find((x) => x.spec.secretName === tlsVol);
	assert.ok(cert.spec.dnsNames.includes(`*.${headless.metadata.name}.kube-system.svc`));
	assert.ok(cert.spec.dnsNames.includes('rdmak-etcd.kube-system.svc'));
	assert.ok(cert.spec.usages.includes('server auth') && cert.spec.usages.includes('client auth'));
	assert.ok(byKind(docs, 'Certificate').some((x) => x.metadata.name === 'rdmak-etcd-client' && x.spec.usages.includes('client auth')));
	// the data on a claim, not on the host
	assert.equal(sts.spec.volumeClaimTemplates[0].spec.resources.requests.storage, '4Gi');
	// and from an existing Secret, no cert-manager object
	const own = render([], ['--set', 'etcd.enabled=true', '--set', 'etcd.tls.mode=secret', '--set', 'etcd.tls.secretName=my-etcd']);
	assert.deepEqual(own.filter((d) => d.apiVersion.startsWith('cert-manager.io/')), []);
	assert.equal(one(own, 'StatefulSet').spec.template.spec.volumes.find((v) => v.name === 'tls').secret.secretName, 'my-etcd');
});

test('values.schema.json refuses bad values by name', () => {
	const refuse = (args, field, why) => {
		const r = helmRun(['template', 'rdmak', CHART, ...args]);
		assert.notEqual(r.status, 0, `${args.join(' ')} accepted`);
		assert.match(r.stderr, new RegExp(`- ${field.replace(/\./g, '\\.')}: ${why}`), r.stderr);
	};
	refuse(['--set', 'plugin.enabled=yes'], 'plugin.enabled', 'Invalid type. Expected: boolean');
	refuse(['--set', 'cniBinDir=opt/cni/bin'], 'cniBinDir', "Does not match pattern '\\^/'");
	refuse(['--set', 'webhook.tls.mode=openssl'], 'webhook.tls.mode', 'webhook.tls.mode must be one of the following');
	refuse(['--set', 'exporter.vfSeries=some'], 'exporter.vfSeries', 'exporter.vfSeries must be one of the following');
	refuse(['--set', 'plugin.nodeSelector.rdma=true'], 'plugin.nodeSelector.rdma', 'Invalid type. Expected: string, given: boolean');
	refuse(['--set', 'plugin.nodeselector.rdma=x'], 'plugin', 'Additional property nodeselector is not allowed');
	refuse(['--set', 'exporter.port=70000'], 'exporter.port', 'Must be less than or equal to 65535');
	refuse(['--set', 'exporter.enabled=yes'], 'exporter.enabled', 'Invalid type. Expected: boolean');
	refuse(['--set', 'etcd.tls.mode=secret'], 'etcd.tls.secretName', 'String length must be greater than or equal to 1');
	// a plugin config in neither anchor's format
	const f = path.join(dir, 'neither.yaml');
	fs.writeFileSync(f, YAML.stringify({ plugin: { config: { configlist: [] } } }));
	const r = helmRun(['template', 'rdmak', CHART, '-f', f, '--set', 'plugin.config.configList=null']);
	assert.notEqual(r.status, 0);
	assert.match(r.stderr, /plugin\.config/);
});

test('NOTES.txt says what to check next', () => {
	// `helm install --dry-run` needs a cluster: a copy of the chart renders NOTES.txt through tpl,
	// with the chart's own helpers, into a YAML string
	const copy = path.join(dir, 'notes-chart');
	fs.cpSync(CHART, copy, { recursive: true });
	fs.renameSync(path.join(copy, 'templates', 'NOTES.txt'), path.join(copy, 'notes.src'));
	fs.writeFileSync(path.join(copy, 'templates', 'notes.yaml'), 'notes: {{ tpl (.Files.Get "notes.src") . | toJson }}\n');
	const r = helmRun(['template', 'rdmak', copy, '-n', 'kube-system', '--show-only', 'templates/notes.yaml', ...ALL_ON]);
	assert.equal(r.status, 0, r.stderr);
	const { notes } = YAML.parse(r.stdout);
	assert.match(notes, /kubectl get node NODE -o jsonpath='\{\.status\.allocatable\}'/);
	assert.match(notes, /rdmak doctor/);
	assert.match(notes, /helm test rdmak -n kube-system --logs/);
	assert.match(notes, /https:\/\/rdmak-etcd\.kube-system\.svc:2379/);
	assert.match(notes, /Secret rdmak-etcd-client/);
	assert.match(notes, /curl -s http:\/\/POD_IP:9436\/metrics/);
	assert.doesNotMatch(notes, /<no value>/);
});

test('vf: off by default; on, a DaemonSet on the plugin\'s nodes runs `rdmak vf apply` on the policies, and the plugin waits for its marker', async () => {
	const defaults = render();
	assert.deepEqual(defaults.filter((d) => /-vf$/.test(d.metadata.name)), [], 'defaults render no vf part');
	assert.ok(!one(defaults, 'DaemonSet', 'rdmak-plugin').spec.template.spec.containers[0].args.some((a) => a.startsWith('--wait-for')), 'no wait without it');

	// seed 004's two policies unchanged, and one for the cx5-roce-sriov sample node
	const seed = YAML.parseAllDocuments(fs.readFileSync(path.join(TOP, 'tests', 'fixtures', 'vf', 'seed004-gpu-nic-policies.yaml'), 'utf8')).map((d) => d.toJS());
	const cx5 = { apiVersion: 'sriovnetwork.openshift.io/v1', kind: 'SriovNetworkNodePolicy', metadata: { name: 'cx5' },
		spec: { nodeSelector: { 'kubernetes.io/os': 'linux' }, resourceName: 'cx5vf', numVfs: 8, nicSelector: { rootDevices: ['0000:1b:00.0'] } } };
	const vals = path.join(dir, 'vf.yaml');
	fs.writeFileSync(vals, YAML.stringify({ vf: { enabled: true, policies: [...seed, cx5], nodeLabels: { 'kubernetes.io/os': 'linux' } } }));
	const lint = helmRun(['lint', '--strict', CHART, '-f', vals]);
	assert.equal(lint.status, 0, lint.stdout + lint.stderr);
	const docs = render([], ['-f', vals]);
	const ds = one(docs, 'DaemonSet', 'rdmak-vf');
	const cm = one(docs, 'ConfigMap', 'rdmak-vf');
	await validateAll([ds, cm, one(docs, 'ServiceAccount', 'rdmak-vf'), one(docs, 'DaemonSet', 'rdmak-plugin')]);
	const spec = ds.spec.template.spec;
	const plugin = one(docs, 'DaemonSet', 'rdmak-plugin').spec.template.spec;
	// wherever the plugin waits, the marker gets written: the same nodes
	assert.deepEqual(spec.nodeSelector, plugin.nodeSelector);
	assert.deepEqual(spec.tolerations, plugin.tolerations);
	assert.equal(spec.automountServiceAccountToken, false);
	assert.equal(spec.hostNetwork, true, 'the PF links are the host\'s');
	const c = spec.containers[0];
	assert.deepEqual(c.securityContext.capabilities, { drop: ['ALL'], add: ['NET_ADMIN'] });
	assert.equal(c.securityContext.privileged, false);
	assert.equal(c.securityContext.readOnlyRootFilesystem, true);
	assert.equal(c.securityContext.allowPrivilegeEscalation, false);
	assert.ok(c.resources.requests.cpu && c.resources.requests.memory && c.resources.limits.memory);
	assert.deepEqual(spec.volumes.filter((v) => v.hostPath).map((v) => v.hostPath.path), ['/sys', '/var/lib/kubelet/device-plugins', '/run/rdmak/vf']);
	const mount = (n) => c.volumeMounts.find((m) => m.name === n);
	assert.equal(mount('device-plugins').readOnly, true, 'the kubelet checkpoint is only read');
	assert.equal(mount('device-plugins').mountPath, '/host/var/lib/kubelet/device-plugins', 'where --root /host finds the checkpoint');
	assert.notEqual(mount('sys').readOnly, true, 'sriov_numvfs and drivers_probe are written');
	assert.equal(mount('ready').mountPath, '/run/rdmak/vf');

	// rdmak's own loop: apply on the mounted policies, the marker on done or reboot-needed, again on
	// a change; alive for its probe
	assert.deepEqual(c.command, ['rdmak', 'vf', 'apply']);
	const arg = (n) => c.args.find((a) => a.startsWith(`--${n}=`))?.slice(n.length + 3);
	assert.equal(arg('policy'), '/etc/rdmak/vf/policies.json');
	assert.equal(arg('root'), '/host');
	assert.equal(arg('timeout'), '10000');
	assert.equal(arg('node-labels'), 'feature.node.kubernetes.io/pci-15b3.present=true,kubernetes.io/os=linux', 'the plugin\'s nodeSelector and vf.nodeLabels');
	assert.equal(arg('interval'), '30');
	assert.equal(arg('ready-file'), '/run/rdmak/vf/ready');
	assert.deepEqual(c.livenessProbe.exec.command, ['rdmak', 'probe', '--max-age', '60', '/run/rdmak-alive/alive']);
	const m = [null, arg('timeout'), arg('node-labels')];

	// the plugin waits for that marker, read-only
	const pc = plugin.containers[0];
	assert.ok(pc.args.includes('--wait-for=/run/rdmak/vf/ready') && pc.args.includes('--wait-timeout=600'), pc.args.join(' '));
	assert.deepEqual(pc.volumeMounts.find((v) => v.name === 'vf-ready'), { name: 'vf-ready', mountPath: '/run/rdmak/vf', readOnly: true });
	assert.deepEqual(plugin.volumes.find((v) => v.name === 'vf-ready').hostPath, { path: '/run/rdmak/vf', type: 'DirectoryOrCreate' });

	// the ConfigMap's policies, as rdmak reads them with the script's labels, on a sample node
	const f = path.join(dir, 'policies.json');
	fs.writeFileSync(f, cm.data['policies.json']);
	assert.equal(ds.spec.template.spec.volumes.find((v) => v.name === 'policies').configMap.name, 'rdmak-vf');
	const plan = spawnSync(RDMAK, ['vf', 'plan', '--policy', f, '--root', path.join(NODES, 'cx5-roce-sriov'), '--node-labels', m[2], '--json'], { encoding: 'utf8' });
	assert.equal(plan.status, 3, plan.stderr);
	assert.deepEqual(JSON.parse(plan.stdout).pfs.map((p) => [p.pf, p.policy, p.want_numvfs]), [['0000:1b:00.0', 'cx5', 8]]);
	// without vf.nodeLabels, the policies' nodeSelector (kubernetes.io/os) selects nothing: exit 6,
	// which the loop does not take for ready
	const bare = spawnSync(RDMAK, ['vf', 'plan', '--policy', f, '--root', path.join(NODES, 'cx5-roce-sriov'), '--node-labels', 'feature.node.kubernetes.io/pci-15b3.present=true'], { encoding: 'utf8' });
	assert.equal(bare.status, 6, bare.stderr);
	assert.match(bare.stdout, /no PF of this node is selected/);

	// values.schema.json: a policy must look like one
	const bad = helmRun(['template', 'rdmak', CHART, '--set', 'vf.enabled=true', '--set-json', 'vf.policies=[{"kind":"SriovNetworkNodePolicyX","metadata":{"name":"a"},"spec":{}}]']);
	assert.notEqual(bad.status, 0);
	assert.match(bad.stderr, /vf\.policies\.0\.kind/);
	const badInterval = helmRun(['template', 'rdmak', CHART, '--set', 'vf.interval=0']);
	assert.match(badInterval.stderr, /- vf\.interval: Must be greater than or equal to 1/);
});

test('fabric: off by default (the cni DaemonSet as before); on, the node\'s fabrics file and each fabric\'s Secret installed by the cni part into /etc/rdmak, rdmak takes the file; gc reads the host\'s netns folder; the schema refuses bad fabrics by name', async () => {
	const defaults = render();
	assert.deepEqual(defaults.filter((d) => /fabric/.test(d.metadata.name)), [], 'defaults render no fabric object');
	const plainCni = one(defaults, 'DaemonSet', 'rdmak-cni');
	assert.ok(!plainCni.spec.template.spec.volumes.some((v) => /^fabric/.test(v.name)), 'nor mount a fabric');

	const ca = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
	const values = { fabric: { fabrics: {
		rail0: { ufm: 'https://ufm-a.example.com', secretName: 'ufm-rail0', ca: true, timeoutSeconds: 5 },
		rail1: { ufm: 'https://10.0.0.2:8443/ufm', credentials: { token: 'tok-123', ca } },
		rail2: { ufm: 'https://ufm-c.example.com', credentials: { username: 'admin', password: 'pw' } },
	}, gc: { interval: 300 } } };
	const vals = path.join(dir, 'fabric.yaml');
	fs.writeFileSync(vals, YAML.stringify(values));
	const lint = helmRun(['lint', '--strict', CHART, '-f', vals]);
	assert.equal(lint.status, 0, lint.stdout + lint.stderr);
	const docs = render([], ['-f', vals]);
	await validateAll(docs);

	// the fabrics file: host paths under /etc/rdmak, no secret in it; rdmak takes it
	const cm = one(docs, 'ConfigMap', 'rdmak-fabric');
	const file = JSON.parse(cm.data['fabrics.json']);
	assert.deepEqual(file, { stateDir: '/var/lib/cni/rdmak-cni', fabrics: {
		rail0: { ufm: 'https://ufm-a.example.com', credentials: '/etc/rdmak/fabric/rail0', ca: '/etc/rdmak/fabric/rail0/ca.crt', timeoutSeconds: 5 },
		rail1: { ufm: 'https://10.0.0.2:8443/ufm', credentials: '/etc/rdmak/fabric/rail1', ca: '/etc/rdmak/fabric/rail1/ca.crt' },
		rail2: { ufm: 'https://ufm-c.example.com', credentials: '/etc/rdmak/fabric/rail2' },
	} });
	assert.doesNotMatch(cm.data['fabrics.json'], /tok-123|pw/);
	const f = path.join(dir, 'fabrics.json');
	fs.writeFileSync(f, cm.data['fabrics.json'], { mode: 0o600 });
	if (process.getuid() === 0) {
		// rdmak reads the node's file only as root's: as the installer writes it
		const list = spawnSync(RDMAK, ['fabric', 'list', '--fabrics', f, '--fabric', 'rail1'], { encoding: 'utf8' });
		assert.equal(list.status, 0, list.stderr);
	}
	assert.match(spawnSync(RDMAK, ['fabric', '--help'], { encoding: 'utf8' }).stdout, /--fabrics FILE/);

	// the chart's own Secrets for credentials given in the values; none for a Secret named
	assert.deepEqual(byKind(docs, 'Secret').map((s) => s.metadata.name).sort(), ['rdmak-fabric-rail1', 'rdmak-fabric-rail2']);
	const s1 = one(docs, 'Secret', 'rdmak-fabric-rail1').data;
	assert.deepEqual(Object.keys(s1).sort(), ['ca.crt', 'token']);
	assert.equal(Buffer.from(s1.token, 'base64').toString(), 'tok-123');
	assert.equal(Buffer.from(s1['ca.crt'], 'base64').toString(), ca);
	assert.deepEqual(Object.keys(one(docs, 'Secret', 'rdmak-fabric-rail2').data).sort(), ['password', 'username']);

	// the cni DaemonSet: the installer copies them to the host's /etc/rdmak
	const ds = one(docs, 'DaemonSet', 'rdmak-cni');
	const spec = ds.spec.template.spec;
	const [install, gc] = spec.containers;
	assert.ok(install.args.includes('--node-src=/node-src'), install.args.join(' '));
	const vol = (n) => spec.volumes.find((v) => v.name === n);
	const mount = (c, n) => c.volumeMounts.find((m) => m.name === n);
	assert.deepEqual(vol('etc-rdmak').hostPath, { path: '/etc/rdmak', type: 'DirectoryOrCreate' });
	assert.deepEqual(mount(install, 'etc-rdmak'), { name: 'etc-rdmak', mountPath: '/host/etc/rdmak' });
	assert.deepEqual(mount(install, 'fabric-conf'), { name: 'fabric-conf', mountPath: '/node-src/fabrics.json', subPath: 'fabrics.json', readOnly: true });
	assert.deepEqual(vol('fabric-conf').configMap, { name: 'rdmak-fabric' });
	for (const [n, secret] of [['rail0', 'ufm-rail0'], ['rail1', 'rdmak-fabric-rail1'], ['rail2', 'rdmak-fabric-rail2']]) {
		assert.deepEqual(vol(`fabric-${n}`).secret, { secretName: secret, defaultMode: 0o400 }, n);
		assert.deepEqual(mount(install, `fabric-${n}`), { name: `fabric-${n}`, mountPath: `/node-src/fabric/${n}`, readOnly: true }, n);
	}
	// a changed fabrics file rolls the pods
	const sum = ds.spec.template.metadata.annotations['checksum/fabrics'];
	values.fabric.fabrics.rail0.ufm = 'https://ufm-a2.example.com';
	fs.writeFileSync(vals, YAML.stringify(values));
	assert.notEqual(one(render([], ['-f', vals]), 'DaemonSet', 'rdmak-cni').spec.template.metadata.annotations['checksum/fabrics'], sum);

	// gc: the host's ledger and netns folder at their own paths, the netns folder read-only and
	// following new mounts; least privilege as every rdmak container
	assert.equal(gc.name, 'fabric-gc');
	assert.deepEqual(gc.command, ['rdmak', 'fabric', 'gc']);
	assert.deepEqual(gc.args, ['--fabrics=/etc/rdmak/fabrics.json', '--interval=300', '--alive-file=/run/rdmak-alive/gc']);
	assert.deepEqual(gc.livenessProbe.exec.command, ['rdmak', 'probe', '--max-age', '600', '/run/rdmak-alive/gc']);
	// the command line is one rdmak takes
	const args = gc.args.map((a) => a.replace(/^--fabrics=.*/, '--fabrics=/nonexistent').replace(/^--alive-file=.*/, `--alive-file=${path.join(dir, 'gc-alive')}`));
	const daemon = spawnSync(RDMAK, ['fabric', 'gc', ...args], { encoding: 'utf8', timeout: 3000, killSignal: 'SIGTERM' });
	assert.match(daemon.stderr, /gc every 300 s(.|\n)*\/nonexistent/, 'gc --interval --alive-file runs; the missing file is named');
	assert.equal(daemon.status, 0, 'SIGTERM stops it with exit 0');
	assert.deepEqual(mount(gc, 'etc-rdmak'), { name: 'etc-rdmak', mountPath: '/etc/rdmak', readOnly: true });
	assert.deepEqual(mount(gc, 'fabric-state'), { name: 'fabric-state', mountPath: '/var/lib/cni/rdmak-cni' });
	assert.deepEqual(mount(gc, 'netns'), { name: 'netns', mountPath: '/run/netns', readOnly: true, mountPropagation: 'HostToContainer' });
	assert.deepEqual(vol('netns').hostPath, { path: '/run/netns', type: 'Directory' });
	assert.deepEqual(gc.securityContext.capabilities, { drop: ['ALL'] });
	assert.equal(gc.securityContext.readOnlyRootFilesystem, true);
	assert.equal(gc.securityContext.privileged, false);
	assert.ok(gc.resources.requests.cpu && gc.resources.requests.memory && gc.resources.limits.memory);
	assert.deepEqual(spec.volumes.filter((v) => v.hostPath).map((v) => v.hostPath.path), ['/opt/cni/bin', '/opt/rdmak', '/etc/rdmak', '/var/lib/cni/rdmak-cni', '/run/netns']);
	assert.ok(!spec.hostNetwork && !spec.hostPID);
	// without gc.interval: the installer alone
	const noGc = one(render([], ['-f', vals, '--set', 'fabric.gc.interval=0']), 'DaemonSet', 'rdmak-cni').spec.template.spec;
	assert.deepEqual(noGc.containers.map((c) => c.name), ['install']);
	assert.deepEqual(noGc.volumes.filter((v) => v.hostPath).map((v) => v.hostPath.path), ['/opt/cni/bin', '/opt/rdmak', '/etc/rdmak']);

	// values.schema.json: a fabric as rdmak-cni would refuse it, refused by name
	const refuse = (extra, re) => {
		const r = helmRun(['template', 'rdmak', CHART, ...extra]);
		assert.notEqual(r.status, 0, extra.join(' '));
		assert.match(r.stderr, re, r.stderr);
	};
	refuse(['--set', 'fabric.fabrics.Rail_0.ufm=https://u', '--set', 'fabric.fabrics.Rail_0.secretName=s'], /fabric\.fabrics: .*Rail_0|Does not match pattern/);
	refuse(['--set', 'fabric.fabrics.r.ufm=http://u', '--set', 'fabric.fabrics.r.secretName=s'], /- fabric\.fabrics\.r\.ufm: Does not match pattern/);
	refuse(['--set', 'fabric.fabrics.r.ufm=https://user@u', '--set', 'fabric.fabrics.r.secretName=s'], /- fabric\.fabrics\.r\.ufm: Does not match pattern/);
	refuse(['--set', 'fabric.fabrics.r.secretName=s'], /- fabric\.fabrics\.r: ufm is required/);
	refuse(['--set', 'fabric.fabrics.r.ufm=https://u'], /fabric\.fabrics\.r: Must validate one and only one schema/);
	refuse(['--set', 'fabric.fabrics.r.ufm=https://u', '--set', 'fabric.fabrics.r.secretName=s', '--set', 'fabric.fabrics.r.credentials.token=t'], /fabric\.fabrics\.r: Must validate one and only one schema/);
	refuse(['--set', 'fabric.fabrics.r.ufm=https://u', '--set', 'fabric.fabrics.r.credentials.username=a'], /fabric\.fabrics\.r\.credentials: Must validate one and only one schema/);
	refuse(['--set', 'fabric.fabrics.r.ufm=https://u', '--set', 'fabric.fabrics.r.secretName=s', '--set', 'fabric.fabrics.r.timeoutSeconds=61'], /- fabric\.fabrics\.r\.timeoutSeconds: Must be less than or equal to 60/);
	refuse(['--set', 'fabric.fabrics.r.ufm=https://u', '--set', 'fabric.fabrics.r.secretName=s', '--set', 'fabric.fabrics.r.credentialsDir=/x'], /Additional property credentialsDir is not allowed/);
	refuse(['--set', 'fabric.gc.netnsDir=run/netns'], /- fabric\.gc\.netnsDir: Does not match pattern/);
});

test('cni.node: the node\'s CNI settings installed on every node by the cni part, each etcd store\'s client certificate with them; rdmak takes the file; the schema refuses what rdmak would', async () => {
	// the defaults: the plugins' own, installed as they are
	const defaults = render();
	const plain = JSON.parse(one(defaults, 'ConfigMap', 'rdmak-cni').data['cni.json']);
	assert.deepEqual(plain, { sysfs: '/sys', stateDir: '/var/lib/cni/rdmak-cni', logDir: '/var/log/rdmak',
		dataDirs: ['/var/lib/cni/rdmak-ipam', '/var/lib/cni/networks'], etcd: {} });
	const values = { cni: { node: { logDir: '/var/log/rdmak-cni', etcd: {
		cluster: { endpoints: ['https://rdmak-etcd.kube-system.svc:2379'], secretName: 'rdmak-etcd-client' },
		plain: { endpoints: ['http://10.0.0.9:2379'], prefix: '/other' },
	} } }, etcd: { enabled: true } };
	const vals = path.join(dir, 'cninode.yaml');
	fs.writeFileSync(vals, YAML.stringify(values));
	const lint = helmRun(['lint', '--strict', CHART, '-f', vals]);
	assert.equal(lint.status, 0, lint.stdout + lint.stderr);
	const docs = render([], ['-f', vals]);
	await validateAll(docs);
	const text = one(docs, 'ConfigMap', 'rdmak-cni').data['cni.json'];
	const file = JSON.parse(text);
	assert.equal(file.logDir, '/var/log/rdmak-cni');
	assert.deepEqual(file.etcd, {
		cluster: { endpoints: ['https://rdmak-etcd.kube-system.svc:2379'], tls: { ca: '/etc/rdmak/etcd/cluster/ca.crt',
			cert: '/etc/rdmak/etcd/cluster/tls.crt', key: '/etc/rdmak/etcd/cluster/tls.key' } },
		plain: { endpoints: ['http://10.0.0.9:2379'], prefix: '/other' },
	});
	// the DaemonSet: the file and each store's Secret mounted for the installer, /etc/rdmak written
	const ds = one(docs, 'DaemonSet', 'rdmak-cni');
	const spec = ds.spec.template.spec;
	const install = spec.containers[0];
	const vol = (n) => spec.volumes.find((v) => v.name === n);
	const mount = (n) => install.volumeMounts.find((m) => m.name === n);
	assert.ok(install.args.includes('--node-src=/node-src'), install.args.join(' '));
	assert.deepEqual(mount('cni-conf'), { name: 'cni-conf', mountPath: '/node-src/cni.json', subPath: 'cni.json', readOnly: true });
	assert.deepEqual(vol('cni-conf').configMap, { name: 'rdmak-cni' });
	assert.deepEqual(mount('etcd-cluster'), { name: 'etcd-cluster', mountPath: '/node-src/etcd/cluster', readOnly: true });
	assert.deepEqual(vol('etcd-cluster').secret, { secretName: 'rdmak-etcd-client', defaultMode: 0o400 });
	assert.equal(vol('etcd-plain'), undefined, 'a store without a Secret mounts none');
	assert.deepEqual(mount('etc-rdmak'), { name: 'etc-rdmak', mountPath: '/host/etc/rdmak' });
	// a changed settings file rolls the pods
	const sum = ds.spec.template.metadata.annotations['checksum/cni'];
	values.cni.node.logDir = '/var/log/other';
	fs.writeFileSync(vals, YAML.stringify(values));
	assert.notEqual(one(render([], ['-f', vals]), 'DaemonSet', 'rdmak-cni').spec.template.metadata.annotations['checksum/cni'], sum);
	// rdmak takes the rendered file as the node's settings (a network naming a store it lacks is
	// told the stores it has)
	if (process.getuid() === 0) {
		const f = path.join(dir, 'cni.json');
		fs.writeFileSync(f, text, { mode: 0o600 });
		const net = path.join(dir, 'net.json');
		fs.writeFileSync(net, JSON.stringify({ name: 'n', ipam: { type: 'rdmak-ipam', range: '10.0.0.0/24', store: 'etcd', etcd: 'nope' } }));
		const r = spawnSync(RDMAK, ['ipam', 'list', '--config', net, '--cni-config', f], { encoding: 'utf8' });
		assert.equal(r.status, 2, r.stderr);
		assert.match(r.stderr, /ipam\.etcd: "nope" is not an etcd store of this node \(.*cni\.json names: cluster, plain\)/);
	}

	// values.schema.json: what rdmak would refuse, refused by name
	const refuse = (extra, re) => {
		const r = helmRun(['template', 'rdmak', CHART, ...extra]);
		assert.notEqual(r.status, 0, extra.join(' '));
		assert.match(r.stderr, re, r.stderr);
	};
	refuse(['--set', 'cni.node.stateDir=var/lib/x'], /- cni\.node\.stateDir: Does not match pattern/);
	refuse(['--set', 'cni.node.logDir=/var/log/../etc'], /- cni\.node\.logDir: Does not match pattern/);
	refuse(['--set', 'cni.node.dataDirs={}'], /cni\.node\.dataDirs/);
	refuse(['--set', 'cni.node.etcd.Cluster_1.endpoints={a:1}'], /cni\.node\.etcd: .*Cluster_1|Does not match pattern/);
	refuse(['--set', 'cni.node.etcd.c.secretName=s'], /- cni\.node\.etcd\.c: endpoints is required/);
	refuse(['--set', 'cni.node.etcd.c.endpoints={a:1\\,b:2}'], /- cni\.node\.etcd\.c\.endpoints\.0: Does not match pattern/);
	refuse(['--set', 'cni.node.etcd.c.endpoints={a:1}', '--set', 'cni.node.etcd.c.tls.key=/k'], /Additional property tls is not allowed/);
});
