// SPDX-License-Identifier: Apache-2.0
// `rdmak dra` between a stand-in kubelet and a stand-in API server (neither can be installed
// here), on a copy of the a100-ib-bond sample node.
//
// The kubelet's side is written against an independent gRPC implementation (@grpc/grpc-js) with
// the messages declared below from the kubelet's published field numbers
// (k8s.io/kubelet pkg/apis/{pluginregistration/v1,dra/v1,dra/v1beta1}/api.proto; the project's own
// protos are checked against the same numbers by proto_fields.test.mjs): registration (GetInfo,
// NotifyRegistrationStatus), NodePrepareResources and NodeUnprepareResources of both versions, a
// second prepare of one claim, a restart of the driver between prepare and unprepare, a claim for
// another driver's devices, a claim whose device vanished from the node; and the health stream
// (k8s.io/kubelet pkg/apis/dra-health/v1alpha1): the devices' health at once, a port down and up,
// a stream the client cancels.
//
// The API server's side (apiserver.mjs) validates every ResourceSlice written against the
// resource.k8s.io/v1 schema and the API's limits; the tests then flap a port (one slice
// rewritten, its pool's generation + 1, the device tainted), edit and delete a slice behind the driver's back (the
// watch sees it, the driver writes its own again), make an update go stale (409), forbid writes
// (403), take the server away and back, and uninstall (the node's slices deleted).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import grpc from '@grpc/grpc-js';
import { claimStatusLimits, startApiServer } from './apiserver.mjs';
import { loadDra } from './drakubelet.mjs';

const TOP = process.env.TOP || path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
const RDMAK = process.env.RDMAK || path.join(TOP, 'build', 'rdmak');
const NODES = process.env.NODES || path.join(TOP, 'examples', 'nodes');
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-dra-'));
const node = path.join(root, 'node');
const registry = path.join(root, 'plugins_registry');
const plugins = path.join(root, 'plugins');
const cdiDir = path.join(root, 'cdi');
const stateDir = path.join(root, 'state');
const cniDir = path.join(root, 'cni'); // rdmak-cni's attachment records
const DRIVER = 'rdma.rdmak.io';
const NODE = 'node-a';

let api;
let driver; // { proc, err(), exited }
const started = [];

const devicePlugins = path.join(root, 'device-plugins');

function startDriver(args = []) {
	const proc = spawn(RDMAK, ['dra', '--kubeconfig', path.join(root, 'kubeconfig'), '--node-name', NODE,
		'--device-plugins-dir', devicePlugins,
		'--registry-dir', registry, '--plugin-dir', plugins, '--cdi-dir', cdiDir, '--state-dir', stateDir,
		'--cni-state-dir', cniDir, '--sysfs', path.join(node, 'sys'), '--devfs', path.join(node, 'dev'), '--interval', '1', ...args],
	{ stdio: ['ignore', 'ignore', 'pipe'] });
	let err = '';
	proc.stderr.on('data', (d) => (err += d));
	const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
	started.push(proc);
	return { proc, err: () => err, exited };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, fn, ms = 20000) {
	const end = Date.now() + ms;
	for (;;) {
		const v = await fn();
		if (v) return v;
		if (Date.now() > end) throw new Error(`timed out waiting for ${what}${driver ? '\n' + driver.err().slice(-3000) : ''}`);
		await sleep(50);
	}
}

async function stopDriver() {
	driver.proc.kill('SIGTERM');
	const { code } = await driver.exited;
	assert.equal(code, 0, `exit ${code}: ${driver.err().slice(-2000)}`);
}

// rdmak run to its end without blocking this process, which also serves the API
function run(args) {
	return new Promise((resolve) => {
		const proc = spawn(RDMAK, args, { stdio: ['ignore', 'ignore', 'pipe'] });
		let stderr = '';
		proc.stderr.on('data', (d) => (stderr += d));
		proc.on('exit', (status) => resolve({ status, stderr }));
	});
}

const call = (client, method, req) =>
	new Promise((resolve, reject) => client[method](req, (e, r) => (e ? reject(e) : resolve(r))));

function claim(uid, name, results) {
	return {
		apiVersion: 'resource.k8s.io/v1', kind: 'ResourceClaim',
		metadata: { name, namespace: 'team', uid },
		spec: { devices: { requests: [] } },
		status: { allocation: { devices: { results } } },
	};
}
const ours = (request, pci) => ({ request, driver: DRIVER, pool: `${NODE}/pci-${pci.replace(/[:.]/g, '-')}`, device: `pci-${pci.replace(/[:.]/g, '-')}` });
const gpu = (request, device) => ({ request, driver: 'gpu.nvidia.com', pool: NODE, device });

let v1, v1beta1, reg, health;
const dial = (pkg) => new pkg.DRAPlugin(`unix:${path.join(plugins, DRIVER, 'dra.sock')}`, grpc.credentials.createInsecure());

before(async () => {
	spawnSync('cp', ['-a', path.join(NODES, 'a100-ib-bond'), node]);
	api = await startApiServer({ dir: path.join(root, 'pki') });
	api.kubeconfig(path.join(root, 'kubeconfig'));
	api.nodes.set(NODE, 'node-uid-1');
	// the GPU driver's slice, as NVIDIA's DRA driver publishes it
	api.slices.set('node-a-gpu', {
		apiVersion: 'resource.k8s.io/v1', kind: 'ResourceSlice',
		metadata: { name: 'node-a-gpu', resourceVersion: '1' },
		spec: { driver: 'gpu.nvidia.com', nodeName: NODE, pool: { name: NODE, generation: 1, resourceSliceCount: 1 },
			devices: [
				{ name: 'gpu-6', attributes: { 'resource.kubernetes.io/pciBusID': { string: '0000:c5:00.0' } } },
				{ name: 'gpu-2', attributes: { pciBusID: { string: '0000:45:00.0' } } },
			] },
	});
	({ v1, v1beta1, reg, health } = loadDra(root));
	driver = startDriver();
	await until('the registration socket', () => fs.existsSync(path.join(registry, `${DRIVER}-reg.sock`)));
});

after(async () => {
	for (const p of started) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
	await api?.close();
	fs.rmSync(root, { recursive: true, force: true });
});

test('registration: GetInfo names a DRAPlugin, its endpoint, both versions and the health service; NotifyRegistrationStatus', async () => {
	const sock = path.join(registry, `${DRIVER}-reg.sock`);
	assert.equal(fs.statSync(sock).mode & 0o777, 0o600, 'the socket is 0600');
	const c = new reg.Registration(`unix:${sock}`, grpc.credentials.createInsecure());
	const info = await call(c, 'GetInfo', {});
	assert.deepEqual(info, { type: 'DRAPlugin', name: DRIVER, endpoint: path.join(plugins, DRIVER, 'dra.sock'),
		supported_versions: ['v1.DRAPlugin', 'v1beta1.DRAPlugin', 'v1alpha1.DRAResourceHealth'] });
	await call(c, 'NotifyRegistrationStatus', { plugin_registered: true, error: '' });
	await until('the log of it', () => /the kubelet registered the plugin/.test(driver.err()));
	c.close();
});

test('the slices at the API server: one per PF pool, valid, owned by the Node', async () => {
	await until('3 slices', () => [...api.slices.values()].filter((s) => s.spec.driver === DRIVER).length === 3);
	assert.deepEqual(api.invalid, []);
	const mine = [...api.slices.values()].filter((s) => s.spec.driver === DRIVER);
	for (const s of mine) {
		assert.deepEqual(s.metadata.ownerReferences, [{ apiVersion: 'v1', kind: 'Node', name: NODE, uid: 'node-uid-1', controller: true }]);
		assert.equal(s.spec.pool.generation, 1);
	}
	assert.deepEqual(mine.map((s) => s.spec.devices[0].name).sort(), ['pci-0000-46-00-0', 'pci-0000-c6-00-0', 'pci-0000-e1-00-0']);
	assert.deepEqual(api.writes.map((w) => w.verb), ['create', 'create', 'create']);
});

const UID_A = '0b6f3c1e-0000-4000-8000-00000000000a';
const UID_B = '0b6f3c1e-0000-4000-8000-00000000000b';
const cdiFile = (uid) => path.join(cdiDir, `k8s.${DRIVER}-claim_${uid}.json`);

test('prepare (v1): the NIC and the GPU of one claim: CDI spec with its nodes, NCCL env, topology', async () => {
	api.claims.set('team/pair', claim(UID_A, 'pair', [ours('nic', '0000:c6:00.0'), gpu('gpu', 'gpu-6')]));
	const c = dial(v1);
	const r = await call(c, 'NodePrepareResources', { claims: [{ namespace: 'team', uid: UID_A, name: 'pair' }] });
	c.close();
	assert.deepEqual(r.claims[UID_A], {
		error: '',
		devices: [{ request_names: ['nic'], pool_name: `${NODE}/pci-0000-c6-00-0`, device_name: 'pci-0000-c6-00-0',
			cdi_device_ids: [`k8s.${DRIVER}/claim=${UID_A}-pci-0000-c6-00-0`] }],
	});
	const spec = JSON.parse(fs.readFileSync(cdiFile(UID_A), 'utf8'));
	assert.equal(spec.kind, `k8s.${DRIVER}/claim`);
	assert.deepEqual(spec.devices.map((d) => [d.name, d.containerEdits.deviceNodes.map((n) => n.path)]), [
		[`${UID_A}-pci-0000-c6-00-0`, ['/dev/infiniband/uverbs1', '/dev/infiniband/umad1', '/dev/infiniband/issm1']],
	]);
	const topo = path.join(stateDir, 'topology', `${UID_A}.xml`);
	assert.deepEqual(spec.containerEdits.env, ['NCCL_IB_HCA==mlx5_1:1', 'NCCL_SOCKET_IFNAME==ibp198s0', 'NCCL_TOPO_FILE=/var/run/rdmak/nccl-topo.xml']);
	assert.deepEqual(spec.containerEdits.deviceNodes.map((n) => n.path), ['/dev/infiniband/rdma_cm']);
	assert.deepEqual(spec.containerEdits.mounts, [{ hostPath: topo, containerPath: '/var/run/rdmak/nccl-topo.xml', options: ['ro', 'nosuid', 'nodev', 'bind'] }]);
	const xml = fs.readFileSync(topo, 'utf8');
	assert.match(xml, /<pci busid="0000:c5:00.0" class="0x030200"/, 'the claim\'s GPU, by the address its driver published');
	assert.match(xml, /<net name="mlx5_1" dev="0" speed="200000" port="1"/);
	assert.doesNotMatch(xml, /0000:45:00.0|mlx5_0/, 'nothing of other claims');
});

// podman 4.3 reads CDI specs from /etc/cdi and /var/run/cdi only: the claim's spec goes there
// under a name of this run, its host paths moved to the sample node's device nodes (this machine
// has no RDMA device), and a busybox container asks for the claim's CDI device by name.
test('podman runs a container with the claim\'s CDI device: exactly its device nodes, its env, the topology file', async (t) => {
	const busybox = '/bin/busybox';
	if (process.getuid() !== 0 || spawnSync('podman', ['--version']).status !== 0 || !fs.existsSync(busybox))
		return t.skip('needs root, podman and busybox-static');
	const S = path.join(root, 'podman');
	const P = ['--root', `${S}/root`, '--runroot', `${S}/run`, '--tmpdir', `${S}/tmp`, '--storage-driver', 'vfs', '--cgroup-manager', 'cgroupfs', '--events-backend', 'none'];
	const img = path.join(S, 'img');
	fs.mkdirSync(path.join(img, 'bin'), { recursive: true });
	fs.copyFileSync(busybox, path.join(img, 'bin', 'busybox'));
	fs.chmodSync(path.join(img, 'bin', 'busybox'), 0o755);
	const tar = path.join(S, 'img.tar');
	assert.equal(spawnSync('tar', ['-C', img, '-cf', tar, '.']).status, 0);
	const imp = spawnSync('podman', [...P, 'import', tar, 'localhost/rdmak-dra-busybox:test'], { encoding: 'utf8' });
	assert.equal(imp.status, 0, imp.stderr);
	const spec = JSON.parse(fs.readFileSync(cdiFile(UID_A), 'utf8'));
	assert.equal(spec.cdiVersion, '0.5.0', 'the version podman 4.3 reads');
	const dev = path.join(node, 'dev');
	for (const d of [...spec.devices.map((x) => x.containerEdits), spec.containerEdits])
		for (const n of d.deviceNodes || []) n.hostPath = n.hostPath.replace(/^\/dev\//, `${dev}/`);
	const kind = `k8s.rdmak-test-${process.pid}.io/claim`;
	spec.kind = kind;
	const file = `/var/run/cdi/rdmak-test-${process.pid}.json`;
	fs.mkdirSync('/var/run/cdi', { recursive: true });
	fs.writeFileSync(file, JSON.stringify(spec));
	try {
		const r = await new Promise((resolve) => {
			const p = spawn('podman', [...P, 'run', '--rm', '--network', 'none', '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=4096:4096', '--device', `${kind}=${UID_A}-pci-0000-c6-00-0`,
				'localhost/rdmak-dra-busybox:test', '/bin/busybox', 'sh', '-c',
				'ls /dev/infiniband; echo "$NCCL_IB_HCA $NCCL_SOCKET_IFNAME $NCCL_TOPO_FILE"; /bin/busybox grep -c "<pci" "$NCCL_TOPO_FILE"; echo x > "$NCCL_TOPO_FILE" || echo read-only'],
			{ stdio: ['ignore', 'pipe', 'pipe'] });
			let out = '', err = '';
			p.stdout.on('data', (d) => (out += d));
			p.stderr.on('data', (d) => (err += d));
			p.on('exit', (status) => resolve({ status, out, err }));
		});
		assert.equal(r.status, 0, r.err);
		const lines = r.out.trim().split('\n');
		assert.deepEqual(lines.slice(0, 4), ['issm1', 'rdma_cm', 'umad1', 'uverbs1'], 'the claim\'s device nodes and no other');
		assert.equal(lines[4], '=mlx5_1:1 =ibp198s0 /var/run/rdmak/nccl-topo.xml');
		assert.ok(Number(lines[5]) >= 2, 'the topology file is there');
		assert.equal(lines[6], 'read-only');
	} finally {
		fs.rmSync(file, { force: true });
		spawnSync('podman', [...P, 'rmi', '-a', '-f']);
	}
});

test('prepare again (the kubelet retries): the same answer, the files as they were', async () => {
	const before = fs.readFileSync(cdiFile(UID_A), 'utf8');
	const writes = api.writes.length;
	api.claims.delete('team/pair'); // answered from the state on disk, not from the API server
	const c = dial(v1);
	const r = await call(c, 'NodePrepareResources', { claims: [{ namespace: 'team', uid: UID_A, name: 'pair' }] });
	c.close();
	assert.equal(r.claims[UID_A].error, '');
	assert.equal(r.claims[UID_A].devices[0].device_name, 'pci-0000-c6-00-0');
	assert.equal(fs.readFileSync(cdiFile(UID_A), 'utf8'), before);
	assert.equal(api.writes.length, writes);
});

test('v1beta1: the same service on the older path', async () => {
	api.claims.set('team/two', claim(UID_B, 'two', [ours('a', '0000:c6:00.0'), ours('b', '0000:e1:00.0')]));
	const c = dial(v1beta1);
	const r = await call(c, 'NodePrepareResources', { claims: [{ namespace: 'team', uid: UID_B, name: 'two' }] });
	assert.equal(r.claims[UID_B].error, '');
	assert.deepEqual(r.claims[UID_B].devices.map((d) => d.request_names[0]), ['a', 'b']);
	const spec = JSON.parse(fs.readFileSync(cdiFile(UID_B), 'utf8'));
	assert.equal(spec.containerEdits.env[0], 'NCCL_IB_HCA==mlx5_1:1,mlx5_bond_0:1');
	assert.deepEqual(spec.devices[1].containerEdits.deviceNodes.map((n) => n.path), ['/dev/infiniband/uverbs2'], 'RoCE: no umad/issm');
	const u = await call(c, 'NodeUnprepareResources', { claims: [{ namespace: 'team', uid: UID_B, name: 'two' }] });
	assert.deepEqual(u.claims[UID_B], { error: '' });
	assert.equal(fs.existsSync(cdiFile(UID_B)), false);
	c.close();
});

// rdmak-cni's record of an attachment, as it leaves it once ADD is done (src/attach)
function attachRecord(network, id, ifname, rec) {
	fs.mkdirSync(path.join(cniDir, network), { recursive: true, mode: 0o700 });
	fs.writeFileSync(path.join(cniDir, network, `${id}:${ifname}`), JSON.stringify({ netns: '/proc/self/ns/net', hostUp: true, ...rec }), { mode: 0o600 });
}

test('claim status: networkData of the devices rdmak-cni attached, written after prepare, other drivers\' entries kept', async () => {
	const uid = '0b6f3c1e-0000-4000-8000-000000000010';
	const gpuStatus = { driver: 'gpu.nvidia.com', pool: NODE, device: 'gpu-6', data: { uuid: 'GPU-1' } };
	const cl = claim(uid, 'net', [ours('a', '0000:c6:00.0'), ours('b', '0000:e1:00.0'), gpu('g', 'gpu-6')]);
	cl.status.devices = [gpuStatus];
	api.claims.set('team/net', cl);
	const c = dial(v1);
	const r = await call(c, 'NodePrepareResources', { claims: [{ namespace: 'team', uid, name: 'net' }] });
	assert.equal(r.claims[uid].error, '');
	// prepare comes before the pod's sandbox, whose network the CNI attaches: nothing to say yet
	assert.deepEqual(api.statusWrites.filter((w) => w.claim === 'team/net'), []);
	const entry = (pci, networkData) => ({ driver: DRIVER, pool: `${NODE}/pci-${pci.replace(/[:.]/g, '-')}`, device: `pci-${pci.replace(/[:.]/g, '-')}`, networkData });
	// a record that a pod gone without DEL left for the same VF (its namespace removed, GC not
	// run yet): what that pod got is never this claim's status
	fs.mkdirSync(path.join(root, 'netns'), { recursive: true });
	attachRecord('a-gone', 'dead0001', 'net1', { netns: path.join(root, 'netns', 'gone'), hostName: 'ibp198s0', pci: '0000:c6:00.0',
		rdmaDevice: 'mlx5_1', pod: { mac: '02:00:00:00:de:ad', ips: ['10.56.217.99/24'] } });
	// the VF of c6 attached as net1 with two addresses
	attachRecord('ib-net', 'c0ffee01', 'net1', { hostName: 'ibp198s0', pci: '0000:c6:00.0', rdmaDevice: 'mlx5_1',
		pod: { mac: '00:00:01:07:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:8e:39:5a', ips: ['10.56.217.2/24', 'fd00:1::2/64'] } });
	const net1 = { interfaceName: 'net1', hardwareAddress: '00:00:01:07:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:8e:39:5a', ips: ['10.56.217.2/24', 'fd00:1::2/64'] };
	await until('the status', () => api.claims.get('team/net').status.devices?.length === 2);
	assert.deepEqual(api.claims.get('team/net').status.devices, [gpuStatus, entry('0000:c6:00.0', net1)]);
	// the RoCE device attached without IPAM: no ips
	attachRecord('roce-net', 'c0ffee01', 'net2', { hostName: 'bond0', pci: '0000:e1:00.0', rdmaDevice: 'mlx5_bond_0', pod: { mac: '0c:42:a1:00:00:02', ips: [] } });
	await until('the second entry', () => api.claims.get('team/net').status.devices.length === 3);
	assert.deepEqual(api.claims.get('team/net').status.devices[2], entry('0000:e1:00.0', { interfaceName: 'net2', hardwareAddress: '0c:42:a1:00:00:02' }));
	// net1 detached (DEL removes the record): its entry goes, the others stay; someone else
	// writes the claim between the driver's read and its write: a 409, and the next round writes
	api.staleAfterRead('team/net');
	fs.rmSync(path.join(cniDir, 'ib-net', 'c0ffee01:net1'));
	await until('the entry removed', () => api.claims.get('team/net').status.devices.length === 2);
	assert.deepEqual(api.claims.get('team/net').status.devices, [gpuStatus, entry('0000:e1:00.0', { interfaceName: 'net2', hardwareAddress: '0c:42:a1:00:00:02' })]);
	assert.deepEqual(api.invalid, []);
	// what it last wrote is what it would write: no further writes
	assert.deepEqual(api.statusWrites.filter((w) => w.claim === 'team/net').map((w) => w.code), [200, 200, 409, 200]);
	// RBAC without resourceclaims/status: said in the log, written once allowed
	api.forbid('updateclaimstatus');
	attachRecord('ib-net', 'c0ffee01', 'net1', { hostName: 'ibp198s0', pci: '0000:c6:00.0', rdmaDevice: 'mlx5_1', pod: { mac: '02:00:00:00:00:01', ips: ['10.56.217.3/24'] } });
	await until('the refusal logged', () => /claim status: writing the status of ResourceClaim team\/net: HTTP 403/.test(driver.err()));
	api.allow();
	await until('written once allowed', () => api.claims.get('team/net').status.devices.length === 3);
	const u = await call(c, 'NodeUnprepareResources', { claims: [{ namespace: 'team', uid, name: 'net' }] });
	assert.deepEqual(u.claims[uid], { error: '' });
	c.close();
	fs.rmSync(cniDir, { recursive: true });
});

test('the stand-in refuses a claim status the API server would refuse', () => {
	const cl = claim('u', 'x', [ours('a', '0000:c6:00.0')]);
	const ok = { driver: DRIVER, pool: `${NODE}/pci-0000-c6-00-0`, device: 'pci-0000-c6-00-0', networkData: { interfaceName: 'net1', ips: ['10.0.0.1/24'] } };
	const w = (devices) => claimStatusLimits({ ...cl, status: { ...cl.status, devices } }, cl);
	assert.equal(w([ok]), null);
	assert.match(w([{ ...ok, device: 'pci-0000-46-00-0' }]), /must be an allocated device/);
	assert.match(w([ok, ok]), /Duplicate value/);
	for (const ip of ['10.0.0.01/24', '10.0.0.1', '10.0.0.1/33', 'FD00::1/64', 'fd00:0::1/64'])
		assert.match(w([{ ...ok, networkData: { ips: [ip] } }]), /ips: Invalid value/, ip);
	assert.match(w([{ ...ok, networkData: { ips: Array.from({ length: 17 }, (_, i) => `10.0.0.${i}/24`) } }]), /Too many/);
	assert.match(w([{ ...ok, networkData: { interfaceName: 'x'.repeat(257) } }]), /interfaceName: Too long/);
});

test('a restart between prepare and unprepare: unprepare removes exactly what prepare made', async () => {
	await stopDriver();
	const other = path.join(cdiDir, 'someone-else.json');
	fs.writeFileSync(other, '{}');
	driver = startDriver();
	await until('the endpoint again', () => fs.existsSync(path.join(plugins, DRIVER, 'dra.sock')));
	const c = dial(v1);
	const u = await call(c, 'NodeUnprepareResources', { claims: [{ namespace: 'team', uid: UID_A, name: 'pair' }] });
	c.close();
	assert.deepEqual(u.claims[UID_A], { error: '' });
	assert.equal(fs.existsSync(cdiFile(UID_A)), false);
	assert.equal(fs.existsSync(path.join(stateDir, 'topology', `${UID_A}.xml`)), false);
	assert.equal(fs.existsSync(path.join(stateDir, 'claims', `${UID_A}.json`)), false);
	assert.equal(fs.existsSync(other), true, 'another writer\'s spec left alone');
	// unprepare again: nothing left to do, and that is success
	const c2 = dial(v1);
	const again = await call(c2, 'NodeUnprepareResources', { claims: [{ namespace: 'team', uid: UID_A, name: 'pair' }] });
	c2.close();
	assert.deepEqual(again.claims[UID_A], { error: '' });
});

test('a claim for another driver\'s devices only: no devices, no files', async () => {
	const uid = '0b6f3c1e-0000-4000-8000-00000000000c';
	api.claims.set('team/gpus', claim(uid, 'gpus', [gpu('g', 'gpu-2')]));
	const c = dial(v1);
	const r = await call(c, 'NodePrepareResources', { claims: [{ namespace: 'team', uid, name: 'gpus' }] });
	c.close();
	assert.deepEqual(r.claims[uid], { error: '', devices: [] });
	assert.equal(fs.existsSync(cdiFile(uid)), false);
});

test('a claim the API server knows under another uid, or not at all: refused by name', async () => {
	api.claims.set('team/swapped', claim('0b6f3c1e-0000-4000-8000-0000000000ff', 'swapped', [ours('nic', '0000:c6:00.0')]));
	const c = dial(v1);
	const uid = '0b6f3c1e-0000-4000-8000-00000000000d';
	const r = await call(c, 'NodePrepareResources', { claims: [{ namespace: 'team', uid, name: 'swapped' }, { namespace: 'team', uid: 'x/../y', name: 'bad' }] });
	c.close();
	assert.match(r.claims[uid].error, /is uid 0b6f3c1e-0000-4000-8000-0000000000ff now/);
	assert.match(r.claims['x/../y'].error, /not a UID/);
	assert.equal(fs.readdirSync(cdiDir).filter((f) => f.startsWith('k8s.')).length, 0);
});

test('a claim whose device vanished from the node: an error naming it, nothing made', async () => {
	// mlx5_0 goes away (its driver unbound): the daemon sees one device fewer
	fs.rmSync(path.join(node, 'sys/class/infiniband/mlx5_0'));
	await until('the reload', () => /devices or ports changed/.test(driver.err()));
	const uid = '0b6f3c1e-0000-4000-8000-00000000000e';
	api.claims.set('team/gone', claim(uid, 'gone', [ours('nic', '0000:46:00.0')]));
	const c = dial(v1);
	const r = await call(c, 'NodePrepareResources', { claims: [{ namespace: 'team', uid, name: 'gone' }] });
	c.close();
	assert.match(r.claims[uid].error, /device pci-0000-46-00-0 of pool node-a\/pci-0000-46-00-0 is not on this node/);
	assert.deepEqual(r.claims[uid].devices, []);
	assert.equal(fs.existsSync(path.join(stateDir, 'claims', `${uid}.json`)), false);
	// and its pool is gone from the API server
	await until('its slice deleted', () => !api.slices.has(`${NODE}-${DRIVER}-pci-0000-46-00-0-0`));
});

const sliceOf = (pci) => api.slices.get(`${NODE}-${DRIVER}-pci-${pci.replace(/[:.]/g, '-')}-0`);
const portState = (ibdev) => fs.realpathSync(path.join(node, 'sys/class/infiniband', ibdev, 'ports/1/state'));

test('a port flap rewrites one slice, its pool\'s generation + 1', async () => {
	const before = api.writes.length;
	const gen = sliceOf('0000:c6:00.0').spec.pool.generation;
	fs.writeFileSync(portState('mlx5_1'), '1: DOWN\n');
	await until('the update', () => sliceOf('0000:c6:00.0').spec.devices[0].attributes.portState.string === 'DOWN');
	assert.equal(sliceOf('0000:c6:00.0').spec.pool.generation, gen + 1);
	assert.deepEqual(sliceOf('0000:c6:00.0').spec.devices[0].taints, [{ key: 'rdma.rdmak.io/port-down', value: 'DOWN', effect: 'NoSchedule' }],
		'the device tainted NoSchedule while its port is down');
	assert.deepEqual(api.writes.slice(before).map((w) => [w.verb, w.name, w.status]), [['update', `${NODE}-${DRIVER}-pci-0000-c6-00-0-0`, 200]]);
	assert.equal(sliceOf('0000:e1:00.0').spec.pool.generation, 1, 'the other pool untouched');
	fs.writeFileSync(portState('mlx5_1'), '4: ACTIVE\n');
	await until('back up', () => sliceOf('0000:c6:00.0').spec.devices[0].attributes.portState.string === 'ACTIVE');
	assert.equal(sliceOf('0000:c6:00.0').spec.devices[0].taints, undefined, 'and no taint once it is up');
	assert.deepEqual(api.invalid, []);
});

// The kubelet's health stream (KEP-4680): one NodeWatchResources call, its messages collected.
function watchHealth() {
	const c = new health.DRAResourceHealth(`unix:${path.join(plugins, DRIVER, 'dra.sock')}`, grpc.credentials.createInsecure());
	const stream = c.NodeWatchResources({});
	const w = { c, stream, msgs: [], error: null, ended: false };
	stream.on('data', (m) => w.msgs.push(m));
	stream.on('error', (e) => (w.error = e));
	stream.on('end', () => (w.ended = true));
	return w;
}
const byDevice = (m) => Object.fromEntries(m.devices.map((d) => [`${d.device.pool_name}|${d.device.device_name}`, d]));
// every device of the driver's slices on this node, "<pool>|<device>", and the RDMA device of each
function publishedDevices() {
	const out = {};
	for (const s of api.slices.values())
		if (s.spec.driver === DRIVER && s.spec.nodeName === NODE)
			for (const d of s.spec.devices) out[`${s.spec.pool.name}|${d.name}`] = d.attributes.rdmaDevice?.string;
	return out;
}
async function nextHealth(w, from, what, fn) {
	return until(what, () => {
		if (w.error) throw new Error(`the stream failed: ${w.error.code} ${w.error.details}`);
		return w.msgs.slice(from).find(fn);
	});
}

test('health (NodeWatchResources): every device at once, a port down and up, exactly its devices, sent again, a cancelled stream cleaned up', async () => {
	const w = watchHealth();
	const first = await nextHealth(w, 0, 'the first list', () => true);
	const published = publishedDevices();
	const all = byDevice(first);
	assert.deepEqual(Object.keys(all).sort(), Object.keys(published).sort(), 'every device of the slices, no other');
	for (const [k, d] of Object.entries(all)) {
		assert.equal(d.health, 'HEALTHY', `${k}: its ports are ACTIVE`);
		assert.ok(d.last_updated_time > 1e9 && d.last_updated_time <= Date.now() / 1000 + 1, `${k}: a Unix time`);
	}
	const downOnes = Object.keys(published).filter((k) => published[k] === 'mlx5_1');
	assert.ok(downOnes.length >= 1, 'mlx5_1 is a device of the node');
	const t0 = Math.floor(Date.now() / 1000);

	fs.writeFileSync(portState('mlx5_1'), '1: DOWN\n');
	const down = byDevice(await nextHealth(w, 1, 'the UNHEALTHY update', (m) => m.devices.some((d) => d.health === 'UNHEALTHY')));
	assert.deepEqual(Object.keys(down).sort(), Object.keys(all).sort(), 'the whole list again');
	assert.deepEqual(Object.keys(down).filter((k) => down[k].health !== 'HEALTHY').sort(), downOnes.sort(), 'exactly the devices of the port that went down');
	for (const k of downOnes) {
		assert.equal(down[k].health, 'UNHEALTHY');
		assert.ok(down[k].last_updated_time >= t0, `${k}: the time of the change`);
	}
	for (const k of Object.keys(all).filter((x) => !downOnes.includes(x)))
		assert.equal(down[k].last_updated_time, all[k].last_updated_time, `${k}: unchanged, its time too`);

	const n = w.msgs.length;
	fs.writeFileSync(portState('mlx5_1'), '4: ACTIVE\n');
	const up = byDevice(await nextHealth(w, n, 'HEALTHY again', (m) => m.devices.every((d) => d.health === 'HEALTHY')));
	assert.deepEqual(Object.keys(up).sort(), Object.keys(all).sort());

	// the kubelet goes away: the stream is cleaned up and the driver serves on
	w.stream.cancel();
	w.c.close();
	await until('the stream closed', () => /NodeWatchResources stream closed \(0 open\)/.test(driver.err()));
	const w2 = watchHealth();
	const again = byDevice(await nextHealth(w2, 0, 'the second client\'s list', () => true));
	assert.deepEqual(Object.keys(again).sort(), Object.keys(all).sort());
	assert.ok(Object.values(again).every((d) => d.health === 'HEALTHY'));
	for (const k of downOnes) assert.equal(again[k].last_updated_time, up[k].last_updated_time, `${k}: the time of its last change`);
	// nothing changes: the list comes again all the same (the kubelet reads a device it has not
	// heard of for 30 s as Unknown), its times as they were
	const resent = byDevice(await nextHealth(w2, 1, 'the list sent again', () => true));
	assert.deepEqual(resent, again);
	const c = dial(v1);
	const uid = '0b7e6a3c-5d2f-4c1e-9a8b-7f6e5d4c3b2a'; // never prepared: unprepare is success
	const r = await call(c, 'NodeUnprepareResources', { claims: [{ namespace: 'team', uid, name: 'x' }] });
	c.close();
	assert.deepEqual(r.claims[uid], { error: '' }, 'the DRAPlugin service still answers');
	w2.stream.cancel();
	w2.c.close();
	await until('the second stream closed', () => (driver.err().match(/NodeWatchResources stream closed \(0 open\)/g) || []).length >= 2);
	assert.equal(driver.proc.exitCode, null, 'the driver still runs');
});

test('someone else edits or deletes a slice: the watch sees it, ours is written again', async () => {
	const name = `${NODE}-${DRIVER}-pci-0000-e1-00-0-0`;
	api.edit(name, (s) => { s.spec.devices[0].attributes.portState = { string: 'BOGUS' }; });
	await until('ours again', () => api.slices.get(name).spec.devices[0].attributes.portState.string === 'ACTIVE');
	const rv = api.slices.get(name).metadata.resourceVersion;
	api.slices.delete(name); // a delete the watch does not hear of ...
	api.edit(`${NODE}-${DRIVER}-pci-0000-c6-00-0-0`, (s) => { s.spec.devices[0].attributes.rail = { int: 9 }; }); // ... and one it does
	await until('both written again', () => api.slices.get(name) && api.slices.get(name).metadata.resourceVersion !== rv &&
		sliceOf('0000:c6:00.0').spec.devices[0].attributes.rail.int !== 9);
	assert.deepEqual(api.invalid, []);
});

test('an update that lost a race (409) is listed again and retried', async () => {
	api.forbid('watch');
	api.expireWatches(); // the open watch ends; its restart is refused
	const name = `${NODE}-${DRIVER}-pci-0000-c6-00-0-0`;
	api.edit(name, (s) => { s.metadata.labels = { someone: 'else' }; }); // not heard: rdmak's resourceVersion is stale
	const before = api.writes.length;
	fs.writeFileSync(portState('mlx5_1'), '1: DOWN\n');
	await until('written after the conflict', () => api.writes.slice(before).some((w) => w.status === 200 && w.name === name));
	const seen = api.writes.slice(before).filter((w) => w.name === name).map((w) => w.status);
	assert.deepEqual(seen, [409, 200]);
	api.allow();
	fs.writeFileSync(portState('mlx5_1'), '4: ACTIVE\n');
	await until('back up', () => sliceOf('0000:c6:00.0').spec.devices[0].attributes.portState.string === 'ACTIVE');
});

test('403 (RBAC) and the server going away: said, retried, published once allowed and back', async () => {
	api.forbid('update');
	fs.writeFileSync(portState('mlx5_1'), '1: DOWN\n');
	await until('the refusal logged', () => /publishing the ResourceSlices: .*403.*forbidden/.test(driver.err()));
	api.allow();
	await until('published once allowed', () => sliceOf('0000:c6:00.0').spec.devices[0].attributes.portState.string === 'DOWN');
	await api.down();
	fs.writeFileSync(portState('mlx5_1'), '4: ACTIVE\n');
	await until('the failure logged', () => /publishing the ResourceSlices: connecting to 127.0.0.1/.test(driver.err()));
	await api.up();
	await until('published once back', () => sliceOf('0000:c6:00.0').spec.devices[0].attributes.portState.string === 'ACTIVE', 90000);
	await until('said', () => /publishing the ResourceSlices works again/.test(driver.err()));
	assert.deepEqual(api.invalid, []);
});

test('SIGTERM leaves the slices; --uninstall deletes this node\'s and no other\'s; the device plugin on the node refuses the driver', async () => {
	await stopDriver();
	assert.equal(fs.existsSync(path.join(registry, `${DRIVER}-reg.sock`)), false, 'the registration socket removed');
	const n = [...api.slices.values()].filter((s) => s.spec.driver === DRIVER).length;
	assert.equal(n, 2);
	api.slices.set('other-node-slice', { apiVersion: 'resource.k8s.io/v1', kind: 'ResourceSlice', metadata: { name: 'other-node-slice', resourceVersion: '5' },
		spec: { driver: DRIVER, nodeName: 'node-b', pool: { name: 'node-b/x', generation: 1, resourceSliceCount: 1 }, devices: [] } });
	const u = await run(['dra', '--uninstall', '--kubeconfig', path.join(root, 'kubeconfig'), '--node-name', NODE]);
	assert.equal(u.status, 0, u.stderr);
	assert.deepEqual([...api.slices.keys()].sort(), ['node-a-gpu', 'other-node-slice']);
	// the device plugin serving this node: the driver refuses to start
	const net = await import('node:net');
	fs.mkdirSync(devicePlugins, { recursive: true });
	const fake = net.createServer().listen(path.join(devicePlugins, 'rdmak-rdma_a100.sock'));
	await new Promise((r) => fake.once('listening', r));
	const refused = await run(['dra', '--once', '--kubeconfig', path.join(root, 'kubeconfig'), '--node-name', NODE, '--device-plugins-dir', devicePlugins,
		'--sysfs', path.join(node, 'sys'), '--devfs', path.join(node, 'dev')]);
	assert.equal(refused.status, 1);
	assert.match(refused.stderr, /rdmak plugin serves this node .*rdmak-rdma_a100.sock.*never both/);
	// per resource (--config, the plugin's file): the socket of a resource the config leaves to
	// the plugin is no obstacle, and the driver publishes only its own resources' devices
	const cfg = path.join(root, 'plugin-config.json');
	fs.writeFileSync(cfg, JSON.stringify({ configList: [
		{ resourceName: 'rdma_a100', rdmaHcaMax: 4, selectors: { linkTypes: ['infiniband'] } },
		{ resourceName: 'roce', rdmaHcaMax: 4, servedBy: 'dra', selectors: { linkTypes: ['ether'] } }] }));
	const once = ['dra', '--once', '--kubeconfig', path.join(root, 'kubeconfig'), '--node-name', NODE, '--device-plugins-dir', devicePlugins,
		'--sysfs', path.join(node, 'sys'), '--devfs', path.join(node, 'dev'), '--config', cfg];
	const split = await run(once);
	assert.equal(split.status, 0, split.stderr);
	const published = [...api.slices.values()].filter((s) => s.spec.nodeName === NODE && s.spec.driver === DRIVER)
		.flatMap((s) => s.spec.devices.map((d) => d.attributes.linkLayer.string));
	assert.ok(published.length > 0);
	assert.deepEqual(published.filter((l) => l !== 'Ethernet'), [], 'only the RoCE resource\'s devices');
	// the plugin still serving the resource the config now gives the driver: refused, by name
	const fake2 = net.createServer().listen(path.join(devicePlugins, 'rdmak-rdma_roce.sock'));
	await new Promise((r) => fake2.once('listening', r));
	const refused2 = await run(once);
	assert.equal(refused2.status, 1);
	assert.match(refused2.stderr, /rdmak plugin serves a resource the config gives the driver .*rdmak-rdma_roce.sock/);
	await new Promise((r) => fake2.close(r));
	// a device in a resource of each: refused by name, nothing written
	fs.writeFileSync(cfg, JSON.stringify({ configList: [
		{ resourceName: 'rdma_a100', rdmaHcaMax: 4, selectors: { linkTypes: ['infiniband', 'ether'] } },
		{ resourceName: 'roce', rdmaHcaMax: 4, servedBy: 'dra', selectors: { linkTypes: ['ether'] } }] }));
	const before = JSON.stringify([...api.slices.entries()]);
	const both = await run(once);
	assert.equal(both.status, 2);
	assert.match(both.stderr, /rdma\/rdma_a100 \(configList\[0\], the device plugin's\) and rdma\/roce \(configList\[1\], servedBy "dra"\) both select mlx5_bond_0/);
	assert.equal(JSON.stringify([...api.slices.entries()]), before);
	await new Promise((r) => fake.close(r));
	// --once publishes and exits
	const o = await run(['dra', '--once', '--device-plugins-dir', devicePlugins, '--kubeconfig', path.join(root, 'kubeconfig'), '--node-name', NODE, '--sysfs', path.join(node, 'sys'), '--devfs', path.join(node, 'dev')]);
	assert.equal(o.status, 0, o.stderr);
	assert.equal([...api.slices.values()].filter((s) => s.spec.nodeName === NODE && s.spec.driver === DRIVER).length, 2);
	assert.deepEqual(api.invalid, []);
});

test('--config edited while the driver runs: the new split published, a refused one said and the running one kept', async () => {
	const cfg = path.join(root, 'plugin-config-live.json');
	const write = (ibServedBy, roceLinks = ['ether']) => fs.writeFileSync(cfg + '.new', JSON.stringify({ configList: [
		{ resourceName: 'rdma_a100', rdmaHcaMax: 4, ...(ibServedBy ? { servedBy: ibServedBy } : {}), selectors: { linkTypes: ['infiniband'] } },
		{ resourceName: 'roce', rdmaHcaMax: 4, servedBy: 'dra', selectors: { linkTypes: roceLinks } }] }));
	const swap = () => fs.renameSync(cfg + '.new', cfg);
	const published = () => [...api.slices.values()].filter((s) => s.spec.nodeName === NODE && s.spec.driver === DRIVER)
		.flatMap((s) => s.spec.devices.map((d) => d.attributes.rdmaDevice.string)).sort().join(',');
	write(null);
	swap();
	driver = startDriver(['--config', cfg]);
	await until('only the driver\'s resource published', () => published() === 'mlx5_bond_0');
	// the IB resource moves to the driver
	write('dra');
	swap();
	await until('the IB device published too', () => published() === 'mlx5_1,mlx5_bond_0');
	assert.match(driver.err(), /config .*plugin-config-live.json reloaded: 2 device\(s\)/);
	// a config giving mlx5_1 to both: refused, the running split kept
	write(null, ['ether', 'infiniband']);
	swap();
	await until('the refusal', () => /new config refused, keeping the running one: rdma\/rdma_a100 \(configList\[0\], the device plugin's\) and rdma\/roce \(configList\[1\], servedBy "dra"\) both select mlx5_1/.test(driver.err()));
	assert.equal(published(), 'mlx5_1,mlx5_bond_0', 'the running split kept');
	// and a good one taken again: the IB resource back to the plugin
	write(null);
	swap();
	await until('the IB device no longer published', () => published() === 'mlx5_bond_0');
	await stopDriver();
	assert.deepEqual(api.invalid, []);
});
