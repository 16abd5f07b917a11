// deploy/plugin-*.yaml are valid Kubernetes objects (kubernetes-models' OpenAPI validators), the
// DaemonSet keeps the promises its comments make, and every config in the ConfigMap is one
// that `rdmak plugin` accepts on the sample nodes.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { DaemonSet } from 'kubernetes-models/apps/v1';
import { ConfigMap } from 'kubernetes-models/v1';
import YAML from 'yaml';
import { TOP } from './kubelet.mjs';

const RDMAK = process.env.RDMAK || path.join(TOP, 'build', 'rdmak');
const NODES = process.env.NODES || path.join(TOP, 'examples', 'nodes');
const load = (name) => YAML.parseAllDocuments(fs.readFileSync(path.join(TOP, 'deploy', name), 'utf8')).map((d) => d.toJS());

test('plugin-daemonset.yaml is a valid DaemonSet', () => {
	const docs = load('plugin-daemonset.yaml');
	assert.equal(docs.length, 1);
	const ds = new DaemonSet(docs[0]);
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
});

test('plugin-configmap.yaml is a valid ConfigMap whose configs rdmak accepts', () => {
	const docs = load('plugin-configmap.yaml');
	const cm = new ConfigMap(docs[0]);
	cm.validate();
	assert.equal(cm.metadata.name, 'rdmak-plugin');
	const ds = load('plugin-daemonset.yaml')[0];
	const cfgArg = ds.spec.template.spec.containers[0].args.find((a) => a.startsWith('--config='));
	assert.ok(path.basename(cfgArg) in cm.data, 'the DaemonSet reads a key the ConfigMap has');
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-deploy-'));
	// each config on the node it was written for: every resource it declares must select something
	const on = { 'config.json': ['a100-ib-bond', 'v100-ib'], 'hostdev.json': ['cx5-roce-sriov'], 'vf-ranges.json': ['cx5-roce-sriov'] };
	try {
		for (const [key, text] of Object.entries(cm.data)) {
			const file = path.join(dir, key);
			fs.writeFileSync(file, text);
			assert.ok(on[key], `a sample node for ${key}`);
			for (const n of on[key]) {
				const r = spawnSync(RDMAK, ['plugin', '--dry-run', '--json', '--root', path.join(NODES, n), '--config', file], { encoding: 'utf8' });
				assert.equal(r.status, 0, `${key} on ${n}: ${r.stderr}`);
				const doc = JSON.parse(r.stdout);
				assert.ok(doc.resources.some((res) => res.advertised > 0), `${key} advertises something on ${n}`);
			}
		}
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
});

test('the validators do refuse a broken object', () => {
	const ds = load('plugin-daemonset.yaml')[0];
	ds.spec.template.spec.containers[0].resources.requests.memory = { bad: true };
	assert.throws(() => new DaemonSet(ds).validate());
});
