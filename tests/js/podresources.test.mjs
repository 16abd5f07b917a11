// SPDX-License-Identifier: Apache-2.0
// The kubelet module's PodResources client (src/kubelet/podresources.c) against a stand-in
// kubelet written with @grpc/grpc-js and the published v1 proto (podresources.mjs): the rows
// List gives, the deadline when the kubelet does not answer, an old kubelet, nobody there.
// tests/helpers/podres_list makes one call and prints the rows.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { TOP } from './kubelet.mjs';
import { PodResources, PUBLISHED, samplePods } from './podresources.mjs';

const BUILD = process.env.BUILD || path.join(TOP, 'build');
const LIST = path.join(BUILD, 'tests', 'helpers', 'podres_list');
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-podres-'));
const sock = path.join(root, 'pod-resources', 'kubelet.sock');
after(() => fs.rmSync(root, { recursive: true, force: true }));

// Run the helper asynchronously (the stand-in answers on this event loop).
function list(socket, timeoutMs) {
	return new Promise((resolve) => {
		const t0 = performance.now();
		const p = spawn(LIST, [socket, ...(timeoutMs === undefined ? [] : [String(timeoutMs)])]);
		let out = '', err = '';
		p.stdout.on('data', (d) => (out += d));
		p.stderr.on('data', (d) => (err += d));
		p.on('exit', (code) => resolve({ code, out, err, ms: performance.now() - t0 }));
	});
}

test('List: one row per container and resource, the published answer\'s other fields skipped', async () => {
	const s = new PodResources(sock);
	s.pods = samplePods();
	await s.start();
	try {
		const r = await list(sock);
		assert.equal(r.code, 0, r.err);
		assert.deepEqual(r.out.trim().split('\n'), [
			'ml\ttrainer-0\ttrainer\tnvidia.com/cx5_vf\t0000:1b:00.2,0000:1b:00.3',
			'ml\ttrainer-1\ttrainer\tnvidia.com/cx5_vf\t0000:1b:02.2',
			'perf\tbench\tib\trdma/shared_cx5\t7',
			'perf\tbench2\tib\trdma/shared_cx5\t12',
			'default\tweb\tnginx\texample.com/gpu\tGPU-1',
		]);
		assert.equal(s.calls, 1);
		s.pods = [];
		const empty = await list(sock);
		assert.equal(empty.code, 0, empty.err);
		assert.equal(empty.out, '', 'no pods: no rows');
	} finally {
		await s.stop();
	}
});

test('a kubelet that does not answer: the call ends at its deadline with ETIMEDOUT', async () => {
	const s = new PodResources(sock);
	s.hang = true;
	await s.start();
	try {
		const r = await list(sock, 300);
		assert.equal(r.code, 1);
		assert.match(r.err, /^ETIMEDOUT: .*status 4/);
		// bounded by the deadline, not by the test's patience (process start-up included)
		assert.ok(r.ms < 10000, `${r.ms} ms`);
		assert.equal(s.calls, 1);
	} finally {
		await s.stop();
	}
});

test('a kubelet without v1 List (UNIMPLEMENTED): EOPNOTSUPP; another status: EPROTO', async () => {
	const s = new PodResources(sock);
	s.fail = grpc.status.UNIMPLEMENTED;
	await s.start();
	try {
		let r = await list(sock);
		assert.equal(r.code, 1);
		assert.match(r.err, /^EOPNOTSUPP: .*stand-in refuses/);
		s.fail = grpc.status.PERMISSION_DENIED;
		r = await list(sock);
		assert.match(r.err, /^EPROTO: .*status 7/);
	} finally {
		await s.stop();
	}
});

test('nobody there: ENOENT without the socket, ECONNREFUSED on a stale one', async () => {
	let r = await list(path.join(root, 'nowhere.sock'));
	assert.equal(r.code, 1);
	assert.match(r.err, /^ENOENT: /);
	// a socket file nobody listens on (a kubelet gone without removing it)
	const stale = path.join(root, 'stale.sock');
	const py = spawnSync('python3', ['-c', 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])', stale]);
	assert.equal(py.status, 0, String(py.stderr));
	r = await list(stale);
	assert.equal(r.code, 1);
	assert.match(r.err, /^ECONNREFUSED: /);
});

test('podresources.proto: its fields are the published ones, by number and type', () => {
	const ours = protobuf.parse(fs.readFileSync(path.join(TOP, 'src', 'kubelet', 'podresources.proto'), 'utf8'), { keepCase: true });
	const pub = protobuf.parse(PUBLISHED, { keepCase: true });
	assert.equal(ours.package, 'v1', 'package v1 (part of the method path)');
	const types = ours.root.lookup('v1').nestedArray.filter((x) => x instanceof protobuf.Type);
	assert.ok(types.length >= 5);
	for (const t of types) {
		const p = pub.root.lookup(`v1.${t.name}`);
		assert.ok(p, `${t.name} is a published message`);
		for (const f of t.fieldsArray) {
			const q = p.fields[f.name];
			assert.ok(q, `${t.name}.${f.name} is a published field`);
			assert.deepEqual([f.id, f.type, f.repeated], [q.id, q.type, q.repeated], `${t.name}.${f.name}`);
		}
	}
});
