#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Benchmarks of `rdmak plugin` on the cx7-rail-1016vf sample node (8 NDR PFs, 1016 VFs), against
// the stand-in kubelet of tests/js (run from anywhere; needs tests/js's node_modules):
//   - idle RSS (VmRSS, VmHWM) and idle CPU (the health poll) after start-up;
//   - Allocate round-trip latency p50/p99 over 10 000 calls (exclusive pool, one VF each;
//     and the shared pool), measured at the stand-in kubelet, so gRPC on both sides included;
//   - port-Down-to-Unhealthy latency: a VF's port state written in a copy of the node's sysfs,
//     until the kubelet's ListAndWatch stream shows it Unhealthy (20 samples);
//   - re-registration latency after a kubelet restart (20 restarts; socket folder wiped);
//   - GetPreferredAllocation over 1 000, 10 000 and 100 000 available ids (a shared resource
//     with rdmaHcaMax 100000) and over the 1016 VFs, and Allocate while the 100 000 one runs.
//   node tools/bench-plugin.mjs [--rdmak build/rdmak] [--node examples/nodes/cx7-rail-1016vf]
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const TOP = path.resolve(here, '..');
const { Kubelet, Plugin, api } = await import(path.join(TOP, 'tests', 'js', 'kubelet.mjs'));
const { createRequire } = await import('node:module');
const grpc = createRequire(path.join(TOP, 'tests', 'js', 'package.json'))('@grpc/grpc-js');
const arg = (name, def) => {
	const i = process.argv.indexOf(name);
	return i > 0 ? process.argv[i + 1] : def;
};
const RDMAK = path.resolve(arg('--rdmak', process.env.RDMAK || path.join(TOP, 'build', 'rdmak')));
const NODE = path.resolve(arg('--node', path.join(TOP, 'examples', 'nodes', 'cx7-rail-1016vf')));
const CALLS = Number(arg('--calls', 10000));
const pct = (v, p) => v[Math.min(v.length - 1, Math.floor((p / 100) * v.length))];
const ms = (x) => `${x.toFixed(x < 10 ? 2 : 0)} ms`;
const sleep = (t) => new Promise((r) => setTimeout(r, t));

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-bench-plugin-'));
const kdir = path.join(root, 'kubelet');
const sys = path.join(root, 'sys');
const cfg = path.join(root, 'config.json');
const pfs = ['ibp24s0', 'ibp41s0', 'ibp58s0', 'ibp75s0', 'ibp154s0', 'ibp170s0', 'ibp186s0', 'ibp202s0'];
fs.writeFileSync(
	cfg,
	JSON.stringify({
		configList: [{ resourceName: 'rail', rdmaHcaMax: 64, selectors: { ifNames: pfs }, envs: { NCCL_IB_HCA: '=${hcas}' } }],
		resourceList: [{ resourcePrefix: 'rdmak.io', resourceName: 'rail_vf', selectors: { vendors: ['15b3'], isRdma: true } }],
	}),
);
process.stderr.write(`copying ${NODE}/sys (the port test edits it)...\n`);
execFileSync('cp', ['-a', path.join(NODE, 'sys'), sys]);

const kubelet = new Kubelet(kdir);
await kubelet.start();
const t0 = performance.now();
const proc = spawn(RDMAK, ['plugin', '--kubelet-dir', kdir, '--sysfs', sys, '--devfs', path.join(NODE, 'dev'), '--config', cfg,
	'--device-info-dir', path.join(root, 'devinfo')], { stdio: ['ignore', 'ignore', 'pipe'] });
let log = '';
proc.stderr.on('data', (d) => (log += d));
await kubelet.waitRegistration(2, 30000);
const startMs = performance.now() - t0;
// never leave the plugin behind, whatever fails
process.on('exit', () => {
	if (proc.exitCode === null) proc.kill('SIGKILL');
});
const regOf = (n) => [...kubelet.registrations].reverse().find((r) => r.req.resource_name === n);
const excl = regOf('rdmak.io/rail_vf').plugin;
const shared = regOf('rdma/rail').plugin;
const list = await excl.waitList((l) => l.length === 1016, 10000);

const status = () => Object.fromEntries(fs.readFileSync(`/proc/${proc.pid}/status`, 'utf8').split('\n').map((l) => l.split(/:\s+/)));
const cpu = () => {
	const f = fs.readFileSync(`/proc/${proc.pid}/stat`, 'utf8').split(') ')[1].split(' ');
	return Number(f[11]) + Number(f[12]); // utime + stime, in clock ticks
};
await sleep(3000);
const c0 = cpu();
await sleep(10000);
const idleCpu = ((cpu() - c0) / 100 / 10) * 100; // clock ticks (100/s) over 10 s, in percent of one core
const st = status();
// private memory: anonymous pages (heap, stacks, written library data); library code is shared
const rollup = fs.readFileSync(`/proc/${proc.pid}/smaps_rollup`, 'utf8');
const kB = (k) => Number(rollup.match(new RegExp(`${k}:\\s+(\\d+)`))[1]);
const idlePrivate = { dirty: kB('Private_Dirty'), clean: kB('Private_Clean') };

// Allocate round trips, measured at the stand-in kubelet: rdmak (one VF per call, rotating over
// the pool), and two peers answering rdmak's own answer for one VF with @grpc/grpc-js (the stack
// closest to the Go anchors' that runs here): one in a process of its own, as a device plugin is
// (the like-for-like peer), and one in the client's process, which no request has to wake (a
// floor on a shared CPU rather than a peer). Interleaved in rounds, so that a change in the
// machine's load during the run falls on all three alike; then the shared pool.
const ids = list.map((d) => d.ID);
const canned = await excl.allocate([[ids[0]]]);
const cannedFile = path.join(root, 'canned.json');
fs.writeFileSync(cannedFile, JSON.stringify(canned));
const peerSock = path.join(root, 'peer.sock');
const peer = new grpc.Server();
peer.addService(api.DevicePlugin.service, {
	Allocate: (call, cb) => cb(null, canned),
	GetDevicePluginOptions: (call, cb) => cb(null, {}),
	ListAndWatch: (call) => call.write({ devices: [] }),
	GetPreferredAllocation: (call, cb) => cb(null, { container_responses: [] }),
	PreStartContainer: (call, cb) => cb(null, {}),
});
await new Promise((res, rej) => peer.bindAsync(`unix:${peerSock}`, grpc.ServerCredentials.createInsecure(), (e) => (e ? rej(e) : res())));
const inClient = new Plugin(peerSock);
const ownSock = path.join(root, 'peer-own.sock');
const own = spawn(process.execPath, [path.join(here, 'bench-plugin-peer.mjs'), ownSock, cannedFile], { stdio: ['ignore', 'pipe', 'inherit'] });
process.on('exit', () => {
	if (own.exitCode === null) own.kill('SIGKILL');
});
await new Promise((res) => own.stdout.once('data', res));
const ownClient = new Plugin(ownSock);
const loop = async (client, n, arr) => {
	for (let i = 0; i < n; i++) {
		const a = performance.now();
		await client.allocate([[ids[i % ids.length]]]);
		arr.push(performance.now() - a);
	}
};
const lat = [], olat = [], plat = [];
const ROUNDS = 5;
for (let r = 0; r < ROUNDS; r++) {
	await loop(excl, CALLS / ROUNDS, lat);
	await loop(ownClient, CALLS / ROUNDS, olat);
	await loop(inClient, CALLS / ROUNDS, plat);
}
for (const v of [lat, olat, plat]) v.sort((a, b) => a - b);
inClient.client.close();
peer.forceShutdown();
ownClient.client.close();
own.kill('SIGTERM');
const slat = [];
for (let i = 0; i < CALLS; i++) {
	const a = performance.now();
	await shared.allocate([[String(i % 64)]]);
	slat.push(performance.now() - a);
}
slat.sort((a, b) => a - b);
const st2 = status();

// Port Down -> Unhealthy on the kubelet's stream, then back.
const vfState = (bdf) => {
	const dev = fs.readdirSync(path.join(sys, 'bus/pci/devices', bdf, 'infiniband'))[0];
	return fs.realpathSync(path.join(sys, 'class/infiniband', dev, 'ports/1/state'));
};
const down = [];
for (let i = 0; i < 20; i++) {
	const bdf = ids[(i * 53) % ids.length];
	const f = vfState(bdf);
	await sleep(Math.random() * 300); // not in step with the plugin's poll
	let from = excl.lists.length;
	const a = performance.now();
	fs.writeFileSync(f, '1: DOWN\n');
	await excl.waitList((l) => l.find((d) => d.ID === bdf).health === 'Unhealthy', 3000, from).catch((e) => {
		console.error(`${bdf} (${f}): ${e.message}\n${log.split('\n').slice(-10).join('\n')}`);
		process.exit(1);
	});
	down.push(performance.now() - a);
	from = excl.lists.length;
	fs.writeFileSync(f, '4: ACTIVE\n');
	await excl.waitList((l) => l.find((d) => d.ID === bdf).health === 'Healthy', 3000, from);
}
down.sort((a, b) => a - b);

// The same while the plugin rebuilds its pools: a SIGHUP reload is a full hardware load and pool
// build, as a rescan (periodicUpdateInterval, hot-plug) is. The port goes Down 100 ms into it.
const downBuild = [];
const rebuild = [];
for (let i = 0; i < 5; i++) {
	const bdf = ids[(i * 97 + 11) % ids.length];
	const f = vfState(bdf);
	const n = log.length;
	let from = excl.lists.length;
	const s0 = performance.now();
	proc.kill('SIGHUP');
	await sleep(100);
	const a = performance.now();
	fs.writeFileSync(f, '1: DOWN\n');
	await excl.waitList((l) => l.find((d) => d.ID === bdf).health === 'Unhealthy', 10000, from);
	downBuild.push(performance.now() - a);
	while (!/SIGHUP: config .* reloaded/.test(log.slice(n))) await sleep(5);
	rebuild.push(performance.now() - s0);
	from = excl.lists.length;
	fs.writeFileSync(f, '4: ACTIVE\n');
	await excl.waitList((l) => l.find((d) => d.ID === bdf).health === 'Healthy', 10000, from);
}
downBuild.sort((a, b) => a - b);
rebuild.sort((a, b) => a - b);

// Re-registration after a kubelet restart.
const rereg = [];
for (let i = 0; i < 20; i++) {
	const n = kubelet.registrations.length;
	const at = await kubelet.restart();
	const both = () => new Set(kubelet.registrations.slice(n).map((r) => r.req.resource_name)).size === 2;
	while (!both())
		await kubelet.waitRegistration(kubelet.registrations.length + 1, 5000).catch((e) => {
			console.error(`restart ${i}: ${e.message}\n${log.split('\n').slice(-12).join('\n')}`);
			process.exit(1);
		});
	const firsts = ['rdmak.io/rail_vf', 'rdma/rail'].map((name) => kubelet.registrations.slice(n).find((r) => r.req.resource_name === name).at);
	rereg.push(Math.max(...firsts) - at);
}
rereg.sort((a, b) => a - b);

proc.kill('SIGTERM');
await new Promise((r) => proc.on('exit', r));

// GetPreferredAllocation size sweep, on a plugin of its own: a shared resource of rdmaHcaMax
// 100000 ids (the config's maximum), as the kubelet offers every free id of it.
const bigCfg = path.join(root, 'big.json');
fs.writeFileSync(bigCfg, JSON.stringify({ configList: [{ resourceName: 'big', rdmaHcaMax: 100000, selectors: { ifNames: pfs } }],
	resourceList: [{ resourcePrefix: 'rdmak.io', resourceName: 'rail_vf', selectors: { vendors: ['15b3'], isRdma: true } }] }));
const nreg = kubelet.registrations.length;
const big = spawn(RDMAK, ['plugin', '--kubelet-dir', kdir, '--sysfs', sys, '--devfs', path.join(NODE, 'dev'), '--config', bigCfg,
	'--device-info-dir', path.join(root, 'devinfo')], { stdio: ['ignore', 'ignore', 'pipe'] });
big.stderr.on('data', (d) => (log += d));
process.on('exit', () => {
	if (big.exitCode === null) big.kill('SIGKILL');
});
await kubelet.waitRegistration(nreg + 2, 30000);
const bigReg = [...kubelet.registrations].reverse().find((r) => r.req.resource_name === 'rdma/big').plugin;
const vfReg = [...kubelet.registrations].reverse().find((r) => r.req.resource_name === 'rdmak.io/rail_vf').plugin;
const bigIds = (await bigReg.waitList((l) => l.length === 100000, 30000)).map((d) => d.ID);
const sweep = [];
const timePreferred = async (client, available, reps) => {
	const t = [];
	for (let i = 0; i < reps; i++) {
		const a = performance.now();
		const r = await client.preferred([{ available, mustInclude: [available[available.length >> 1]], size: 8 }], 120000);
		t.push(performance.now() - a);
		if (r.container_responses[0].deviceIDs.length !== 8) throw new Error('preferred: not 8 ids');
	}
	return t.sort((a, b) => a - b)[t.length >> 1];
};
for (const n of [1000, 10000, 100000]) sweep.push([`${n} shared ids`, await timePreferred(bigReg, bigIds.slice(0, n), n === 100000 ? 5 : 20)]);
sweep.push([`${ids.length} VFs`, await timePreferred(vfReg, ids, 20)]);
// Allocate while a 100000-id preferred call is in progress (answered on another thread)
const baseA = [];
for (let i = 0; i < 50; i++) {
	const a = performance.now();
	await vfReg.allocate([[ids[i]]]);
	baseA.push(performance.now() - a);
}
let prefBusy = true;
const prefP = bigReg.preferred([{ available: bigIds, size: 8 }], 120000).finally(() => (prefBusy = false));
await sleep(5); // let it reach the plugin
const duringA = [];
for (let i = 0; prefBusy && i < 50; i++) {
	const a = performance.now();
	await vfReg.allocate([[ids[i]]]);
	if (prefBusy) duringA.push(performance.now() - a);
}
await prefP;
baseA.sort((a, b) => a - b);
duringA.sort((a, b) => a - b);
big.kill('SIGTERM');
await new Promise((r) => big.on('exit', r));
await kubelet.stop();
fs.rmSync(root, { recursive: true, force: true });

console.log(`rdmak plugin on ${path.basename(NODE)}: ${ids.length} exclusive VFs + a shared pool over ${pfs.length} PFs`);
console.log(`  start-up to both registered:    ${ms(startMs)}`);
console.log(`  idle RSS:                       ${st.VmRSS} (peak ${st.VmHWM}); after ${3 * CALLS} Allocates: ${st2.VmRSS}`);
console.log(`  idle private memory:            ${idlePrivate.dirty + idlePrivate.clean} kB (smaps_rollup Private_Dirty ${idlePrivate.dirty} + Private_Clean ${idlePrivate.clean}; RssAnon ${st.RssAnon}; the rest is shared library code)`);
console.log(`  idle CPU (health poll, 250 ms): ${idleCpu.toFixed(1)}% of one core`);
console.log(`  Allocate, 1 VF (${CALLS} calls):  p50 ${ms(pct(lat, 50))}, p99 ${ms(pct(lat, 99))}, max ${ms(lat[lat.length - 1])}`);
console.log(`  Allocate, grpc-js peer in its own process (${CALLS}): p50 ${ms(pct(olat, 50))}, p99 ${ms(pct(olat, 99))}  -> rdmak/peer p50 ${(pct(lat, 50) / pct(olat, 50)).toFixed(2)}x, p99 ${(pct(lat, 99) / pct(olat, 99)).toFixed(2)}x`);
console.log(`  Allocate, grpc-js peer in the client's process (${CALLS}, no process to wake): p50 ${ms(pct(plat, 50))}, p99 ${ms(pct(plat, 99))}  -> rdmak/it p50 ${(pct(lat, 50) / pct(plat, 50)).toFixed(2)}x, p99 ${(pct(lat, 99) / pct(plat, 99)).toFixed(2)}x`);
console.log(`  Allocate, shared (${CALLS} calls): p50 ${ms(pct(slat, 50))}, p99 ${ms(pct(slat, 99))}, max ${ms(slat[slat.length - 1])}`);
console.log(`  port Down -> Unhealthy (20):    p50 ${ms(pct(down, 50))}, max ${ms(down[down.length - 1])} (ListAndWatch at the kubelet)`);
console.log(`  port Down during a rebuild (5):  p50 ${ms(pct(downBuild, 50))}, max ${ms(downBuild[downBuild.length - 1])} (Down 100 ms after a SIGHUP; the rebuild took p50 ${ms(pct(rebuild, 50))})`);
console.log(`  re-registration after restart:  p50 ${ms(pct(rereg, 50))}, max ${ms(rereg[rereg.length - 1])} (20 restarts)`);
console.log(`  GetPreferredAllocation, size 8 (median round trip): ${sweep.map(([what, t]) => `${what} ${ms(t)}`).join(', ')}`);
console.log(`  Allocate during a 100000-id GetPreferredAllocation: ${duringA.length ? `p50 ${ms(pct(duringA, 50))}, max ${ms(duringA[duringA.length - 1])} (${duringA.length} calls)` : 'none finished before it (it was too quick to overlap)'}; alone p50 ${ms(pct(baseA, 50))}`);
if (/runtime error|AddressSanitizer/.test(log)) console.log(log);
process.exit(0);
