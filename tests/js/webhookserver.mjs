// SPDX-License-Identifier: Apache-2.0
// Test helpers for `rdmak webhook`, playing the API server's side with independent parts: a test CA
// and certificates made by openssl at run time, Node's `https` verifying the server certificate
// against that CA, npm fast-json-patch applying the returned patch, kubernetes-models validating
// the result as a Pod. Nothing here shares code with the C side.
//
// API
//   const pki = makePki(dir)            CA + server certificate (SAN localhost, 127.0.0.1):
//                                       { ca, cert, key } paths; pki.issue(name) writes another
//                                       pair signed by the same CA: { cert, key, serial }
//   const wh = await startWebhook({ config, cert, key, args })
//                                       rdmak webhook on 127.0.0.1 port 0; resolves when it logs
//                                       "listening on"; { port, proc, logs (lines), stop() }
//   await wh.waitLog(regex, ms)         the first log line (from the start) matching regex
//   review(pod, { uid, namespace, operation, kind })   an admission.k8s.io/v1 AdmissionReview
//   await post(port, ca, body, opts)    POST /mutate: { status, body, json, peerCert } (opts.agent,
//                                       opts.headers, opts.path, opts.method, opts.servername:
//                                       the name the certificate must carry, default localhost)
//   applyReviewPatch(pod, response)     the pod with response.patch applied (fast-json-patch,
//                                       validating every operation); the pod itself if no patch
//   validPod(obj)                       kubernetes-models' Pod validation (throws naming the path)
//   loadYaml(name)                      a fixture of tests/fixtures/webhook as a JS object
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import jsonpatch from 'fast-json-patch';
import { Pod } from 'kubernetes-models/v1';
import YAML from 'yaml';

export const TOP = process.env.TOP || path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const RDMAK = process.env.RDMAK || path.join(TOP, 'build', 'rdmak');
export const FIXTURES = path.join(TOP, 'tests', 'fixtures', 'webhook');

export const loadYaml = (name) => YAML.parse(fs.readFileSync(path.join(FIXTURES, name), 'utf8'));

const openssl = (args) => execFileSync('openssl', args, { stdio: ['ignore', 'pipe', 'pipe'] });

export function makePki(dir) {
	fs.mkdirSync(dir, { recursive: true });
	const ca = path.join(dir, 'ca.crt');
	const caKey = path.join(dir, 'ca.key');
	openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', caKey,
		'-out', ca, '-days', '2', '-subj', '/CN=rdmak-test-ca']);
	let n = 0;
	const issue = (name = `pair${++n}`) => {
		const key = path.join(dir, `${name}.key`);
		const csr = path.join(dir, `${name}.csr`);
		const cert = path.join(dir, `${name}.crt`);
		const ext = path.join(dir, `${name}.ext`);
		fs.writeFileSync(ext, 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
		openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', csr,
			'-subj', `/CN=rdmak-webhook-${name}`]);
		openssl(['x509', '-req', '-in', csr, '-CA', ca, '-CAkey', caKey, '-CAcreateserial', '-out', cert, '-days', '2',
			'-extfile', ext]);
		const serial = openssl(['x509', '-in', cert, '-noout', '-serial']).toString().trim().replace(/^serial=/, '');
		return { cert, key, serial };
	};
	const first = issue('server');
	return { ca, ...first, issue };
}

export async function startWebhook({ config, cert, key, args = [], env = {} }) {
	const proc = spawn(RDMAK, ['webhook', '--config', config, '--tls-cert', cert, '--tls-key', key,
		'--listen', '127.0.0.1:0', ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
	const logs = [];
	const waiters = [];
	let buf = '';
	let exited = null;
	proc.stderr.on('data', (d) => {
		buf += d.toString();
		let i;
		while ((i = buf.indexOf('\n')) >= 0) {
			const line = buf.slice(0, i);
			buf = buf.slice(i + 1);
			logs.push(line);
			for (const w of waiters.slice())
				if (w.re.test(line)) {
					waiters.splice(waiters.indexOf(w), 1);
					w.resolve(line);
				}
		}
	});
	const done = new Promise((resolve) => proc.on('exit', (code, signal) => {
		exited = { code, signal };
		for (const w of waiters.splice(0))
			w.reject(new Error(`rdmak webhook exited (${code ?? signal}) while waiting for ${w.re}\n${logs.join('\n')}`));
		resolve(exited);
	}));
	const waitLog = (re, ms = 20000) => {
		const seen = logs.find((l) => re.test(l));
		if (seen) return Promise.resolve(seen);
		if (exited) return Promise.reject(new Error(`rdmak webhook exited; no ${re} in:\n${logs.join('\n')}`));
		return new Promise((resolve, reject) => {
			const w = { re, resolve, reject };
			waiters.push(w);
			setTimeout(() => {
				const i = waiters.indexOf(w);
				if (i >= 0) {
					waiters.splice(i, 1);
					reject(new Error(`no log line ${re} within ${ms} ms:\n${logs.join('\n')}`));
				}
			}, ms).unref();
		});
	};
	const line = await waitLog(/listening on https:\/\/127\.0\.0\.1:\d+/);
	const port = Number(line.match(/https:\/\/127\.0\.0\.1:(\d+)/)[1]); // a text or a JSON line
	const stop = async (signal = 'SIGTERM') => {
		if (!exited) proc.kill(signal);
		return done;
	};
	return { proc, port, logs, waitLog, stop, done };
}

let uidN = 0;
export function review(pod, { uid = `uid-${process.pid}-${++uidN}`, namespace = 'default', operation = 'CREATE',
	kind = { group: '', version: 'v1', kind: 'Pod' }, resource = { group: '', version: 'v1', resource: 'pods' } } = {}) {
	return {
		apiVersion: 'admission.k8s.io/v1',
		kind: 'AdmissionReview',
		request: {
			uid, kind, resource, requestKind: kind, requestResource: resource,
			name: pod?.metadata?.name ?? '', namespace, operation,
			userInfo: { username: 'system:serviceaccount:kube-system:daemon-set-controller', groups: ['system:serviceaccounts'] },
			object: pod, oldObject: null, dryRun: false,
			options: { apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions' },
		},
	};
}

export function post(port, ca, body, { agent, headers = {}, path: p = '/mutate', method = 'POST', timeout = 20000, servername = 'localhost' } = {}) {
	const data = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
	return new Promise((resolve, reject) => {
		const req = https.request({
			host: '127.0.0.1', port, path: p, method, ca: fs.readFileSync(ca), servername, agent,
			headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data), ...headers },
		}, (res) => {
			const peerCert = res.socket.getPeerCertificate?.();
			const chunks = [];
			res.on('data', (c) => chunks.push(c));
			res.on('end', () => {
				const text = Buffer.concat(chunks).toString();
				let json = null;
				try { json = JSON.parse(text); } catch { /* text answers */ }
				resolve({ status: res.statusCode, headers: res.headers, body: text, json, peerCert });
			});
			res.on('error', reject);
		});
		req.setTimeout(timeout, () => req.destroy(new Error(`no answer within ${timeout} ms`)));
		req.on('error', reject);
		req.end(method === 'GET' ? undefined : data);
	});
}

export function applyReviewPatch(pod, response) {
	if (!response.patch) return structuredClone(pod);
	if (response.patchType !== 'JSONPatch') throw new Error(`patchType ${response.patchType}`);
	const ops = JSON.parse(Buffer.from(response.patch, 'base64').toString());
	// validate=true: every op checked against the document (a path that does not exist fails)
	return jsonpatch.applyPatch(structuredClone(pod), ops, true, false).newDocument;
}

export function validPod(obj) {
	const p = new Pod(obj);
	p.validate();
	return p;
}
