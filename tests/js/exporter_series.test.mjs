// SPDX-License-Identifier: Apache-2.0
// `rdmak exporter --vf-series held` (the default) on the cx5-roce-sriov sample node with the
// stand-in kubelet (podresources.mjs): the VFs pods hold have every series with the pod's labels,
// the others none of their own, summed per PF port in rdmak_idle_vfs_*; the sums are what the
// idle VFs counted, taken from the same files as --vf-series all serves them, and they stay right
// while pods take VFs and give them back and the topology is reloaded: never down, never what a
// VF counted while held.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { SAMPLE, find, killExporters, once, parse, promtoolCheck, scrape as scrapeOnce, serve } from './exporter.mjs';
import { PodResources, samplePods } from './podresources.mjs';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-exp-series-'));
const NODE = path.join(root, 'node');
const IB = path.join(NODE, 'sys', 'class', 'infiniband');
const sock = path.join(root, 'pod-resources', 'kubelet.sock');
after(() => {
	killExporters();
	fs.rmSync(root, { recursive: true, force: true });
});

const cp = spawnSync('cp', ['-a', SAMPLE, NODE], { encoding: 'utf8' });
assert.equal(cp.status, 0, cp.stderr);

// every counter file of every port a distinct value, as a node's counters are
const files = (dev, dir) => path.join(fs.realpathSync(path.join(IB, dev)), 'ports', '1', dir);
let n = 0;
for (const dev of fs.readdirSync(IB).sort())
	for (const dir of ['counters', 'hw_counters'])
		for (const f of fs.readdirSync(files(dev, dir)))
			if (f !== 'lifespan') fs.writeFileSync(path.join(files(dev, dir), f), `${5000000000 + ++n * 7919}\n`);
const add = (dev, dir, f, d) => {
	const p = path.join(files(dev, dir), f);
	fs.writeFileSync(p, `${BigInt(fs.readFileSync(p, 'utf8').trim()) + BigInt(d)}\n`);
};

// each VF's PF, from sysfs (device/physfn)
const pfOf = {};
for (const dev of fs.readdirSync(IB)) {
	const fn = fs.realpathSync(path.join(IB, dev, 'device'));
	if (fs.existsSync(path.join(fn, 'physfn')))
		pfOf[dev] = fs.readdirSync(path.join(fs.realpathSync(path.join(fn, 'physfn')), 'infiniband'))[0];
}
const VFS = Object.keys(pfOf).sort();

const value = (series, name, labels) => {
	const f = find(series, name, labels);
	assert.equal(f.length, 1, `${name} ${JSON.stringify(labels)}: ${f.length} series`);
	return BigInt(f[0].value);
};

const scrape = async (port) => (await scrapeOnce(port)).series;

// the families summed: every node_infiniband_ counter and rdmak_port_hw_ one a VF has, by the
// name of its sum
function summed(all) {
	const fams = new Map();
	for (const s of find(all, null, { device: VFS[0] })) {
		const m = s.name.match(/^(?:node_infiniband_|rdmak_)(.*_total)$/);
		if (m) fams.set(s.name, `rdmak_idle_vfs_${m[1]}`);
	}
	return fams;
}

test('held: the VFs pods hold have all their series with the pod\'s labels, the others are summed per PF', async () => {
	const s = new PodResources(sock);
	s.pods = samplePods();
	await s.start();
	try {
		const held = await once(NODE, ['--pod-resources', sock]);
		const every = await once(NODE, ['--pod-resources', sock, '--vf-series', 'all']);
		assert.equal(held.code, 0, held.err);
		assert.equal(every.code, 0, every.err);
		const h = parse(held.out), all = parse(every.out);
		assert.equal(VFS.length, 24);
		// trainer-0 holds mlx5_2 and mlx5_3 (VFs of mlx5_0), trainer-1 mlx5_14 (a VF of mlx5_1)
		const holder = { mlx5_2: 'trainer-0', mlx5_3: 'trainer-0', mlx5_14: 'trainer-1' };
		for (const [dev, pod] of Object.entries(holder)) {
			const mine = find(h, null, { device: dev }).filter((x) => x.name !== 'rdmak_device_pod_info');
			assert.equal(mine.length, find(all, null, { device: dev }).filter((x) => x.name !== 'rdmak_device_pod_info').length, `${dev}: every series`);
			assert.ok(mine.length > 40, `${dev}: ${mine.length} series`);
			for (const x of mine) {
				assert.equal(x.labels.k8s_pod_name, pod, `${x.name} of ${dev}: the pod's labels`);
				assert.equal(x.labels.k8s_namespace_name, 'ml');
				assert.equal(value(all, x.name, x.labels), BigInt(x.value), `${x.name} of ${dev}: the same value`);
			}
		}
		const idle = VFS.filter((v) => !holder[v]);
		for (const dev of idle)
			assert.equal(find(h, null, { device: dev }).length, 0, `${dev}, held by no pod: no series of its own`);
		for (const pf of ['mlx5_0', 'mlx5_1']) {
			assert.equal(find(h, null, { device: pf }).filter((x) => x.name.startsWith('node_infiniband_')).length,
				find(all, null, { device: pf }).filter((x) => x.name.startsWith('node_infiniband_')).length, `${pf}: every series`);
			assert.equal(value(h, 'rdmak_idle_vfs', { device: pf, port: '1' }), BigInt(idle.filter((v) => pfOf[v] === pf).length));
		}
		// each sum is its PF's idle VFs' values added up, as --vf-series all serves them
		const fams = summed(all);
		assert.ok(fams.size >= 40, `${fams.size} families summed`);
		for (const [name, sum] of fams)
			for (const pf of ['mlx5_0', 'mlx5_1']) {
				const want = idle.filter((v) => pfOf[v] === pf).reduce((a, v) => a + value(all, name, { device: v, port: '1' }), 0n);
				assert.equal(value(h, sum, { device: pf, port: '1' }), want, `${sum}{device="${pf}"}`);
			}
		// nothing else of a VF's: the rest of the answer is the same
		const rest = (m) => m.filter((x) => !x.name.startsWith('rdmak_idle_vfs') && !VFS.includes(x.labels.device) &&
			x.name !== 'rdmak_exporter_scrape_duration_seconds').map((x) => `${x.name}${JSON.stringify(x.labels)} ${x.value}`).sort();
		assert.deepEqual(rest(h), rest(all));
		promtoolCheck(held.out);
	} finally {
		await s.stop();
	}
});

test('the sums while pods take VFs and give them back: what idle VFs counted, never down', async () => {
	const s = new PodResources(sock);
	s.pods = samplePods();
	await s.start();
	const e = await serve(NODE, ['--pod-resources', sock, '--pod-resources-max-age', '1']);
	try {
		const tx = 'node_infiniband_port_packets_transmitted_total', oos = 'rdmak_port_hw_out_of_sequence_total';
		const sums = (m) => Object.fromEntries(['mlx5_0', 'mlx5_1'].flatMap((pf) => [
			[`${pf} tx`, value(m, 'rdmak_idle_vfs_port_packets_transmitted_total', { device: pf, port: '1' })],
			[`${pf} oos`, value(m, 'rdmak_idle_vfs_port_hw_out_of_sequence_total', { device: pf, port: '1' })]]));
		// every VF counts: VF i sends i + 1 packets (and i + 1 out of sequence) more
		const step = () => VFS.forEach((v, i) => {
			add(v, 'counters', 'port_xmit_packets', i + 1);
			add(v, 'hw_counters', 'out_of_sequence', 1000 * (i + 1));
		});
		const grown = (before, idleBoth) => {
			const want = { ...before };
			VFS.forEach((v, i) => {
				if (!idleBoth.includes(v)) return;
				want[`${pfOf[v]} tx`] += BigInt(i + 1);
				want[`${pfOf[v]} oos`] += BigInt(1000 * (i + 1));
			});
			return want;
		};
		const a = await scrape(e.port);
		const sa = sums(a);
		const idleA = VFS.filter((v) => !['mlx5_2', 'mlx5_3', 'mlx5_14'].includes(v));

		// a pod takes mlx5_5 (idle until now) and trainer-1 gives mlx5_14 back
		step();
		s.pods = [...samplePods().filter((p) => p.name !== 'trainer-1'),
			{ name: 'grab', namespace: 'ml', containers: [{ name: 'c', devices: [{ resource_name: 'nvidia.com/cx5_vf', device_ids: ['0000:1b:00.5'] }] }] }];
		await new Promise((r) => setTimeout(r, 20));
		const b = await scrape(e.port);
		const idleB = VFS.filter((v) => !['mlx5_2', 'mlx5_3', 'mlx5_5'].includes(v));
		assert.equal(find(b, tx, { device: 'mlx5_5', k8s_pod_name: 'grab' }).length, 1, 'mlx5_5: its own series, its pod\'s labels');
		assert.equal(find(b, null, { device: 'mlx5_14' }).length, 0, 'mlx5_14 given back: summed');
		assert.equal(value(b, 'rdmak_idle_vfs', { device: 'mlx5_0', port: '1' }), 9n);
		assert.equal(value(b, 'rdmak_idle_vfs', { device: 'mlx5_1', port: '1' }), 12n);
		// mlx5_5 was idle at a and is held now, mlx5_14 the other way round: neither's step counts
		const sb = sums(b);
		assert.deepEqual(sb, grown(sa, idleA.filter((v) => idleB.includes(v))));

		step();
		const c = await scrape(e.port);
		// mlx5_14, idle at b and c, counts again; mlx5_5 does not
		assert.deepEqual(sums(c), grown(sb, idleB));
		for (const k of Object.keys(sa))
			assert.ok(sums(c)[k] >= sb[k] && sb[k] >= sa[k], `${k} never goes down`);
		assert.equal(value(c, tx, { device: 'mlx5_5', k8s_pod_name: 'grab' }), value(parse((await once(NODE, ['--vf-series', 'all', '--no-pod-resources'])).out), tx, { device: 'mlx5_5', port: '1' }));

		// a reload of the topology (SIGHUP) keeps the sums going
		e.p.kill('SIGHUP');
		let loads = 1n;
		for (let i = 0; i < 200 && loads < 2n; i++) {
			await new Promise((r) => setTimeout(r, 50));
			loads = value(await scrape(e.port), 'rdmak_exporter_topology_loads_total', {});
		}
		assert.equal(loads, 2n, 'SIGHUP reloaded the topology');
		step();
		assert.deepEqual(sums(await scrape(e.port)), grown(sums(c), idleB), 'after the reload: the sums go on');
	} finally {
		e.p.kill('SIGTERM');
		await s.stop();
	}
});
