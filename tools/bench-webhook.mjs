#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Benchmark of `rdmak webhook` (issue 9 §5): 1000 AdmissionReviews (seed 004's rdma-tools pod with
// cni.spidernet.io/rdma-resource-inject: gpu-sriov: eight networks, eight resources, IPC_LOCK, a
// 17-operation patch) from 16 concurrent HTTPS keep-alive clients (curl, one connection each,
// verifying the server against a CA made here by openssl). Prints throughput, p50/p99/max latency at the client,
// the server's RSS before and after and its CPU time per review. The peer in the same run is a
// minimal Node https server (its own process) that parses each review and answers with the same
// patch rdmak gave, precomputed: TLS, HTTP and JSON only, no merge logic; the ratio is rdmak/peer.
//   node tools/bench-webhook.mjs [--rdmak build/rdmak] [--requests 1000] [--clients 16]
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const TOP = path.resolve(here, '..');
const arg = (name, def) => {
	const i = process.argv.indexOf(name);
	return i > 0 ? process.argv[i + 1] : def;
};

// ---- the peer: `bench-webhook.mjs --peer CERT KEY ANSWER` prints its port, serves until killed ----
if (process.argv[2] === '--peer') {
	const [cert, key, answerFile] = process.argv.slice(3);
	const answer = JSON.parse(fs.readFileSync(answerFile, 'utf8'));
	const srv = https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key), keepAliveTimeout: 60000 }, (req, res) => {
		const chunks = [];
		req.on('data', (c) => chunks.push(c));
		req.on('end', () => {
			const rv = JSON.parse(Buffer.concat(chunks).toString());
			const body = JSON.stringify({ ...answer, response: { ...answer.response, uid: rv.request.uid } });
			res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
			res.end(body);
		});
	});
	srv.listen(0, '127.0.0.1', () => console.log(srv.address().port));
	process.on('SIGTERM', () => process.exit(0));
} else {
	await main();
}

async function main() {
	const RDMAK = path.resolve(arg('--rdmak', process.env.RDMAK || path.join(TOP, 'build', 'rdmak')));
	const N = Number(arg('--requests', 1000));
	const C = Number(arg('--clients', 16));
	const YAML = (await import(path.join(TOP, 'tests', 'js', 'node_modules', 'yaml', 'dist', 'index.js'))).default;
	const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-bench-webhook-'));
	const children = [];
	process.on('exit', () => {
		for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
		fs.rmSync(root, { recursive: true, force: true });
	});

	// PKI, the review
	const ossl = (a) => execFileSync('openssl', a, { stdio: ['ignore', 'pipe', 'pipe'] });
	const ca = path.join(root, 'ca.crt');
	const cert = path.join(root, 'tls.crt');
	const key = path.join(root, 'tls.key');
	ossl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', path.join(root, 'ca.key'), '-out', ca, '-days', '1', '-subj', '/CN=bench-ca']);
	ossl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', path.join(root, 'tls.csr'), '-subj', '/CN=bench']);
	fs.writeFileSync(path.join(root, 'ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
	ossl(['x509', '-req', '-in', path.join(root, 'tls.csr'), '-CA', ca, '-CAkey', path.join(root, 'ca.key'), '-CAcreateserial', '-out', cert, '-days', '1', '-extfile', path.join(root, 'ext')]);
	const pod = YAML.parse(fs.readFileSync(path.join(TOP, 'tests', 'fixtures', 'webhook', 'seed004-rdma-tools-pod.yaml'), 'utf8'));
	const reviewOf = (uid) => JSON.stringify({
		apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview',
		request: { uid, kind: { group: '', version: 'v1', kind: 'Pod' }, resource: { group: '', version: 'v1', resource: 'pods' },
			namespace: 'default', operation: 'CREATE', object: pod, dryRun: false },
	});

	// One request through Node's https (verifying the server): the answer the peer will give.
	const fetchAnswer = (port) => new Promise((resolve, reject) => {
		const body = reviewOf('first');
		const req = https.request({ host: '127.0.0.1', port, path: '/mutate', method: 'POST', ca: fs.readFileSync(ca), servername: 'localhost',
			headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } }, (res) => {
			const chunks = [];
			res.on('data', (c) => chunks.push(c));
			res.on('end', () => {
				const ans = JSON.parse(Buffer.concat(chunks).toString());
				if (res.statusCode !== 200 || !ans.response.patch) reject(new Error(`bad answer ${res.statusCode}`));
				else resolve(ans);
			});
		});
		req.on('error', reject);
		req.end(body);
	});

	// The load: C curl processes, each one keep-alive connection (curl reuses it for every URL of
	// one invocation: num_connects says so) doing a warm-up request then its share of the N, in
	// sequence. curl, not a Node client: a single Node event loop driving 16 connections on this
	// machine's cores measured its own queueing, not the server. Latency is curl's time_total;
	// the measured phase lasts as long as the busiest connection's requests.
	const bodyFile = path.join(root, 'review.json');
	fs.writeFileSync(bodyFile, reviewOf('bench'));
	const load = async (port) => {
		const url = `https://127.0.0.1:${port}/mutate`;
		const runs = Array.from({ length: C }, (_, i) => {
			const n = Math.floor(N / C) + (i < N % C ? 1 : 0);
			// one -o per URL: curl pairs them in order
			const args = ['-s', '--cacert', ca, '-H', 'Content-Type: application/json', '--data-binary', `@${bodyFile}`,
				'-w', '%{http_code} %{time_total} %{num_connects}\n', ...Array(n + 1).fill(['-o', '/dev/null', url]).flat()];
			return new Promise((resolve, reject) => {
				const c = spawn('curl', ['--fail-early', '--show-error', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
				let out = '';
				c.stdout.on('data', (d) => (out += d));
				// 'close', not 'exit': stdout may still hold data when the process has exited
				c.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`curl exited ${code}`))));
			});
		});
		const lat = [];
		let busiest = 0;
		let connects = 0;
		for (const out of await Promise.all(runs)) {
			const rows = out.trim().split('\n').map((l) => l.split(' '));
			if (rows.length !== Math.floor(N / C) + 1 && rows.length !== Math.floor(N / C) + 2)
				throw new Error(`curl answered ${rows.length} requests:\n${out.slice(0, 500)}`);
			let sum = 0;
			for (const [k, [code, t, nc]] of rows.entries()) {
				if (code !== '200') throw new Error(`status ${code}`);
				connects += Number(nc);
				if (k === 0) continue; // the warm-up: TLS handshake
				lat.push(Number(t) * 1000);
				sum += Number(t) * 1000;
			}
			busiest = Math.max(busiest, sum);
		}
		lat.sort((a, b) => a - b);
		return { lat, wall: busiest, connects };
	};
	const pct = (v, p) => v[Math.min(v.length - 1, Math.floor((p / 100) * v.length))];
	const status = (pid) => Object.fromEntries(fs.readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')
		.filter((l) => /^Vm(RSS|HWM):/.test(l)).map((l) => l.split(/:\s+/)));
	const cpuMs = (pid) => {
		const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
		return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime + stime, USER_HZ 100
	};
	const waitLine = (proc, re) => new Promise((resolve, reject) => {
		let buf = '';
		const on = (d) => {
			buf += d.toString();
			const m = buf.match(re);
			if (m) {
				proc.stdout?.off('data', on);
				proc.stderr?.off('data', on);
				resolve(m);
			}
		};
		proc.stdout?.on('data', on);
		proc.stderr?.on('data', on);
		proc.on('exit', (code) => reject(new Error(`exited ${code}: ${buf}`)));
	});

	// rdmak webhook, its log straight into a file (as a container runtime drains a pod's stderr):
	// through a pipe to this process, a busy event loop here would stall the server's writes
	const logPath = path.join(root, 'webhook.log');
	const logFd = fs.openSync(logPath, 'w');
	const wh = spawn(RDMAK, ['webhook', '--config', path.join(TOP, 'tests', 'fixtures', 'webhook', 'config.yaml'), '--tls-cert', cert,
		'--tls-key', key, '--listen', '127.0.0.1:0', '--workers', arg('--workers', '2')], { stdio: ['ignore', 'ignore', logFd] });
	children.push(wh);
	let whPort = null;
	for (let i = 0; i < 300 && !whPort; i++) {
		whPort = fs.readFileSync(logPath, 'utf8').match(/listening on https:\/\/127\.0\.0\.1:(\d+)/)?.[1];
		if (!whPort) await new Promise((r) => setTimeout(r, 100));
	}
	if (!whPort) throw new Error(`rdmak webhook did not start:\n${fs.readFileSync(logPath, 'utf8')}`);
	const first = await fetchAnswer(Number(whPort));
	const rssBefore = status(wh.pid);
	const cpu0 = cpuMs(wh.pid);
	const r = await load(Number(whPort));
	const cpu1 = cpuMs(wh.pid);
	const rssAfter = status(wh.pid);

	// the peer, answering rdmak's own answer
	const answerFile = path.join(root, 'answer.json');
	fs.writeFileSync(answerFile, JSON.stringify(first));
	const peer = spawn(process.execPath, [fileURLToPath(import.meta.url), '--peer', cert, key, answerFile], { stdio: ['ignore', 'pipe', 'inherit'] });
	children.push(peer);
	const [, peerPort] = await waitLine(peer, /^(\d+)\n/);
	const p = await load(Number(peerPort));

	const ms = (x) => `${x.toFixed(2)} ms`;
	const rps = (x) => (N / (x.wall / 1000)).toFixed(0);
	console.log(`rdmak webhook: ${N} AdmissionReviews (seed 004 pod, 17-op patch) from ${C} HTTPS keep-alive clients (curl, ${r.connects} connections)`);
	console.log(`  rdmak:     ${rps(r)} reviews/s, p50 ${ms(pct(r.lat, 50))}, p99 ${ms(pct(r.lat, 99))}, max ${ms(r.lat.at(-1))}`);
	console.log(`  node peer: ${rps(p)} reviews/s, p50 ${ms(pct(p.lat, 50))}, p99 ${ms(pct(p.lat, 99))}, max ${ms(p.lat.at(-1))}`);
	console.log(`  rdmak/peer: throughput ${(rps(r) / rps(p)).toFixed(2)}x, p50 ${(pct(r.lat, 50) / pct(p.lat, 50)).toFixed(2)}x, p99 ${(pct(r.lat, 99) / pct(p.lat, 99)).toFixed(2)}x (lower latency is better)`);
	console.log(`  rdmak RSS: ${rssBefore.VmRSS} before, ${rssAfter.VmRSS} after (peak ${rssAfter.VmHWM}); CPU ${((cpu1 - cpu0) / N * 1000).toFixed(0)} us per review (utime+stime over the run)`);
	console.log(`  p99 target <= 5 ms: ${pct(r.lat, 99) <= 5 ? 'met' : 'NOT met'} on this machine (${os.cpus().length} cores, client and server on it)`);
	wh.kill('SIGTERM');
	peer.kill('SIGTERM');
	await new Promise((res) => wh.on('exit', res));
	fs.closeSync(logFd);
	const log = fs.readFileSync(logPath, 'utf8');
	const served = log.match(/served .*/);
	if (served) console.log(`  ${served[0]}`);
}
