// SPDX-License-Identifier: Apache-2.0
// `rdmak plugin` while it rebuilds its pools (issue 11): a rescan (a full hardware load, seconds
// on a 1016-VF node) runs beside the health poll, so a port that goes Down during one is reported
// before it ends. The test holds each rescan open with RDMAK_TEST_RESCAN_GATE (a file the finished
// build waits for; read by the test build only, tests/seams/rescan_gate.c) instead of depending
// on how long a load takes: before the builder thread, the loop did the build itself and could
// poll nothing until it ended.
// Then: the daemon names a port file it cannot parse once per build that first meets it (start,
// rescan, reload), as --dry-run does, and not again at every periodic rescan.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { Kubelet, TOP, withTimeout } from './kubelet.mjs';

const RDMAK = process.env.RDMAK || path.join(TOP, 'build', 'rdmak');
// the test build (Makefile: tests/seams/), the same rdmak with the rescan gate
const SEAMED = path.join(process.env.BUILD || path.join(TOP, 'build'), 'tests', 'seams', 'rdmak');
const NODES = process.env.NODES || path.join(TOP, 'examples', 'nodes');
const EXCL = 'nvidia.com/hostdev';
const cleanup = [];

after(async () => {
	for (const f of cleanup.reverse()) await f();
});

// A private copy of a100-ib-bond's sysfs, a kubelet and a plugin over them.
async function setUp(cfg, env = {}, prepare = () => {}, bin = RDMAK) {
	const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-rescan-'));
	const sys = path.join(root, 'sys');
	fs.cpSync(path.join(NODES, 'a100-ib-bond', 'sys'), sys, { recursive: true, verbatimSymlinks: true });
	fs.writeFileSync(path.join(root, 'config.json'), JSON.stringify(cfg));
	const port = (ibdev) => fs.realpathSync(path.join(sys, 'class/infiniband', ibdev, 'ports/1'));
	prepare(port);
	const kubelet = new Kubelet(path.join(root, 'kubelet'));
	await kubelet.start();
	const proc = spawn(
		bin,
		['plugin', '--kubelet-dir', path.join(root, 'kubelet'), '--sysfs', sys, '--devfs', path.join(NODES, 'a100-ib-bond', 'dev'),
			'--config', path.join(root, 'config.json'), '--device-info-dir', path.join(root, 'devinfo'), '--health-interval', '50'],
		{ stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } },
	);
	let err = '';
	proc.stderr.on('data', (d) => (err += d));
	const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
	cleanup.push(async () => {
		if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
		await kubelet.stop().catch(() => {});
		fs.rmSync(root, { recursive: true, force: true });
	});
	const stderr = () => err;
	const waitLog = (re, ms, from = 0) => {
		let t;
		const found = new Promise((resolve) => {
			t = setInterval(() => {
				const m = err.slice(from).match(re);
				if (m) {
					if (m.index !== undefined) m.index += from;
					resolve(m);
				}
			}, 10);
		});
		return withTimeout(found, ms, `log ${re}`)
			.catch((e) => {
				throw new Error(`${e.message}\n${err.split('\n').slice(-10).join('\n')}`);
			})
			.finally(() => clearInterval(t));
	};
	return { root, sys, kubelet, proc, stderr, exited, waitLog, port };
}

const hostdev = { resourcePrefix: 'nvidia.com', resourceName: 'hostdev', selectors: { vendors: ['15b3'], isRdma: true } };
const healthOf = (list, id) => list.find((d) => d.ID === id)?.health;

test('a port Down during a rescan is reported before the rescan ends, and the rescan keeps it', { timeout: 30000 }, async () => {
	const gate = path.join(os.tmpdir(), `rdmak-rescan-gate-${process.pid}`);
	fs.rmSync(gate, { force: true });
	cleanup.push(() => fs.rmSync(gate, { force: true }));
	const s = await setUp({ periodicUpdateInterval: 1, resourceList: [hostdev] }, { RDMAK_TEST_RESCAN_GATE: gate }, () => {}, SEAMED);
	await s.kubelet.waitRegistration(1, 10000);
	const ex = s.kubelet.registrations[0].plugin;
	await ex.waitList((l) => healthOf(l, '0000:c6:00.0') === 'Healthy', 5000);

	// the first periodic rescan starts, and its finished build waits at the gate
	const at = (await s.waitLog(/rescanning the hardware: periodic update\n/, 10000)).index;
	const from = ex.lists.length;
	fs.writeFileSync(path.join(s.port('mlx5_1'), 'state'), '1: DOWN\n');
	await ex.waitList((l) => healthOf(l, '0000:c6:00.0') === 'Unhealthy', 10000, from);
	assert.doesNotMatch(s.stderr().slice(at), /rescan done/, 'reported while the rescan was still in progress');
	await s.waitLog(/0000:c6:00\.0 is Unhealthy: mlx5_1 port 1 DOWN/, 5000);

	// the rescan's set read the port before it went Down: it is applied with the state of now
	const applied = ex.lists.length;
	fs.writeFileSync(gate, '');
	await s.waitLog(/rescan done: periodic update\n/, 10000, at);
	await s.waitLog(/rescanning the hardware: periodic update\n(.|\n)*rescan done/, 10000, at + 1);
	assert.ok(ex.lists.slice(applied).every((l) => healthOf(l, '0000:c6:00.0') === 'Unhealthy'), 'never Healthy again');

	// SIGTERM while a build waits at the gate: the daemon waits for the builder (it is still
	// there while the gate is shut), then joins it and exits 0 (under ASan, with nothing leaked)
	fs.rmSync(gate);
	const n = s.stderr().length;
	await s.waitLog(/rescanning the hardware: periodic update\n/, 10000, n);
	s.proc.kill('SIGTERM');
	await s.waitLog(/waiting for the build in progress \(periodic update\) to finish/, 10000, n);
	assert.equal(s.proc.exitCode, null, 'still waiting for the build held at the gate');
	fs.writeFileSync(gate, '');
	const { code } = await withTimeout(s.exited, 10000, 'the plugin to exit');
	assert.equal(code, 0, s.stderr().split('\n').slice(-10).join('\n'));
	assert.doesNotMatch(s.stderr(), /runtime error|AddressSanitizer|LeakSanitizer/);
});

test('a port file it cannot parse is logged once per build that first meets it', { timeout: 30000 }, async () => {
	const s = await setUp({ periodicUpdateInterval: 1, resourceList: [hostdev] }, {}, (port) =>
		fs.writeFileSync(path.join(port('mlx5_1'), 'phys_state'), 'xyz\n'),
	);
	const broken = path.join(s.port('mlx5_1'), 'phys_state');
	const shown = path.join(s.sys, 'class/infiniband/mlx5_1/ports/1/phys_state');
	await s.kubelet.waitRegistration(1, 10000);
	const line = new RegExp(`warning: unexpected content "xyz" in ${shown.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\(shown as unknown\\)`, 'g');
	assert.equal(s.stderr().match(line)?.length, 1, `at start-up\n${s.stderr()}`);

	// two periodic rescans meet the same file: nothing new to say
	let n = s.stderr().length;
	await s.waitLog(/rescan done(.|\n)*rescan done/, 10000, n);
	assert.equal(s.stderr().match(line).length, 1, 'not again at each rescan');

	// a new fault (state emptied) is named at the rescan that meets it; the old one is not repeated
	n = s.stderr().length;
	fs.writeFileSync(path.join(s.port('mlx5_0'), 'state'), '');
	await s.waitLog(/warning: empty \S+\/class\/infiniband\/mlx5_0\/ports\/1\/state \(shown as unknown\)/, 10000, n);
	assert.equal(s.stderr().match(line).length, 1);

	// repaired, then broken again: named again
	fs.writeFileSync(broken, '5: LinkUp\n');
	n = s.stderr().length;
	await s.waitLog(/rescan done(.|\n)*rescan done/, 10000, n);
	fs.writeFileSync(broken, 'xyz\n');
	await s.waitLog(line, 10000, s.stderr().length);
	assert.equal(s.stderr().match(line).length, 2);

	// a reload (SIGHUP) builds too: the file is still broken and was logged by the last build
	n = s.stderr().length;
	s.proc.kill('SIGHUP');
	await s.waitLog(/SIGHUP: config \S+ reloaded/, 10000, n);
	assert.equal(s.stderr().match(line).length, 2);
	s.proc.kill('SIGTERM');
	assert.equal((await withTimeout(s.exited, 10000, 'the plugin to exit')).code, 0);
	assert.doesNotMatch(s.stderr(), /runtime error|AddressSanitizer|LeakSanitizer/);
});
