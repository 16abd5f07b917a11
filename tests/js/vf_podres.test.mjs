// SPDX-License-Identifier: Apache-2.0
// `rdmak vf plan/apply`: the pods that hold VFs a live step would remove, from the kubelet's
// PodResources API (a stand-in serving the published v1 proto, podresources.mjs) when it answers,
// else from the device-manager checkpoint; on the cx5-roce-sriov sample node.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { TOP } from './kubelet.mjs';
import { PodResources, samplePods } from './podresources.mjs';

const RDMAK = process.env.RDMAK || path.join(TOP, 'build', 'rdmak');
const NODE = path.join(process.env.NODES || path.join(TOP, 'examples', 'nodes'), 'cx5-roce-sriov');
const CP = path.join(TOP, 'tests', 'fixtures', 'vf', 'kubelet_internal_checkpoint');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-vf-podres-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

// a root of our own: the node's sys and dev, and a kubelet folder where its socket goes
const root = path.join(tmp, 'root');
fs.mkdirSync(root);
fs.symlinkSync(path.join(NODE, 'sys'), path.join(root, 'sys'));
fs.symlinkSync(path.join(NODE, 'dev'), path.join(root, 'dev'));
const defaultSock = path.join(root, 'var', 'lib', 'kubelet', 'pod-resources', 'kubelet.sock');
const policy = path.join(tmp, 'fewer.json');
fs.writeFileSync(policy, JSON.stringify({
	apiVersion: 'sriovnetwork.openshift.io/v1', kind: 'SriovNetworkNodePolicy', metadata: { name: 'fewer' },
	spec: { nodeSelector: {}, resourceName: 'fewer', priority: 10, numVfs: 8, nicSelector: { rootDevices: ['0000:1b:00.0'] } },
}));

function vf(args) {
	return new Promise((resolve) => {
		const p = spawn(RDMAK, ['vf', ...args, '--policy', policy, '--root', root]);
		let out = '', err = '';
		p.stdout.on('data', (d) => (out += d));
		p.stderr.on('data', (d) => (err += d));
		p.on('exit', (code) => resolve({ code, out, err }));
	});
}

test('plan: the pods holding VFs of the PF, by namespace/name, from PodResources at the default socket', async () => {
	const s = new PodResources(defaultSock);
	s.pods = samplePods();
	await s.start();
	try {
		let r = await vf(['plan']);
		assert.equal(r.code, 3, r.err); // live steps to do
		assert.match(r.out, /held: VF 0 \(0000:1b:00\.2\) by pod ml\/trainer-0 container trainer \(nvidia\.com\/cx5_vf\)/);
		assert.match(r.out, /held: VF 1 \(0000:1b:00\.3\) by pod ml\/trainer-0 container trainer/);
		assert.doesNotMatch(r.out, /0000:1b:02\.2/, 'a VF of the other PF is not this PF\'s');
		assert.doesNotMatch(r.out, /held: unknown/);
		assert.equal(s.calls, 1);

		r = await vf(['plan', '--json']);
		const held = JSON.parse(r.out).pfs[0].holders;
		assert.deepEqual(held.map((h) => [h.namespace, h.pod, h.pod_uid, h.container, h.resource, h.vf, h.vf_index]), [
			['ml', 'trainer-0', null, 'trainer', 'nvidia.com/cx5_vf', '0000:1b:00.2', 0],
			['ml', 'trainer-0', null, 'trainer', 'nvidia.com/cx5_vf', '0000:1b:00.3', 1],
		]);

		// apply refuses, naming the pod, before touching anything
		r = await vf(['apply']);
		assert.equal(r.code, 5, r.out + r.err);
		assert.match(r.out, /VF 0 \(0000:1b:00\.2\) is held by pod ml\/trainer-0 container trainer/);

		// nobody holds a VF of this PF: nothing held, nothing refused on its account
		s.pods = samplePods().filter((p) => p.name !== 'trainer-0');
		r = await vf(['plan', '--json']);
		assert.deepEqual(JSON.parse(r.out).pfs[0].holders, []);
	} finally {
		await s.stop();
	}
});

test('a named socket that does not answer: said, and the checkpoint is read; a named checkpoint wins', async () => {
	const s = new PodResources(path.join(tmp, 'hang.sock'));
	s.hang = true;
	s.pods = samplePods();
	await s.start();
	try {
		let r = await vf(['plan', '--pod-resources', path.join(tmp, 'hang.sock')]);
		assert.equal(r.code, 3);
		assert.match(r.err, /PodResources API: .*status 4.*reading its checkpoint instead/);
		assert.match(r.out, /held: unknown \(no PodResources answer, no kubelet checkpoint\)/);

		s.hang = false;
		r = await vf(['plan', '--pod-resources', path.join(tmp, 'hang.sock'), '--checkpoint', CP]);
		assert.match(r.out, /held: VF 0 \(0000:1b:00\.2\) by pod 6a1c2f9e-0d51-4e0b-9a55-1f3e9b2c7d01 container trainer/);
		assert.equal(s.calls, 1, 'the kubelet is not asked when a checkpoint is named');
	} finally {
		await s.stop();
	}
	const r = await vf(['plan', '--pod-resources', path.join(tmp, 'none.sock')]);
	assert.match(r.err, /none\.sock: No such file or directory; reading its checkpoint instead/);
});
