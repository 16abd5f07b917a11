// SPDX-License-Identifier: Apache-2.0
// `rdmak webhook` against clients that hold connections without speaking TLS, or speak something
// else (issue 16 §2.2 and §2.10): idle TCP sockets filling every slot must not keep the API
// server's call waiting (the handshake has its own deadline, a new client takes the slot of the
// oldest connection still in its handshake, and a full server refuses at once rather than
// leaving the client queued); plain HTTP, TLS 1.0/1.1 and an untrusted certificate are closed
// with a line saying why; two Content-Length headers are a 400. Times are measured and printed;
// the assertions are on what happened and in what order, with bounds far from the real ones.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import tls from 'node:tls';
import { FIXTURES, loadYaml, makePki, post, review, startWebhook } from './webhookserver.mjs';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-webhook-handshake-'));
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

async function start(args) {
	const s = await startWebhook({ config, cert: pki.cert, key: pki.key, args });
	servers.push(s);
	return s;
}

async function stopClean(s) {
	const { code } = await s.stop('SIGTERM');
	assert.equal(code, 0, `exit code (ASan reports leaks this way):\n${s.logs.slice(-15).join('\n')}`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const seedReview = () => review(loadYaml('seed004-rdma-tools-pod.yaml'));

// n TCP connections that never send a byte; each records when the server closed it. gapMs
// apart when the order matters: the server's worker threads accept from one queue, and two
// connections that arrive together may be announced in either order.
async function idleSockets(port, n, gapMs = 0) {
	const socks = [];
	for (let i = 0; i < n; i++) {
		const sock = net.connect({ host: '127.0.0.1', port });
		sock.closedAt = null;
		sock.on('close', () => { sock.closedAt = Date.now(); });
		sock.on('error', () => {});
		await new Promise((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject); });
		socks.push(sock);
		if (gapMs) await sleep(gapMs);
	}
	return socks;
}

async function waitClosed(socks, ms) {
	const until = Date.now() + ms;
	while (socks.some((s) => s.closedAt === null) && Date.now() < until) await sleep(50);
	return socks.filter((s) => s.closedAt !== null).length;
}

test('300 idle TCP sockets against the default limits (256 connections): a real client is served, the sockets are closed at the handshake timeout', async () => {
	const s = await start([]);
	const socks = await idleSockets(s.port, 300);
	await sleep(300); // all of them accepted (or refused) by now
	const t0 = Date.now();
	const r = await post(s.port, pki.ca, seedReview(), { timeout: 20000 });
	const served = Date.now();
	assert.equal(r.status, 200);
	assert.equal(r.json.response.allowed, true);
	// the slot came from a connection still in its handshake, closed before the answer
	assert.ok(socks.some((k) => k.closedAt !== null && k.closedAt <= served), 'an idle socket made room');
	// the others go at the handshake timeout (default 5 s), far before the idle timeout (60 s)
	const closed = await waitClosed(socks, 20000);
	const last = Math.max(...socks.map((k) => k.closedAt ?? Infinity));
	console.log(`# 300 idle sockets: served in ${served - t0} ms; all closed ${last - t0} ms after the request started`);
	assert.equal(closed, 300, 'every idle socket closed within 20 s');
	await s.waitLog(/webhook warning: connection limit \(256\) reached: closed a connection from 127\.0\.0\.1 still in its TLS handshake after \d+ ms, for one from 127\.0\.0\.1/);
	await s.waitLog(/webhook info: closed a connection from 127\.0\.0\.1: no TLS handshake within the handshake timeout/);
	// one line a second about the limit, not one per connection
	assert.ok(s.logs.filter((l) => /connection limit/.test(l)).length < 20);
	const again = await post(s.port, pki.ca, seedReview());
	assert.equal(again.status, 200);
	await stopClean(s);
});

function tlsConnect(port) {
	return new Promise((resolve, reject) => {
		const sock = tls.connect({ host: '127.0.0.1', port, ca: fs.readFileSync(pki.ca), servername: 'localhost' }, () => resolve(sock));
		sock.on('error', reject);
	});
}

test('--tls-handshake-timeout: new clients take the slots of the oldest idle sockets, in order; the rest go at the timeout', async () => {
	const s = await start(['--max-connections', '20', '--tls-handshake-timeout', '5', '--idle-timeout', '60']);
	const socks = await idleSockets(s.port, 20, 25);
	await sleep(200);
	const t0 = Date.now();
	// three clients that finish their handshake and stay connected
	const held = [];
	for (let k = 0; k < 3; k++) held.push(await tlsConnect(s.port));
	const shook = Date.now();
	await sleep(100);
	assert.deepEqual(socks.map((k, i) => (k.closedAt !== null ? i : -1)).filter((i) => i >= 0), [0, 1, 2],
		'the three oldest sockets, and only they, made room');
	assert.ok(socks[0].closedAt <= socks[1].closedAt && socks[1].closedAt <= socks[2].closedAt, 'oldest first');
	const r = await post(s.port, pki.ca, seedReview(), { agent: false });
	assert.equal(r.status, 200);
	assert.equal(await waitClosed(socks, 20000), 20);
	const last = Math.max(...socks.map((k) => k.closedAt));
	console.log(`# 20 idle sockets: 3 handshakes done in ${shook - t0} ms, the last idle socket closed after ${last - t0} ms (timeout 5 s)`);
	assert.ok(last - t0 < 20000, 'at the handshake timeout, not the idle timeout (60 s)');
	for (const h of held) h.destroy();
	await stopClean(s);
	assert.match(s.logs.at(-1), /; (1[7-9]|[2-9]\d) slow connections cut$/);
});

test('--max-connections full of requests being served: a new client is refused at once, not left waiting', async () => {
	const s = await start(['--max-connections', '3']);
	const held = [];
	// past their handshake and inside a request (headers in, the body still coming): a slot
	// that is serving nobody (a handshake, an idle connection) would be taken back instead
	for (let k = 0; k < 3; k++) {
		const sock = await tlsConnect(s.port);
		sock.write('POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{');
		held.push(sock);
	}
	await sleep(200);
	const t0 = Date.now();
	const err = await post(s.port, pki.ca, seedReview(), { timeout: 10000 }).then(() => null, (e) => e);
	const took = Date.now() - t0;
	console.log(`# refused after ${took} ms: ${err?.code ?? err?.message}`);
	assert.ok(err, 'refused');
	assert.doesNotMatch(err.message, /no answer within/, 'closed, not left without an answer');
	await s.waitLog(/connection limit \(3\) reached: refused a connection from 127\.0\.0\.1: every connection has a request being answered/);
	held.pop().destroy();
	await sleep(300);
	const ok = await post(s.port, pki.ca, seedReview());
	assert.equal(ok.status, 200);
	for (const h of held) h.destroy();
	await stopClean(s);
});

// What a client that fails its handshake sees is the client's business; the log says why.
function failedTls(port, opts) {
	return new Promise((resolve) => {
		const sock = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ...opts }, () => {
			sock.destroy();
			resolve(null);
		});
		sock.on('error', (e) => resolve(e));
	});
}

test('plain HTTP, TLS 1.0 and 1.1, and a client that does not trust the certificate: closed, with the reason at info level', async () => {
	const s = await start([]);
	const plain = net.connect({ host: '127.0.0.1', port: s.port });
	plain.on('error', () => {});
	plain.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
	await new Promise((resolve) => plain.on('close', resolve));
	await s.waitLog(/webhook info: closed a connection from 127\.0\.0\.1: plain HTTP on the HTTPS port \(it began "GET \/"\)/);

	for (const [v, name] of [['TLSv1.1', 'TLS 1.1'], ['TLSv1', 'TLS 1.0']]) {
		// OpenSSL 3 sends TLS 1.0/1.1 only at security level 0
		const e = await failedTls(s.port, { minVersion: 'TLSv1', maxVersion: v, ciphers: 'DEFAULT@SECLEVEL=0', rejectUnauthorized: false });
		assert.ok(e, `${v} refused`);
		await s.waitLog(new RegExp(`webhook info: closed a connection from 127\\.0\\.0\\.1: its client offers ${name.replace('.', '\\.')} at most; this server speaks TLS 1\\.2 and 1\\.3`));
	}

	const e = await failedTls(s.port, {}); // the system's CAs: not the test CA
	assert.match(String(e?.code), /SELF_SIGNED|UNABLE_TO_GET_ISSUER|UNABLE_TO_VERIFY/);
	await s.waitLog(/webhook info: closed a connection from 127\.0\.0\.1: TLS handshake failed \(a client that does not trust this certificate/);

	// a TCP probe (kubelet's tcpSocket) is not worth a line at info level
	const probe = net.connect({ host: '127.0.0.1', port: s.port });
	await new Promise((resolve) => probe.on('connect', resolve));
	probe.destroy();
	await sleep(300);
	assert.equal(s.logs.filter((l) => /webhook info: closed a connection/.test(l)).length, 4);
	const ok = await post(s.port, pki.ca, seedReview());
	assert.equal(ok.status, 200);
	// a handshake begun and cut by the server's own stop is no client's failure
	const begun = net.connect({ host: '127.0.0.1', port: s.port });
	begun.on('error', () => {});
	begun.write(Buffer.from([0x16, 0x03, 0x01]));
	await sleep(300);
	await stopClean(s);
	assert.equal(s.logs.filter((l) => /webhook info: closed a connection/.test(l)).length, 4, s.logs.slice(-5).join('\n'));
});

// SIGTERM while a request is in progress. The server used to stop taking clients with
// MHD_quiesce_daemon, which in libmicrohttpd 0.9.75 races its own epoll workers and can abort the
// process ("Failed to remove listen FD from epoll set"); it now closes new connections as they
// are accepted, and says so once it has begun.
test('SIGTERM with a request in progress: it is answered within --shutdown-grace; a new connection meanwhile is closed at accept, and counted', async () => {
	const s = await start(['--shutdown-grace', '60']);
	const body = JSON.stringify(seedReview());
	const held = await tlsConnect(s.port);
	let text = '';
	held.on('data', (d) => { text += d.toString(); });
	const heldClosed = new Promise((resolve) => held.on('close', resolve));
	// Expect: 100-continue: the interim answer says the server has the request's headers, so the
	// request is in progress when the signal comes
	held.write(`POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
		'Expect: 100-continue\r\n\r\n');
	for (let i = 0; i < 400 && !/^HTTP\/1\.1 100 /.test(text); i++) await sleep(50);
	assert.match(text, /^HTTP\/1\.1 100 /, 'the server asked for the body');
	s.proc.kill('SIGTERM');
	await s.waitLog(/webhook info: stopping: up to 60000 ms for 1 requests in progress; new connections are closed at accept/);

	// a client that comes now gets no answer: its connection is closed once accepted
	const e = await failedTls(s.port, { ca: fs.readFileSync(pki.ca) });
	assert.ok(e, 'the new connection is not served');
	console.log(`# a client during the grace: ${e.code ?? e.message}`);

	// the request in progress is still answered
	text = '';
	held.write(body);
	for (let i = 0; i < 400 && !/\r\n\r\n\{.*\}\s*$/s.test(text); i++) await sleep(50);
	assert.match(text, /^HTTP\/1\.1 200 /, 'the request in progress is answered 200');
	assert.match(text, /"allowed":\s*true/);
	held.destroy();
	await heldClosed;
	const { code } = await s.done;
	assert.equal(code, 0, s.logs.slice(-10).join('\n'));
	assert.ok(s.logs.some((l) => /webhook info: new connections closed at accept while stopping: 1$/.test(l)), s.logs.slice(-6).join('\n'));
});

test('two Content-Length headers: 400, and the connection closes (RFC 9112 6.3)', async () => {
	const s = await start([]);
	const body = JSON.stringify(seedReview());
	for (const second of [String(Buffer.byteLength(body)), '2']) {
		const sock = await tlsConnect(s.port);
		let text = '';
		sock.on('data', (d) => { text += d.toString(); });
		const closed = new Promise((resolve) => sock.on('close', () => resolve(true)));
		sock.on('error', () => {});
		sock.write(`POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
			`Content-Length: ${second}\r\n\r\n${body}`);
		assert.equal(await Promise.race([closed, sleep(10000).then(() => false)]), true, 'closed');
		assert.match(text, /^HTTP\/1\.1 400 /);
		assert.match(text, /two Content-Length headers/);
	}
	await s.waitLog(/POST \/mutate from 127\.0\.0\.1: 2 Content-Length headers; answered 400 and closed/);
	await stopClean(s);
});
