// SPDX-License-Identifier: Apache-2.0
// examples/dra's eight-GPU claim on the sample nodes with eight GPUs and eight IB rails, end to
// end: the node's slices from `rdmak dra --dry-run --json`, the GPUs as NVIDIA's GPU driver would
// publish them (their pcieRoot derived here from the node's sysfs, as deviceattribute does), an
// allocation as the scheduler's rules make it (each request from its DeviceClass, whose CEL
// selector is evaluated here for the forms the examples use, each pair's matchAttribute), then
// the claim prepared by `rdmak dra` through the stand-in kubelet and API server. What it must
// give: each GPU paired with the NIC nearest to it (PIX) and healthy, the CDI spec with the eight
// NICs' device nodes and NCCL_IB_HCA, and NCCL's topology file with each pair under one switch.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import grpc from '@grpc/grpc-js';
import YAML from 'yaml';
import { startApiServer } from './apiserver.mjs';
import { call, loadDra } from './drakubelet.mjs';

const TOP = process.env.TOP || path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
const RDMAK = process.env.RDMAK || path.join(TOP, 'build', 'rdmak');
const NODES = process.env.NODES || path.join(TOP, 'examples', 'nodes');
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-dra-ex-'));
const procs = [];
after(() => {
	for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
	fs.rmSync(root, { recursive: true, force: true });
});

const docs = (f) => YAML.parseAllDocuments(fs.readFileSync(path.join(TOP, 'examples', 'dra', f), 'utf8')).map((d) => d.toJS());
const classes = Object.fromEntries(docs('deviceclasses.yaml').map((c) => [c.metadata.name, c]));
classes['gpu.nvidia.com'] = { spec: { selectors: [{ cel: { expression: 'device.driver == "gpu.nvidia.com"' } }] } };

// The CEL the examples use: comparisons of device.driver or device.attributes["dom"].name with a
// string, joined by &&. Anything else throws (the test would then need a real evaluator).
function celMatch(expr, dev) {
	return expr.split('&&').every((term) => {
		const m = term.trim().match(/^device\.(driver|attributes\["([^"]+)"\]\.(\w+)) == "([^"]*)"$/);
		if (!m) throw new Error(`CEL outside the examples' forms: ${term}`);
		if (m[1] === 'driver') return dev.driver === m[4];
		// an attribute without a domain is the driver's own
		const a = (dev.driver === m[2] ? dev.attributes[m[3]] : undefined) ?? dev.attributes[`${m[2]}/${m[3]}`];
		return a !== undefined && a.string === m[4];
	});
}
const inClass = (cls, dev) => classes[cls].spec.selectors.every((s) => celMatch(s.cel.expression, dev));

// The node's GPUs as a GPU driver publishes them: pciBusID and pcieRoot (deviceattribute's rule:
// the bus/pci/devices link joined and cleaned, the component after devices/ when it is pci*)
function gpus(node) {
	const bus = path.join(node, 'sys/bus/pci/devices');
	return fs.readdirSync(bus).sort().filter((bdf) => {
		const rd = (f) => fs.readFileSync(path.join(bus, bdf, f), 'utf8').trim();
		return rd('vendor') === '0x10de' && rd('class').startsWith('0x03');
	}).map((bdf, i) => {
		const target = path.normalize(path.join(bus, fs.readlinkSync(path.join(bus, bdf))));
		const rel = path.relative(path.join(node, 'sys/devices'), target);
		return { driver: 'gpu.nvidia.com', pool: 'n', name: `gpu-${i}`, bdf,
			attributes: { 'resource.kubernetes.io/pciBusID': { string: bdf }, 'resource.kubernetes.io/pcieRoot': { string: rel.split('/')[0] } } };
	});
}

// The allocator's rules for one template: each request's class, each constraint's matchAttribute,
// no device twice; the first fit in the order the devices come (what a scheduler may pick).
function allocate(template, devices) {
	const reqs = template.spec.spec.devices.requests;
	const cons = template.spec.spec.devices.constraints;
	const chosen = {};
	const used = new Set();
	const attr = (d, a) => d.attributes[a]?.string;
	const fits = (req, d) => {
		for (const c of cons) {
			if (!c.requests.includes(req)) continue;
			for (const other of c.requests)
				if (chosen[other] && attr(chosen[other], c.matchAttribute) !== attr(d, c.matchAttribute)) return false;
			if (attr(d, c.matchAttribute) === undefined) return false;
		}
		return true;
	};
	const go = (i) => {
		if (i === reqs.length) return true;
		const r = reqs[i];
		for (const d of devices) {
			const key = `${d.driver}/${d.pool}/${d.name}`;
			if (used.has(key) || !inClass(r.exactly.deviceClassName, d) || !fits(r.name, d)) continue;
			chosen[r.name] = d;
			used.add(key);
			if (go(i + 1)) return true;
			used.delete(key);
			delete chosen[r.name];
		}
		return false;
	};
	return go(0) ? chosen : null;
}

for (const name of ['cx7-rail-1016vf', 'c1-mixed-cx7-cx6']) {
	test(`${name}: the eight GPU and NIC pairs allocated and prepared, each GPU with its nearest healthy NIC`, async () => {
		const node = path.join(NODES, name);
		const d = spawnSync(RDMAK, ['dra', '--dry-run', '--json', '--root', node, '--node-name', 'n'], { encoding: 'utf8', maxBuffer: 64 << 20 });
		assert.equal(d.status, 0, d.stderr);
		const ours = JSON.parse(d.stdout).items.flatMap((s) => s.spec.devices.map((dv) => ({ ...dv, driver: s.spec.driver, pool: s.spec.pool.name })));
		const template = docs('eight-gpu-nic-pairs.yaml').find((x) => x.kind === 'ResourceClaimTemplate');
		const got = allocate(template, [...gpus(node), ...ours]);
		assert.ok(got, 'the claim fits the node');
		for (let k = 0; k < 8; k++) {
			const g = got[`gpu${k}`], nic = got[`nic${k}`];
			assert.equal(nic.attributes.nearestGPU.string, g.bdf, `nic${k} is the NIC nearest to gpu${k}`);
			assert.equal(nic.attributes.gpuRelation.string, 'PIX');
			assert.equal(nic.attributes.portState.string, 'ACTIVE');
		}
		// prepared by the driver
		const dir = path.join(root, name);
		const api = await startApiServer({ dir: path.join(dir, 'pki') });
		try {
			api.kubeconfig(path.join(dir, 'kubeconfig'));
			api.nodes.set('n', 'uid-n');
			api.slices.set('gpus', { apiVersion: 'resource.k8s.io/v1', kind: 'ResourceSlice', metadata: { name: 'gpus', resourceVersion: '1' },
				spec: { driver: 'gpu.nvidia.com', nodeName: 'n', pool: { name: 'n', generation: 1, resourceSliceCount: 1 },
					devices: gpus(node).map((g) => ({ name: g.name, attributes: g.attributes })) } });
			const uid = '6a1e0f6c-0000-4000-8000-000000000008';
			const results = Object.entries(got).map(([req, dv]) => ({ request: req, driver: dv.driver, pool: dv.pool, device: dv.name }));
			api.claims.set('ml/pairs', { apiVersion: 'resource.k8s.io/v1', kind: 'ResourceClaim', metadata: { namespace: 'ml', name: 'pairs', uid },
				spec: template.spec.spec, status: { allocation: { devices: { results } } } });
			const p = spawn(RDMAK, ['dra', '--kubeconfig', path.join(dir, 'kubeconfig'), '--node-name', 'n', '--root', node,
				'--registry-dir', path.join(dir, 'reg'), '--plugin-dir', path.join(dir, 'plugins'), '--cdi-dir', path.join(dir, 'cdi'),
				'--state-dir', path.join(dir, 'state'), '--device-plugins-dir', path.join(dir, 'dp')], { stdio: ['ignore', 'ignore', 'pipe'] });
			procs.push(p);
			let err = '';
			p.stderr.on('data', (x) => (err += x));
			const sock = path.join(dir, 'plugins', 'rdma.rdmak.io', 'dra.sock');
			for (let i = 0; i < 600 && !fs.existsSync(sock); i++) await new Promise((r) => setTimeout(r, 100));
			assert.ok(fs.existsSync(sock), err);
			const { v1 } = loadDra(dir);
			const c = new v1.DRAPlugin(`unix:${sock}`, grpc.credentials.createInsecure());
			const r = await call(c, 'NodePrepareResources', { claims: [{ namespace: 'ml', uid, name: 'pairs' }] });
			c.close();
			assert.equal(r.claims[uid].error, '', err);
			assert.equal(r.claims[uid].devices.length, 8);
			const spec = JSON.parse(fs.readFileSync(path.join(dir, 'cdi', `k8s.rdma.rdmak.io-claim_${uid}.json`), 'utf8'));
			const hca = spec.containerEdits.env.find((e) => e.startsWith('NCCL_IB_HCA=='));
			assert.deepEqual(hca.slice('NCCL_IB_HCA=='.length).split(',').sort(),
				[...Array(8).keys()].map((k) => `${got[`nic${k}`].attributes.rdmaDevice.string}:1`).sort());
			// NCCL's file: each GPU and its NIC under the same switch element
			const xml = fs.readFileSync(path.join(dir, 'state', 'topology', `${uid}.xml`), 'utf8').split('\n');
			const parentOf = (bdf) => {
				const i = xml.findIndex((l) => l.includes(`<pci busid="${bdf}"`));
				assert.ok(i > 0, `${bdf} in the topology file`);
				const depth = xml[i].search(/\S/);
				for (let j = i - 1; j >= 0; j--) if (xml[j].search(/\S/) < depth) return xml[j].trim();
				return null;
			};
			for (let k = 0; k < 8; k++)
				assert.equal(parentOf(got[`gpu${k}`].bdf), parentOf(got[`nic${k}`].attributes['resource.kubernetes.io/pciBusID'].string), `pair ${k}`);
			p.kill('SIGTERM');
			await new Promise((res) => p.on('exit', res));
		} finally {
			await api.close();
		}
	});
}
