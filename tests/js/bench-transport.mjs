// SPDX-License-Identifier: Apache-2.0
// Transport benchmark (not part of the suite; for `make bench`): idle RSS of kl_testserver once
// registered with ListAndWatch open, then the Allocate round trip seen from the stand-in kubelet
// over N sequential calls. Prints TAP with the figures as comments.
//   node tests/js/bench-transport.mjs [N=10000]      (binary: see testserver.mjs; use a build
//                                                     without sanitizers for meaningful figures)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Kubelet } from './kubelet.mjs';
import { percentile, startTestServer, TESTSERVER } from './testserver.mjs';

const N = Number(process.argv[2] || 10000);
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-bench-'));
let n = 0;
const ok = (cond, what) => console.log(`${cond ? 'ok' : 'not ok'} ${++n} - ${what}`);

function status(pid) {
	const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
	const kib = (k) => Number((s.match(new RegExp(`^${k}:\\s+(\\d+)`, 'm')) || [])[1]);
	return { VmRSS: kib('VmRSS'), RssAnon: kib('RssAnon'), RssFile: kib('RssFile'), Threads: kib('Threads') };
}

console.log('TAP version 13');
console.log(`# binary ${TESTSERVER}`);
const kubelet = new Kubelet(root);
await kubelet.start();
const server = await startTestServer(root);
try {
	const reg = await kubelet.waitRegistration(1, 5000);
	await reg.plugin.waitList(() => true, 5000);
	await new Promise((r) => setTimeout(r, 500)); // let start-up garbage settle before sampling
	const idle = status(server.pid);
	console.log(
		`# idle VmRSS ${idle.VmRSS} KiB (RssAnon ${idle.RssAnon} KiB, RssFile ${idle.RssFile} KiB), ${idle.Threads} threads`,
	);
	ok(idle.VmRSS > 0, 'idle RSS measured');

	const lat = new Float64Array(N);
	for (let i = 0; i < N; i++) {
		const t0 = performance.now();
		await reg.plugin.allocate([[`dev${i % 4}`]]);
		lat[i] = performance.now() - t0;
	}
	lat.sort();
	const p50 = percentile(lat, 50);
	const p99 = percentile(lat, 99);
	console.log(`# Allocate round trip over ${N} calls: p50 ${(p50 * 1000).toFixed(0)} us, p99 ${(p99 * 1000).toFixed(0)} us, max ${(lat[N - 1] * 1000).toFixed(0)} us`);
	ok(p50 > 0, `Allocate x${N}`);
	const after = status(server.pid);
	console.log(`# VmRSS after the calls ${after.VmRSS} KiB (RssAnon ${after.RssAnon} KiB), ${after.Threads} threads`);
	ok(true, 'RSS after load measured');
} finally {
	const r = await server.stop();
	ok(r.code === 0, 'server exited cleanly');
	await kubelet.stop();
	fs.rmSync(root, { recursive: true, force: true });
	console.log(`1..${n}`);
}
