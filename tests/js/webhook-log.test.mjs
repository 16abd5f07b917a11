// SPDX-License-Identifier: Apache-2.0
// `rdmak webhook`'s log lines (issue 16, defect 8): one bounded line per request whatever the
// request carried (a 100 KB annotation, 50 000 group names, control characters), a summary for a
// CREATE without request.object (it logged "(null)"), and JSON lines under RDMAK_LOG_FORMAT=json.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { FIXTURES, loadYaml, makePki, post, review, startWebhook } from './webhookserver.mjs';

const LINE_MAX = 4096; // bytes with the newline: src/log/log.h LOG_LINE_MAX (PIPE_BUF)
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-webhook-log-'));
const config = path.join(FIXTURES, 'config.yaml');
const servers = [];
let pki;

before(() => {
	pki = makePki(path.join(dir, 'pki'));
});

after(async () => {
	for (const s of servers) await s.stop('SIGKILL');
	fs.rmSync(dir, { recursive: true, force: true });
});

async function start(env = {}) {
	const s = await startWebhook({ config, cert: pki.cert, key: pki.key, env });
	servers.push(s);
	return s;
}

async function stopClean(s) {
	const { code } = await s.stop('SIGTERM');
	assert.equal(code, 0, `exit code (ASan reports leaks this way):\n${s.logs.slice(-15).join('\n')}`);
}

const bytes = (l) => Buffer.byteLength(l) + 1;
const podWith = (annotation, value) => {
	const pod = loadYaml('seed004-rdma-tools-pod.yaml');
	pod.metadata.generateName = 'log-test-';
	pod.metadata.annotations = { [annotation]: value };
	return pod;
};

test('a CREATE without request.object is a 400 with a log line that says so, never "(null)"', async () => {
	const s = await start();
	const rv = review(null, { uid: 'no-object-1' });
	delete rv.request.object;
	const r = await post(s.port, pki.ca, rv);
	assert.equal(r.status, 400);
	assert.match(r.body, /request\.object: missing for a CREATE/);
	const line = await s.waitLog(/no-object-1/);
	assert.match(line, /warning: uid no-object-1: bad AdmissionReview: request\.object: missing for a CREATE$/);
	assert.ok(!s.logs.some((l) => l.includes('(null)')), s.logs.join('\n'));
	await stopClean(s);
});

test('a 100 KB annotation and 50 000 group names give bounded lines, cut with a marker', async () => {
	const s = await start();
	const big = 'x'.repeat(100 * 1024);
	let r = await post(s.port, pki.ca, review(podWith('rdmak.io/rdma-networks', big)));
	assert.equal(r.status, 200);
	let line = await s.waitLog(/log-test-.*xxxx/);
	assert.ok(bytes(line) <= LINE_MAX, `a line of ${bytes(line)} bytes`);
	assert.match(line, /…\[cut \d+ bytes\]$/);

	const many = Array.from({ length: 50000 }, (_, i) => `g${i}`).join(',');
	r = await post(s.port, pki.ca, review(podWith('rdmak.io/rdma-networks', many)));
	assert.equal(r.status, 200);
	line = await s.waitLog(/log-test-.*g0,g1,g2/);
	assert.ok(bytes(line) <= LINE_MAX, `a line of ${bytes(line)} bytes`);
	assert.match(line, /…\[cut \d+ bytes\]$/);

	// control characters from the request stay inside one escaped line
	r = await post(s.port, pki.ca, review(podWith('rdmak.io/rdma-networks', 'a\nfake-line\tb')));
	assert.equal(r.status, 200);
	line = await s.waitLog(/fake-line/);
	assert.match(line, /a\\nfake-line\\tb/);
	assert.ok(!s.logs.some((l) => l.startsWith('fake-line')), s.logs.join('\n'));
	assert.ok(s.logs.every((l) => bytes(l) <= LINE_MAX));
	await stopClean(s);
});

test('RDMAK_LOG_FORMAT=json: every line is one JSON object with time, level, program and msg', async () => {
	const s = await start({ RDMAK_LOG_FORMAT: 'json' });
	await post(s.port, pki.ca, review(podWith('rdmak.io/rdma-networks', `q"uote\\ ${'y'.repeat(9000)}`)));
	await s.waitLog(/log-test-/);
	await stopClean(s);
	assert.ok(s.logs.length >= 5, s.logs.join('\n'));
	for (const l of s.logs) {
		const o = JSON.parse(l);
		assert.deepEqual(Object.keys(o), ['time', 'level', 'program', 'pid', 'msg']);
		assert.match(o.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
		assert.ok(['error', 'warning', 'info', 'debug'].includes(o.level));
		assert.equal(o.program, 'webhook');
		assert.ok(bytes(l) <= LINE_MAX, `a line of ${bytes(l)} bytes`);
	}
	const req = s.logs.map((l) => JSON.parse(l).msg).find((m) => m.includes('log-test-'));
	assert.match(req, /q"uote\\ y+…\[cut \d+ bytes\]$/);
	assert.ok(s.logs.some((l) => JSON.parse(l).msg.startsWith('listening on https://')));
});
