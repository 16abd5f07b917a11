// SPDX-License-Identifier: Apache-2.0
// `rdmak plugin --wait-for FILE` against the stand-in kubelet: with the kubelet up, the plugin
// registers nothing (and so advertises nothing) until the vf ready marker appears; it reads the
// node only after (a device that appears before the marker is advertised); without the marker it
// gives up after --wait-timeout with exit 1 and a log line that names the file.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { Kubelet, TOP, withTimeout } from './kubelet.mjs';

const RDMAK = process.env.RDMAK || path.join(TOP, 'build', 'rdmak');
const NODES = process.env.NODES || path.join(TOP, 'examples', 'nodes');
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-plugin-wait-'));
const kdir = path.join(root, 'kubelet');
const node = path.join(root, 'node');
const cfgPath = path.join(root, 'config.json');
const marker = path.join(root, 'run', 'rdmak', 'vf', 'ready'); // its folder does not exist yet
const EXCL = 'nvidia.com/hostdev';
const procs = [];
let kubelet;

fs.cpSync(path.join(NODES, 'a100-ib-bond', 'sys'), path.join(node, 'sys'), { recursive: true, verbatimSymlinks: true });
fs.writeFileSync(cfgPath, JSON.stringify({ resourceList: [{ resourcePrefix: 'nvidia.com', resourceName: 'hostdev', selectors: { vendors: ['15b3'], isRdma: true } }] }));

function startPlugin(args) {
	const proc = spawn(
		RDMAK,
		['plugin', '--kubelet-dir', kdir, '--sysfs', path.join(node, 'sys'), '--devfs', path.join(NODES, 'a100-ib-bond', 'dev'), '--config', cfgPath, '--device-info-dir', path.join(root, 'devinfo'), ...args],
		{ stdio: ['ignore', 'pipe', 'pipe'] },
	);
	let err = '';
	proc.stderr.on('data', (d) => (err += d));
	const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
	procs.push(proc);
	return { proc, stderr: () => err, exited };
}

const waitLog = (p, re, ms) =>
	withTimeout(
		new Promise((resolve) => {
			const t = setInterval(() => {
				const m = p.stderr().match(re);
				if (m) {
					clearInterval(t);
					resolve(m);
				}
			}, 20);
		}),
		ms,
		`log ${re}`,
	);

after(async () => {
	for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
	if (kubelet) await kubelet.stop().catch(() => {});
	fs.rmSync(root, { recursive: true, force: true });
});

test('advertises nothing until the marker appears, then reads the node as it is then', { timeout: 20000 }, async () => {
	kubelet = new Kubelet(kdir);
	await kubelet.start();
	// what `rdmak vf apply` changes while the plugin waits: a PCI function that is not there when
	// the plugin starts (one of the sample node's mlx5 functions, hidden) and is when the marker is
	const bus = path.join(node, 'sys', 'bus', 'pci', 'devices');
	fs.renameSync(path.join(bus, '0000:e1:00.0'), path.join(root, 'e1-link'));
	const p = startPlugin(['--wait-for', marker, '--wait-timeout', '30']);
	await waitLog(p, new RegExp(`waiting for ${marker.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(the vf ready marker`), 5000);
	// well past the ~100 ms a plugin takes to register here
	await new Promise((r) => setTimeout(r, 1500));
	assert.equal(kubelet.registrations.length, 0, 'no registration while the marker is missing');
	assert.deepEqual(fs.readdirSync(path.join(kdir, 'device-plugins')).filter((f) => f.startsWith('rdmak-')), [], 'no plugin socket either');
	assert.equal(p.proc.exitCode, null, 'still waiting');
	fs.renameSync(path.join(root, 'e1-link'), path.join(bus, '0000:e1:00.0'));
	fs.mkdirSync(path.dirname(marker), { recursive: true });
	fs.writeFileSync(marker, '');
	await waitLog(p, /ready marker|is there after/, 5000);
	await kubelet.waitRegistration(1, 5000);
	assert.equal(kubelet.registrations[0].req.resource_name, EXCL);
	const list = await kubelet.registrations[0].plugin.waitList(() => true, 5000);
	assert.deepEqual(list.map((d) => d.ID).sort(), ['0000:46:00.0', '0000:c6:00.0', '0000:e1:00.0'], 'the node as it is when the marker appears');
	p.proc.kill('SIGTERM');
	assert.equal((await p.exited).code, 0);
});

test('no marker within --wait-timeout: exit 1, nothing registered, the log names the file', { timeout: 15000 }, async () => {
	const other = path.join(root, 'never');
	const before = kubelet.registrations.length;
	const p = startPlugin(['--wait-for', other, '--wait-timeout', '1']);
	const { code } = await withTimeout(p.exited, 10000, 'the plugin to give up');
	assert.equal(code, 1);
	assert.match(p.stderr(), new RegExp(`${other} did not appear within 1 s: exiting without advertising`));
	assert.equal(kubelet.registrations.length, before);
});

test('--wait-for goes without --dry-run; --wait-timeout is checked', { timeout: 10000 }, async () => {
	for (const [args, re] of [
		[['--dry-run', '--wait-for', marker], /--wait-for FILE goes without --dry-run/],
		[['--wait-for', marker, '--wait-timeout', '0'], /--wait-timeout: expected 1 to 86400 s, got '0'/],
	]) {
		const p = startPlugin(args);
		const { code } = await withTimeout(p.exited, 5000, 'usage exit');
		assert.equal(code, 2);
		assert.match(p.stderr(), re);
	}
});
