// SPDX-License-Identifier: Apache-2.0
// The chart's device plugin (deploy/chart/rdmak, templates/plugin.yaml, rendered by helm): valid
// Kubernetes objects (kubernetes-models' OpenAPI validators), the DaemonSet keeps the promises its
// comments make, and seed 003's config in the ConfigMap is one `rdmak plugin` accepts on the sample
// nodes it was written for.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { DaemonSet } from 'kubernetes-models/apps/v1';
import { ConfigMap } from 'kubernetes-models/v1';
import { one, render } from './chart.mjs';
import { TOP } from './kubelet.mjs';

const RDMAK = process.env.RDMAK || path.join(TOP, 'build', 'rdmak');
const NODES = process.env.NODES || path.join(TOP, 'examples', 'nodes');
const seed003 = render(['seed003']);
const plugin = () => structuredClone(one(seed003, 'DaemonSet', 'rdmak-plugin'));

test('the plugin DaemonSet is valid and keeps its comments\' promises', () => {
	const ds = new DaemonSet(plugin());
	ds.validate(); // throws with the offending path
	const spec = ds.spec.template.spec;
	assert.deepEqual(spec.nodeSelector, { 'feature.node.kubernetes.io/pci-15b3.present': 'true' });
	const c = spec.containers[0];
	assert.equal(c.securityContext.privileged, false);
	assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']);
	assert.ok(c.resources.requests.cpu && c.resources.requests.memory);
	const mounts = Object.fromEntries(c.volumeMounts.map((m) => [m.name, m]));
	const vols = Object.fromEntries(spec.volumes.map((v) => [v.name, v]));
	assert.equal(vols[mounts.sys.name].hostPath.path, '/sys');
	assert.equal(mounts.sys.readOnly, true);
	assert.equal(vols['dev-infiniband'].hostPath.path, '/dev/infiniband');
	assert.equal(vols['device-plugins'].hostPath.path, '/var/lib/kubelet/device-plugins');
	assert.equal(mounts['device-plugins'].mountPath, '/var/lib/kubelet/device-plugins');
	assert.ok(c.args.includes('--kubelet-dir=/var/lib/kubelet'));
	assert.ok(c.args.includes(`--sysfs=${mounts.sys.mountPath}`));
	assert.ok(c.args.includes(`--device-info-dir=${mounts.devinfo.mountPath}`));
	assert.equal(vols.config.configMap.name, 'rdmak-plugin');
	const cfgArg = c.args.find((a) => a.startsWith('--config='));
	assert.equal(path.dirname(cfgArg.slice('--config='.length)), mounts.config.mountPath);
	// another kubelet folder moves the mount, the hostPath and the argument together
	const moved = one(render([], ['--set', 'kubeletDir=/var/lib/k0s/kubelet']), 'DaemonSet', 'rdmak-plugin').spec.template.spec;
	assert.ok(moved.containers[0].args.includes('--kubelet-dir=/var/lib/k0s/kubelet'));
	assert.equal(moved.volumes.find((v) => v.name === 'device-plugins').hostPath.path, '/var/lib/k0s/kubelet/device-plugins');
	assert.equal(moved.containers[0].volumeMounts.find((m) => m.name === 'device-plugins').mountPath, '/var/lib/k0s/kubelet/device-plugins');
});

test('seed 003\'s plugin ConfigMap is valid and every resource in it is advertised on its sample node', () => {
	const cm = new ConfigMap(one(seed003, 'ConfigMap', 'rdmak-plugin'));
	cm.validate();
	const cfgArg = plugin().spec.template.spec.containers[0].args.find((a) => a.startsWith('--config='));
	assert.ok(path.basename(cfgArg) in cm.data, 'the DaemonSet reads a key the ConfigMap has');
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-deploy-'));
	// each resource on the node it was written for
	const on = { 'rdma/rdma_v100': 'v100-ib', 'rdma/rdma_a100': 'a100-ib-bond', 'nvidia.com/hostdev': 'cx5-roce-sriov' };
	try {
		const file = path.join(dir, 'config.json');
		fs.writeFileSync(file, cm.data['config.json']);
		for (const [res, n] of Object.entries(on)) {
			const r = spawnSync(RDMAK, ['plugin', '--dry-run', '--json', '--root', path.join(NODES, n), '--config', file], { encoding: 'utf8' });
			assert.equal(r.status, 0, `on ${n}: ${r.stderr}`);
			const doc = JSON.parse(r.stdout);
			assert.ok(doc.resources.find((x) => x.resource === res)?.advertised > 0, `${res} advertised on ${n}`);
		}
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
});

test('the validators do refuse a broken object', () => {
	const ds = plugin();
	ds.spec.template.spec.containers[0].resources.requests.memory = { bad: true };
	assert.throws(() => new DaemonSet(ds).validate());
});
