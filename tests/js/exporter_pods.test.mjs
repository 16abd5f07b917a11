// SPDX-License-Identifier: Apache-2.0
// `rdmak exporter`'s pod attribution against a stand-in kubelet serving the published
// PodResources v1 proto (podresources.mjs) on the cx5-roce-sriov sample node: pods that hold
// VFs (PCI addresses) get k8s_namespace_name, k8s_pod_name and k8s_container_name labels on
// their devices' series, the pods sharing the PFs through a shared resource (rdmak plugin's
// config) are rdmak_device_pod_info series, the answer is cached (no List per scrape), a kubelet that goes away or hangs never
// fails a scrape and is logged once.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { SAMPLE as NODE, find, killExporters, once, parse, promtoolCheck, scrape, serve } from './exporter.mjs';
import { TOP } from './kubelet.mjs';
import { PodResources, samplePods } from './podresources.mjs';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-exp-pods-'));
const sock = path.join(root, 'pod-resources', 'kubelet.sock');
const cfg = path.join(root, 'plugin.json');
fs.writeFileSync(cfg, JSON.stringify({
	configList: [{ resourceName: 'shared_cx5', rdmaHcaMax: 100, selectors: { ifNames: ['enp27s0f0np0', 'enp27s0f1np1'] } }],
}));
after(() => {
	killExporters();
	fs.rmSync(root, { recursive: true, force: true });
});

test('VFs a pod holds carry its labels; the pods sharing the PFs are rdmak_device_pod_info series', async () => {
	const s = new PodResources(sock);
	s.pods = samplePods();
	await s.start();
	try {
		const r = await once(NODE, ['--pod-resources', sock, '--plugin-config', cfg]);
		assert.equal(r.code, 0, r.err);
		const m = parse(r.out);
		const rx = 'node_infiniband_port_data_received_bytes_total';
		// 0000:1b:00.2 and .3 are mlx5_2 and mlx5_3 (VFs 0 and 1 of PF 0), 0000:1b:02.2 is mlx5_14
		for (const [dev, pod] of [['mlx5_2', 'trainer-0'], ['mlx5_3', 'trainer-0'], ['mlx5_14', 'trainer-1']]) {
			assert.equal(find(m, rx, { device: dev, port: '1', k8s_namespace_name: 'ml', k8s_pod_name: pod, k8s_container_name: 'trainer' }).length, 1, `${dev}: ${pod}'s labels`);
			assert.equal(find(m, 'rdmak_port_info', { device: dev, k8s_pod_name: pod }).length, 1, `${dev}: on rdmak_port_info too`);
			assert.equal(find(m, 'node_infiniband_state_id', { device: dev, k8s_pod_name: pod }).length, 1, `${dev}: on the port state too`);
			assert.equal(find(m, 'rdmak_device_pod_info', { device: dev, k8s_namespace_name: 'ml', k8s_pod_name: pod, k8s_container_name: 'trainer', resource: 'nvidia.com/cx5_vf' }).length, 1);
		}
		// the PFs (shared): no pod labels on their counters; a VF nobody holds: no series of its
		// own (--vf-series held: summed into its PF's rdmak_idle_vfs_*, exporter_series.test.mjs)
		for (const dev of ['mlx5_0', 'mlx5_1']) {
			const ser = find(m, rx, { device: dev });
			assert.equal(ser.length, 1, dev);
			assert.equal(ser[0].labels.k8s_pod_name, undefined, `${dev}: no pod label`);
		}
		assert.equal(find(m, rx, { device: 'mlx5_4' }).length, 0, 'mlx5_4, held by no pod: summed');
		for (const dev of ['mlx5_0', 'mlx5_1'])
			for (const pod of ['bench', 'bench2'])
				assert.equal(find(m, 'rdmak_device_pod_info', { device: dev, k8s_namespace_name: 'perf', k8s_pod_name: pod, k8s_container_name: 'ib', resource: 'rdma/shared_cx5' }).length, 1, `${dev} shared by ${pod}`);
		assert.equal(find(m, 'rdmak_device_pod_info', {}).length, 3 + 4, 'one series per (device, holder), none for the GPU pod');
		assert.equal(find(m, 'rdmak_exporter_pod_resources_up', {})[0].value, '1');
		assert.equal(s.calls, 1);
		// with every VF's series, the idle one has no pod label
		const all = parse((await once(NODE, ['--pod-resources', sock, '--plugin-config', cfg, '--vf-series', 'all'])).out);
		assert.equal(find(all, rx, { device: 'mlx5_4' }).length, 1, '--vf-series all: mlx5_4 served');
		assert.equal(find(all, rx, { device: 'mlx5_4' })[0].labels.k8s_pod_name, undefined, 'mlx5_4: no pod label');
		// promtool reads it as valid exposition (label sets differ within a family)
		promtoolCheck(r.out);

		// without the plugin's config the shared resource's ids ("7", "12") name no HCA
		const bare = parse((await once(NODE, ['--pod-resources', sock])).out);
		assert.equal(find(bare, 'rdmak_device_pod_info', { resource: 'rdma/shared_cx5' }).length, 0);
		assert.equal(find(bare, 'rdmak_device_pod_info', { resource: 'nvidia.com/cx5_vf' }).length, 3);
	} finally {
		await s.stop();
	}
});

test('exclusive RDMA netns mode: VFs moved into the pod are read in its namespace and carry its labels', async () => {
	// the node as the kernel shows it once the RDMA CNI moved trainer-0's VFs into its pod
	const split = path.join(root, 'split');
	const cp = spawnSync('cp', ['-a', NODE, split], { encoding: 'utf8' }); // device nodes too
	assert.equal(cp.status, 0, cp.stderr);
	fs.mkdirSync(path.join(root, 'ns'));
	const py = spawnSync('python3', [path.join(TOP, 'tests', 'helpers', 'netns_view.py'), split,
		path.join(root, 'ns', 'cni-trainer0'), 'mlx5_2=net1', 'mlx5_3=net2'], { encoding: 'utf8' });
	assert.equal(py.status, 0, py.stderr);
	const s = new PodResources(sock);
	s.pods = samplePods();
	await s.start();
	try {
		const r = await once(split, ['--pod-resources', sock, '--netns-sysfs', path.join(root, 'ns')]);
		assert.equal(r.code, 0, r.err);
		const m = parse(r.out);
		const rx = 'node_infiniband_port_data_received_bytes_total';
		for (const dev of ['mlx5_2', 'mlx5_3']) {
			assert.equal(find(m, rx, { device: dev, port: '1', netns: 'cni-trainer0', k8s_namespace_name: 'ml', k8s_pod_name: 'trainer-0', k8s_container_name: 'trainer' }).length, 1, `${dev}: the pod's labels and its namespace`);
			assert.equal(find(m, 'rdmak_device_pod_info', { device: dev, k8s_pod_name: 'trainer-0', resource: 'nvidia.com/cx5_vf' }).length, 1, `${dev}: rdmak_device_pod_info`);
		}
		// trainer-1's VF was not moved (the host still sees it): labels as before, no netns
		const vf = find(m, rx, { device: 'mlx5_14', k8s_pod_name: 'trainer-1' });
		assert.equal(vf.length, 1);
		assert.equal(vf[0].labels.netns, undefined);
	} finally {
		await s.stop();
	}
});

test('cached: no List per scrape; a changed answer shows after the max age; a kubelet gone or hanging never fails a scrape', async () => {
	const s = new PodResources(sock);
	s.pods = samplePods();
	await s.start();
	// every VF's series: a VF's labels come and go, the series stay (held: exporter_series.test.mjs)
	const e = await serve(NODE, ['--pod-resources', sock, '--pod-resources-max-age', '400', '--vf-series', 'all']);
	try {
		let r = await scrape(e.port);
		assert.equal(r.status, 200);
		assert.equal(find(r.series, 'rdmak_device_pod_info', { device: 'mlx5_14', k8s_pod_name: 'trainer-1' }).length, 1);
		const calls = s.calls;
		assert.equal(calls, 1);
		// three scrapes at once, within the max age: the cached answer
		await Promise.all([scrape(e.port), scrape(e.port)]);
		assert.ok(s.calls <= 2, `${s.calls} List calls for 3 scrapes`);

		// trainer-1 is gone: after the max age a scrape asks again
		s.pods = samplePods().filter((p) => p.name !== 'trainer-1');
		await new Promise((res) => setTimeout(res, 600));
		r = await scrape(e.port);
		assert.equal(find(r.series, 'rdmak_device_pod_info', { device: 'mlx5_14' }).length, 0, 'trainer-1 dropped');
		assert.equal(find(r.series, 'node_infiniband_port_data_received_bytes_total', { device: 'mlx5_14' })[0].labels.k8s_pod_name, undefined);
		assert.equal(find(r.series, 'node_infiniband_port_data_received_bytes_total', { device: 'mlx5_2' })[0].labels.k8s_pod_name, 'trainer-0');

		// the kubelet goes away: scrapes answer, without pod labels, said once in the log
		await s.stop();
		for (let i = 0; i < 3; i++) {
			await new Promise((res) => setTimeout(res, 500));
			r = await scrape(e.port);
			assert.equal(r.status, 200);
			assert.equal(find(r.series, 'rdmak_exporter_pod_resources_up', {})[0].value, '0');
			assert.equal(find(r.series, 'node_infiniband_port_data_received_bytes_total', { device: 'mlx5_2' })[0].labels.k8s_pod_name, undefined, 'no stale labels');
		}
		assert.ok(Number(find(r.series, 'rdmak_exporter_pod_resources_failures_total', {})[0].value) >= 2);
		await new Promise((res) => setTimeout(res, 1200)); // the loop looks every second
		assert.equal((e.log().match(/pod attribution off/g) || []).length, 1, e.log());

		// back, then hanging: the deadline ends the call, the scrape answers
		s.pods = samplePods();
		await s.start();
		await new Promise((res) => setTimeout(res, 500));
		r = await scrape(e.port);
		assert.equal(find(r.series, 'rdmak_exporter_pod_resources_up', {})[0].value, '1');
		s.hang = true;
		await new Promise((res) => setTimeout(res, 500));
		r = await scrape(e.port);
		assert.equal(r.status, 200);
		assert.equal(find(r.series, 'rdmak_exporter_pod_resources_up', {})[0].value, '0');
	} finally {
		e.p.kill('SIGTERM');
		await s.stop();
	}
});
