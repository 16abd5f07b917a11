// SPDX-License-Identifier: Apache-2.0
// `rdmak webhook` against clients that misbehave and files that change under it: oversized and
// truncated bodies, slow clients, a connection limit, key pair rotation under load in the layout
// kubelet gives a Secret volume (cert-manager's rotation arrives as a ..data symlink swap), a
// rotation caught half done, and config reloads good and bad. Each test starts its own server
// with the limits it needs; ports are the kernel's choice (--listen 127.0.0.1:0).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import tls from 'node:tls';
import { FIXTURES, loadYaml, makePki, post, review, startWebhook } from './webhookserver.mjs';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-webhook-robust-'));
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

async function start(args, opts = {}) {
	const s = await startWebhook({ config: opts.config ?? config, cert: opts.cert ?? pki.cert, key: opts.key ?? pki.key, args });
	servers.push(s);
	return s;
}

async function stopClean(s) {
	const { code } = await s.stop('SIGTERM');
	assert.equal(code, 0, `exit code (ASan reports leaks this way):\n${s.logs.slice(-15).join('\n')}`);
}

const seedReview = () => review(loadYaml('seed004-rdma-tools-pod.yaml'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A raw TLS connection (verifying the server) for what https.request will not do.
function rawTls(port) {
	return new Promise((resolve, reject) => {
		const sock = tls.connect({ host: '127.0.0.1', port, ca: fs.readFileSync(pki.ca), servername: 'localhost' }, () => resolve(sock));
		sock.on('error', reject);
	});
}

// Everything the server sends until it closes (or ms pass): { text, closed }.
function readUntilClose(sock, ms) {
	return new Promise((resolve) => {
		let text = '';
		const done = (closed) => { clearTimeout(t); resolve({ text, closed }); };
		const t = setTimeout(() => done(false), ms);
		sock.on('data', (d) => { text += d.toString(); });
		sock.on('close', () => done(true));
		sock.on('error', () => {});
	});
}

test('bodies: over --max-body is 413 when announced, closed when chunked; at the limit is served', async () => {
	const s = await start(['--max-body', '65536']);
	// announced too large: answered from the headers, before any body
	let sock = await rawTls(s.port);
	const got = readUntilClose(sock, 15000);
	sock.write('POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 65537\r\n\r\n');
	let r = await got;
	assert.match(r.text, /^HTTP\/1\.1 413 /);
	// chunked, no length: closed once the bytes pass the limit (MHD cannot answer mid-body)
	sock = await rawTls(s.port);
	const got2 = readUntilClose(sock, 15000);
	sock.write('POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
	const chunk = ' '.repeat(16384);
	for (let i = 0; i < 8 && !sock.destroyed; i++) {
		sock.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
		await sleep(20);
	}
	r = await got2;
	assert.equal(r.closed, true);
	assert.equal(r.text, '');
	await s.waitLog(/POST \/mutate from 127\.0\.0\.1: body over 65536 bytes without Content-Length; connection closed/);
	// exactly the limit: a real review padded with blanks reaches the handler
	const body = JSON.stringify(seedReview());
	const padded = body + ' '.repeat(65536 - Buffer.byteLength(body));
	const ok = await post(s.port, pki.ca, padded);
	assert.equal(ok.status, 200);
	assert.equal(ok.json.response.allowed, true);
	await stopClean(s);
});

test('a truncated body (the client goes away mid-body) leaves the server serving', async () => {
	const s = await start([]);
	for (let i = 0; i < 5; i++) {
		const sock = await rawTls(s.port);
		const body = JSON.stringify(seedReview());
		sock.write(`POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
		sock.write(body.slice(0, body.length / 2));
		await sleep(10);
		sock.destroy();
	}
	const ok = await post(s.port, pki.ca, seedReview());
	assert.equal(ok.status, 200);
	await stopClean(s);
});

test('slow clients are cut at the request timeout while others are served', async () => {
	const s = await start(['--request-timeout', '1', '--idle-timeout', '2']);
	// headers one byte at a time: never a complete request within 1 s
	const slow = await rawTls(s.port);
	const slowDone = readUntilClose(slow, 15000);
	const head = 'POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n';
	let i = 0;
	const dribble = setInterval(() => { if (!slow.destroyed && i < head.length) slow.write(head[i++]); }, 100);
	// a body that stops halfway and never ends
	const stalled = await rawTls(s.port);
	const stalledDone = readUntilClose(stalled, 15000);
	stalled.write('POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"a":');
	// a client that connects and says nothing
	const mute = await rawTls(s.port);
	const muteDone = readUntilClose(mute, 15000);
	// meanwhile a well-behaved client is served, several times
	for (let k = 0; k < 5; k++) {
		const ok = await post(s.port, pki.ca, seedReview());
		assert.equal(ok.status, 200);
	}
	const [a, b, c] = await Promise.all([slowDone, stalledDone, muteDone]);
	clearInterval(dribble);
	assert.equal(a.closed, true, 'the byte-at-a-time client is closed');
	assert.equal(b.closed, true, 'the stalled body is closed');
	assert.equal(c.closed, true, 'the silent connection is closed');
	assert.equal(b.text, '', 'no answer to a request that never arrived');
	await s.waitLog(/closed a connection from 127\.0\.0\.1: its request took longer than the request timeout/);
	const ok = await post(s.port, pki.ca, seedReview());
	assert.equal(ok.status, 200);
	await stopClean(s);
	assert.match(s.logs.at(-1), /; [2-9]\d* slow connections cut$/);
});

test('--max-connections: a new client takes the oldest idle connection\'s slot; with every one serving a request it is refused, and served again once one closes', async () => {
	let s = await start(['--max-connections', '3']);
	const held = [];
	for (let k = 0; k < 3; k++) held.push(await rawTls(s.port));
	await sleep(300);
	// idle connections (past their handshake, no request) never keep a client out
	const first = readUntilClose(held[0], 10000);
	assert.equal((await post(s.port, pki.ca, seedReview())).status, 200, 'served in place of an idle connection');
	assert.equal((await first).closed, true, 'the oldest idle connection made room');
	for (const h of held) h.destroy();
	await stopClean(s);
	// three requests in progress (headers in, the body still coming): nothing to take back
	s = await start(['--max-connections', '3']);
	held.length = 0;
	for (let k = 0; k < 3; k++) {
		const sock = await rawTls(s.port);
		sock.write('POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{');
		held.push(sock);
	}
	await sleep(300);
	await assert.rejects(post(s.port, pki.ca, seedReview(), { timeout: 5000 }));
	await s.waitLog(/connection limit \(3\) reached: refused a connection from 127\.0\.0\.1: every connection has a request being answered/);
	held.pop().destroy();
	await sleep(200);
	const ok = await post(s.port, pki.ca, seedReview());
	assert.equal(ok.status, 200);
	for (const h of held) h.destroy();
	await stopClean(s);
});

// The layout kubelet writes for a Secret volume: files are symlinks through ..data, and an update
// swaps ..data atomically (rename of a new symlink over it).
function secretVolume(root, pair) {
	fs.mkdirSync(root, { recursive: true });
	let n = 0;
	const put = (p) => {
		const ts = `..2025_01_01_00_00_0${n++}.${process.pid}`;
		fs.mkdirSync(path.join(root, ts));
		fs.copyFileSync(p.cert, path.join(root, ts, 'tls.crt'));
		fs.copyFileSync(p.key, path.join(root, ts, 'tls.key'));
		fs.symlinkSync(ts, path.join(root, '..data_tmp'));
		fs.renameSync(path.join(root, '..data_tmp'), path.join(root, '..data'));
	};
	put(pair);
	fs.symlinkSync('..data/tls.crt', path.join(root, 'tls.crt'));
	fs.symlinkSync('..data/tls.key', path.join(root, 'tls.key'));
	return { cert: path.join(root, 'tls.crt'), key: path.join(root, 'tls.key'), rotate: put };
}

test('key pair rotation under load: 16 clients, 3 rotations, no failed request', async () => {
	const vol = secretVolume(path.join(dir, 'secret'), pki);
	const s = await start([], { cert: vol.cert, key: vol.key });
	const pairs = [pki.issue('rot1'), pki.issue('rot2'), pki.issue('rot3')];
	const body = JSON.stringify(seedReview());
	const keepAlive = new https.Agent({ keepAlive: true, maxSockets: 8 });
	let stop = false;
	let ok = 0;
	const failures = [];
	// 8 clients on keep-alive connections, 8 opening a new connection (a new handshake) each
	// time; each runs until the rotations are over and it has made at least 3 requests
	const client = async (agent) => {
		for (let n = 0; !stop || n < 3; n++) {
			try {
				const r = await post(s.port, pki.ca, body, { agent });
				if (r.status !== 200 || !r.json?.response?.allowed) failures.push(`status ${r.status}`);
				else ok++;
			} catch (e) {
				failures.push(e.message);
			}
		}
	};
	const clients = [];
	for (let k = 0; k < 8; k++) clients.push(client(keepAlive), client(false));
	for (const [k, p] of pairs.entries()) {
		await sleep(300);
		vol.rotate(p);
		await s.waitLog(new RegExp(`certificate reloaded: CN=rdmak-webhook-rot${k + 1}`));
		// a handshake after the reload gets the new pair
		const r = await post(s.port, pki.ca, body, { agent: false });
		assert.equal(r.peerCert.serialNumber.toUpperCase(), p.serial.toUpperCase(), `rotation ${k + 1}`);
	}
	stop = true;
	await Promise.all(clients);
	keepAlive.destroy();
	assert.deepEqual(failures, [], `${failures.length} failed of ${ok + failures.length}`);
	assert.ok(ok >= 16 * 3, `${ok} requests served during the rotations`);
	await stopClean(s);
});

test('a rotation caught half done (new certificate, old key) is refused once; the key completes it', async () => {
	const d = path.join(dir, 'plain');
	fs.mkdirSync(d, { recursive: true });
	const cert = path.join(d, 'tls.crt');
	const key = path.join(d, 'tls.key');
	fs.copyFileSync(pki.cert, cert);
	fs.copyFileSync(pki.key, key);
	const s = await start([], { cert, key });
	const next = pki.issue('half');
	fs.copyFileSync(next.cert, `${cert}.tmp`);
	fs.renameSync(`${cert}.tmp`, cert);
	await s.waitLog(/new certificate refused, serving the previous one: .*the key is not the certificate's key/);
	let r = await post(s.port, pki.ca, seedReview(), { agent: false });
	assert.equal(r.status, 200);
	assert.equal(r.peerCert.subject.CN, 'rdmak-webhook-server', 'the previous pair still serves');
	await sleep(2500); // two periodic checks: still one refusal in the log
	assert.equal(s.logs.filter((l) => /new certificate refused/.test(l)).length, 1);
	fs.copyFileSync(next.key, `${key}.tmp`);
	fs.renameSync(`${key}.tmp`, key);
	await s.waitLog(/certificate reloaded: CN=rdmak-webhook-half/);
	r = await post(s.port, pki.ca, seedReview(), { agent: false });
	assert.equal(r.peerCert.subject.CN, 'rdmak-webhook-half');
	await stopClean(s);
});

test('config reload: a new group is served, a bad config is refused once and the running one stays', async () => {
	const d = path.join(dir, 'cm');
	fs.mkdirSync(d, { recursive: true });
	const cfg = path.join(d, 'config.yaml');
	const base = fs.readFileSync(config, 'utf8');
	const write = (text) => { fs.writeFileSync(`${cfg}.tmp`, text); fs.renameSync(`${cfg}.tmp`, cfg); };
	write(base);
	const s = await start([], { config: cfg });
	const pod = loadYaml('seed004-rdma-tools-pod.yaml');
	pod.metadata.annotations['cni.spidernet.io/rdma-resource-inject'] = 'storage';
	let r = await post(s.port, pki.ca, review(pod));
	assert.equal(r.json.response.allowed, false);

	write(`${base}  storage:\n    networks:\n      - {namespace: nas, name: storage-roce, resource: rdma/roce_storage}\n`);
	await s.waitLog(/config .* reloaded: 5 groups \(gpu-sriov, shared-a, v100, hostdev, storage\)/);
	r = await post(s.port, pki.ca, review(pod));
	assert.equal(r.json.response.allowed, true);
	assert.ok(r.json.response.patch);

	write(`${base}  storage:\n    netwrks: []\n`);
	await s.waitLog(/new config refused, keeping the running one: .*: groups\.storage\.netwrks: unknown key/);
	await sleep(2500);
	assert.equal(s.logs.filter((l) => /new config refused/.test(l)).length, 1, 'said once, not every second');
	r = await post(s.port, pki.ca, review(pod));
	assert.equal(r.json.response.allowed, true, 'the running config (with storage) still serves');

	s.proc.kill('SIGHUP');
	await sleep(300);
	await s.waitLog(/SIGHUP: new config refused/);
	write(base);
	await s.waitLog(/config .* reloaded: 4 groups/);
	r = await post(s.port, pki.ca, review(pod));
	assert.equal(r.json.response.allowed, false);
	await stopClean(s);
});
