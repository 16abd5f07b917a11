// SPDX-License-Identifier: Apache-2.0
// The chart's part `dra` (helm from the npm package, as chart.mjs renders it) and examples/dra:
// every object valid against the resource.k8s.io/v1 schema (kubernetes-models 5); the ClusterRole
// exactly what the driver calls; the kubelet's folders at the same paths in the container; the
// chart refuses the device plugin and the driver on the same nodes; the 8-pair template pairs
// GPU k with NIC k by pcieRoot.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import YAML from 'yaml';
import { DeviceClass, ResourceClaimTemplate } from 'kubernetes-models-5/resource.k8s.io/v1';
import { Pod } from 'kubernetes-models-5/v1';
import { byKind, CHART, one, render } from './chart.mjs';

const TOP = path.resolve(CHART, '..', '..', '..');

const ON = ['--set', 'dra.enabled=true', '--set-json', 'dra.nodeSelector={"rdmak.io/dra":"true"}'];

test('off by default: nothing of it rendered', () => {
	const docs = render();
	assert.equal(docs.filter((d) => d.metadata?.name?.endsWith('-dra') || d.kind === 'DeviceClass').length, 0);
});

test('dra.enabled: ServiceAccount, the narrowest ClusterRole, DeviceClasses, the DaemonSet', () => {
	const docs = render([], ON);
	const ds = one(docs, 'DaemonSet', 'rdmak-dra');
	const role = one(docs, 'ClusterRole', 'rdmak-dra');
	assert.deepEqual(role.rules, [
		{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] },
		{ apiGroups: ['resource.k8s.io'], resources: ['resourceslices'], verbs: ['list', 'watch', 'create', 'update', 'delete'] },
		{ apiGroups: ['resource.k8s.io'], resources: ['resourceclaims'], verbs: ['get'] },
		{ apiGroups: ['resource.k8s.io'], resources: ['resourceclaims/status'], verbs: ['update'] },
	]);
	const binding = one(docs, 'ClusterRoleBinding', 'rdmak-dra');
	assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: 'rdmak-dra', namespace: 'kube-system' }]);
	assert.equal(one(docs, 'ServiceAccount', 'rdmak-dra').automountServiceAccountToken, true);
	const classes = byKind(docs, 'DeviceClass');
	assert.deepEqual(classes.map((c) => c.metadata.name), ['rdma.rdmak.io', 'rdma-ib.rdmak.io', 'rdma-roce.rdmak.io', 'rdma-pf.rdmak.io']);
	for (const c of classes) {
		new DeviceClass(c).validate();
		assert.match(c.spec.selectors[0].cel.expression, /^device\.driver == "rdma\.rdmak\.io"/);
	}
	const pod = ds.spec.template.spec;
	assert.deepEqual(pod.nodeSelector, { 'rdmak.io/dra': 'true' });
	const c = pod.containers[0];
	assert.deepEqual(c.command, ['rdmak', 'dra']);
	assert.ok(c.args.includes('--node-name=$(NODE_NAME)'));
	assert.deepEqual(c.env, [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }]);
	// the kubelet dials the endpoint the driver names: host paths, the same inside
	const mounts = Object.fromEntries(c.volumeMounts.map((m) => [m.name, m]));
	const vols = Object.fromEntries(pod.volumes.map((v) => [v.name, v]));
	for (const n of ['registry', 'plugins', 'cdi', 'state', 'cni-state'])
		assert.equal(mounts[n].mountPath, vols[n].hostPath.path, `${n} at its host path`);
	// rdmak-cni's records, where the node's settings put them, read only
	assert.ok(c.args.includes('--cni-state-dir=/var/lib/cni/rdmak-cni'));
	assert.equal(mounts['cni-state'].readOnly, true);
	assert.equal(mounts.sys.readOnly, true);
	assert.equal(mounts.dev.readOnly, true);
	assert.equal(c.securityContext.privileged, false);
	assert.deepEqual(c.securityContext.capabilities, { drop: ['ALL'] });
	assert.equal(c.securityContext.readOnlyRootFilesystem, true);
});

test('the device plugin and the driver on the same nodes: refused by name', () => {
	assert.throws(() => render([], ['--set', 'dra.enabled=true']), /dra.nodeSelector/);
	assert.throws(() => render([], ['--set', 'dra.enabled=true', '--set-json',
		'dra.nodeSelector={"feature.node.kubernetes.io/pci-15b3.present":"true"}']), /plugin.nodeSelector/);
	// without the plugin, any nodes
	const docs = render([], ['--set', 'dra.enabled=true', '--set', 'plugin.enabled=false']);
	one(docs, 'DaemonSet', 'rdmak-dra');
	assert.ok(!one(docs, 'DaemonSet', 'rdmak-dra').spec.template.spec.containers[0].args.some((a) => a.startsWith('--config')));
});

test('per resource: the plugin and the driver on the same nodes where plugin.config gives the driver resources', () => {
	const config = { configList: [{ resourceName: 'hca_shared_devices_a', rdmaHcaMax: 100, selectors: { linkTypes: ['infiniband'] } },
		{ resourceName: 'roce', rdmaHcaMax: 100, servedBy: 'dra', selectors: { linkTypes: ['ether'] } }] };
	const docs = render([], ['--set', 'dra.enabled=true', '--set-json', `plugin.config=${JSON.stringify(config)}`]);
	const ds = one(docs, 'DaemonSet', 'rdmak-dra');
	const pod = ds.spec.template.spec;
	assert.ok(pod.containers[0].args.includes('--config=/etc/rdmak/plugin/config.json'));
	assert.deepEqual(pod.containers[0].volumeMounts.find((m) => m.name === 'plugin-config'),
		{ name: 'plugin-config', mountPath: '/etc/rdmak/plugin', readOnly: true });
	assert.equal(pod.volumes.find((v) => v.name === 'plugin-config').configMap.name, 'rdmak-plugin');
	// the same file as the plugin's, and the pods roll when it changes
	assert.equal(JSON.parse(one(docs, 'ConfigMap', 'rdmak-plugin').data['config.json']).configList[1].servedBy, 'dra');
	assert.match(ds.spec.template.metadata.annotations['checksum/config'], /^[0-9a-f]{64}$/);
	// a config that gives the driver nothing: still one or the other per node
	delete config.configList[1].servedBy;
	assert.throws(() => render([], ['--set', 'dra.enabled=true', '--set-json', `plugin.config=${JSON.stringify(config)}`]), /servedBy/);
});

test('a DeviceClass with extendedResourceName from the values', () => {
	const docs = render([], [...ON, '--set-json',
		'dra.deviceClasses=[{"name":"rdma-shared-a.rdmak.io","extendedResourceName":"rdma/hca_shared_devices_a"}]']);
	const dc = one(docs, 'DeviceClass', 'rdma-shared-a.rdmak.io');
	new DeviceClass(dc).validate();
	assert.equal(dc.spec.extendedResourceName, 'rdma/hca_shared_devices_a');
});

const examples = path.join(TOP, 'examples', 'dra');
const load = (f) => YAML.parseAllDocuments(fs.readFileSync(path.join(examples, f), 'utf8')).map((d) => d.toJS());

test('examples/dra: every object valid against resource.k8s.io/v1', () => {
	const models = { DeviceClass, ResourceClaimTemplate, Pod };
	let n = 0;
	for (const f of fs.readdirSync(examples).filter((x) => x.endsWith('.yaml')))
		for (const d of load(f)) {
			assert.ok(models[d.kind], `${f}: ${d.kind}`);
			new models[d.kind](d).validate();
			n++;
		}
	assert.ok(n >= 9, `${n} objects`);
	const er = load('deviceclasses.yaml').find((d) => d.spec.extendedResourceName);
	assert.equal(er.spec.extendedResourceName, 'rdma/hca_shared_devices_a');
});

test('examples/dra: GPU k paired with NIC k by pcieRoot, every request in one pair', () => {
	const t = load('eight-gpu-nic-pairs.yaml').find((d) => d.kind === 'ResourceClaimTemplate');
	const req = t.spec.spec.devices.requests.map((r) => r.name);
	assert.equal(req.length, 16);
	const cons = t.spec.spec.devices.constraints;
	assert.deepEqual(cons.map((c) => c.requests), [...Array(8).keys()].map((k) => [`gpu${k}`, `nic${k}`]));
	assert.ok(cons.every((c) => c.matchAttribute === 'resource.kubernetes.io/pcieRoot'));
	assert.deepEqual(cons.flatMap((c) => c.requests).sort(), req.slice().sort());
});
