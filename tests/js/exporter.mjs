// SPDX-License-Identifier: Apache-2.0
// `rdmak exporter` for the tests that check its series (exporter_pods, exporter_series): one
// scrape written by --once, a served exporter on a port the kernel picks (read from its log), a
// scrape of it, and the text format parsed into series.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { TOP } from './kubelet.mjs';

export const RDMAK = process.env.RDMAK || path.join(TOP, 'build', 'rdmak');
// the sample node both tests run on
export const SAMPLE = path.join(process.env.NODES || path.join(TOP, 'examples', 'nodes'), 'cx5-roce-sriov');

// series NAME{labels} value -> { name, labels (an object), value }
export function parse(text) {
	const out = [];
	for (const line of text.split('\n')) {
		const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/);
		if (!m) continue;
		const labels = {};
		for (const l of (m[2] || '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
		out.push({ name: m[1], labels, value: m[3] });
	}
	return out;
}

// the series named name (any name when null) whose labels include labels
export const find = (series, name, labels) =>
	series.filter((s) => (!name || s.name === name) && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

// `rdmak exporter --once` on the node at root: { code, out, err } (not spawnSync: a stand-in
// kubelet answers from this process's event loop)
export function once(root, args) {
	return new Promise((resolve) => {
		const p = spawn(RDMAK, ['exporter', '--once', '--root', root, ...args]);
		let out = '', err = '';
		p.stdout.on('data', (d) => (out += d));
		p.stderr.on('data', (d) => (err += d));
		p.on('exit', (code) => resolve({ code, out, err }));
	});
}

const served = [];

// `rdmak exporter` serving the node at root: { p, port, log() }; killExporters() ends them all
export async function serve(root, args) {
	const p = spawn(RDMAK, ['exporter', '--listen', '127.0.0.1:0', '--root', root, ...args]);
	served.push(p);
	let err = '';
	p.stderr.on('data', (d) => (err += d));
	for (let i = 0; i < 200; i++) {
		const m = err.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
		if (m) return { p, port: Number(m[1]), log: () => err };
		await new Promise((r) => setTimeout(r, 50));
	}
	throw new Error(`exporter did not start: ${err}`);
}

export function killExporters() {
	for (const p of served) p.kill('SIGKILL');
}

// one scrape of /metrics: { status, series }
export async function scrape(port) {
	const r = await fetch(`http://127.0.0.1:${port}/metrics`);
	return { status: r.status, series: parse(await r.text()) };
}

// promtool reads text as valid exposition, where promtool is installed
export function promtoolCheck(text) {
	const pt = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
	if (pt.error?.code !== 'ENOENT') assert.equal(pt.status, 0, pt.stdout + pt.stderr);
}
