// SPDX-License-Identifier: Apache-2.0
// `rdmak webhook` as the API server sees it: AdmissionReviews built from the seeds' pods
// (tests/fixtures/webhook: seed 002's test pods, seed 003's vLLM Volcano job and hostdev pod,
// seed 004's rdma-tools DaemonSet pod) sent over HTTPS by Node's `https`, which verifies the
// server certificate against a CA made here by openssl; the patch applied with fast-json-patch
// and the result validated as a Pod by kubernetes-models. Then the merge cases, idempotency and
// the refusals. One server for the file, tests in order.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import {
	FIXTURES, applyReviewPatch, loadYaml, makePki, post, review, startWebhook, validPod,
} from './webhookserver.mjs';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-webhook-'));
let pki;
let wh;
let agent;

before(async () => {
	pki = makePki(path.join(dir, 'pki'));
	wh = await startWebhook({ config: path.join(FIXTURES, 'config.yaml'), cert: pki.cert, key: pki.key, args: ['-v'] });
	agent = new https.Agent({ keepAlive: true, maxSockets: 4 });
});

after(async () => {
	agent?.destroy();
	await wh?.stop();
	fs.rmSync(dir, { recursive: true, force: true });
});

// One admission round trip: the response, and the pod as the API server would store it.
async function admit(pod, opts = {}) {
	const rv = review(pod, opts);
	const r = await post(wh.port, pki.ca, rv, { agent });
	assert.equal(r.status, 200, r.body);
	assert.equal(r.json.apiVersion, 'admission.k8s.io/v1');
	assert.equal(r.json.kind, 'AdmissionReview');
	const resp = r.json.response;
	assert.equal(resp.uid, rv.request.uid, 'the answer carries the request uid');
	const out = applyReviewPatch(pod, resp);
	if (resp.allowed) validPod(out);
	return { resp, pod: out };
}

// The API server calls again with the output (reinvocationPolicy: IfNeeded): nothing more to do.
async function assertSecondPassEmpty(pod, opts) {
	const { resp } = await admit(pod, opts);
	assert.equal(resp.allowed, true);
	assert.equal(resp.patch, undefined, 'second pass: no patch');
	assert.equal(resp.patchType, undefined);
}

const ctr = (pod, i = 0) => pod.spec.containers[i];
const nets = (pod) => JSON.parse(pod.metadata.annotations['k8s.v1.cni.cncf.io/networks']);

test('the server certificate verifies against the test CA; a client without the CA is refused', async () => {
	const r = await post(wh.port, pki.ca, '', { path: '/healthz', method: 'GET' });
	assert.equal(r.status, 200);
	assert.equal(r.body, 'ok\n');
	assert.equal(r.peerCert.subject.CN, 'rdmak-webhook-server');
	await assert.rejects(new Promise((resolve, reject) => {
		https.get({ host: '127.0.0.1', port: wh.port, path: '/healthz', servername: 'localhost' }, resolve).on('error', reject);
	}), /self[- ]signed|unable to verify|certificate/i);
});

test('seed 004: the rdma-tools pod with Spiderpool\'s annotation gets the seed\'s eight rails', async () => {
	const pod = loadYaml('seed004-rdma-tools-pod.yaml');
	const want = loadYaml('seed004-expected.yaml');
	const { resp, pod: out } = await admit(pod);
	assert.equal(resp.allowed, true);
	assert.equal(resp.warnings, undefined, 'no warnings: no memory limit, /dev/shm mounted');
	// the very list the seed shows after Spiderpool's webhook, same order, as a JSON list
	assert.deepEqual(nets(out), JSON.parse(want.extraAnnotations['k8s.v1.cni.cncf.io/networks']));
	for (const [res, n] of Object.entries(want.resources.limits)) {
		assert.equal(ctr(out).resources.limits[res], String(n), `limit ${res}`);
		assert.equal(ctr(out).resources.requests[res], String(n), `request ${res}`);
	}
	assert.equal(ctr(out).resources.requests.cpu, '200m', 'the chart\'s requests stay');
	assert.deepEqual(ctr(out).securityContext.capabilities.add, ['IPC_LOCK']);
	assert.deepEqual(out.spec.volumes, pod.spec.volumes, 'the chart\'s own /dev/shm (dshm) is kept, none added');
	assert.equal(out.metadata.annotations['cni.spidernet.io/rdma-resource-inject'], 'gpu-sriov');
	await assertSecondPassEmpty(out);
	await wh.waitLog(/default\/rdma-test-\*: groups gpu-sriov, container "rdma-test"/);
});

test('seed 002: the shared-device test pod gets rdma/rdma_shared_device_a, IPC_LOCK and /dev/shm', async () => {
	const pod = loadYaml('seed002-rdma-test-pod-1.yaml');
	// what a user writes with rdmak: the annotation instead of the resource and the capability
	delete ctr(pod).securityContext;
	delete ctr(pod).resources;
	pod.metadata.annotations = { 'rdmak.io/rdma-networks': 'shared-a' };
	const { resp, pod: out } = await admit(pod);
	assert.equal(resp.allowed, true);
	assert.deepEqual(ctr(out).resources, {
		limits: { 'rdma/rdma_shared_device_a': '1' }, requests: { 'rdma/rdma_shared_device_a': '1' },
	});
	assert.deepEqual(ctr(out).securityContext, { capabilities: { add: ['IPC_LOCK'] } });
	assert.deepEqual(out.spec.volumes, [{ name: 'rdmak-shm', emptyDir: { medium: 'Memory', sizeLimit: '8Gi' } }]);
	assert.deepEqual(ctr(out).volumeMounts, [{ name: 'rdmak-shm', mountPath: '/dev/shm' }]);
	assert.equal(out.metadata.annotations['k8s.v1.cni.cncf.io/networks'], undefined, 'no networks in this group');
	await assertSecondPassEmpty(out);
});

test('seed 002: the GPUDirect pod as written keeps its integer limits; requests and /dev/shm are added', async () => {
	const pod = loadYaml('seed002-rdma-gpu-test-pod-1.yaml');
	pod.metadata.annotations = { 'rdmak.io/rdma-networks': 'shared-a' };
	const { resp, pod: out } = await admit(pod);
	const ops = JSON.parse(Buffer.from(resp.patch, 'base64').toString());
	assert.ok(!ops.some((o) => o.path.includes('/limits/')), `limits untouched: ${JSON.stringify(ops)}`);
	assert.equal(ctr(out).resources.limits['rdma/rdma_shared_device_a'], 1);
	assert.equal(ctr(out).resources.requests['rdma/rdma_shared_device_a'], '1');
	assert.deepEqual(ctr(out).securityContext.capabilities.add, ['IPC_LOCK'], 'IPC_LOCK not added twice');
	await assertSecondPassEmpty(out);
});

// seed 003's Volcano job: each task's template becomes a pod, as Volcano creates them
function volcanoPods(groups, memory) {
	const job = loadYaml('seed003-vllm-volcano-job.yaml');
	return job.spec.tasks.map((t) => {
		const spec = structuredClone(t.template.spec);
		if (memory) spec.containers[0].resources.limits.memory = memory;
		return {
			apiVersion: 'v1', kind: 'Pod',
			metadata: { name: `${job.metadata.name}-${t.name}-0`, namespace: job.metadata.namespace,
				annotations: { 'rdmak.io/rdma-networks': groups } },
			spec,
		};
	});
}

test('seed 003: the vLLM Volcano pods already have what v100 needs; shared-a adds the shared HCA', async () => {
	for (const pod of volcanoPods('v100')) {
		const { resp, pod: out } = await admit(pod, { namespace: 'crater-workspace' });
		assert.equal(resp.allowed, true);
		assert.equal(resp.patch, undefined, `${pod.metadata.name}: nothing to add`);
		assert.deepEqual(out, pod);
	}
	for (const pod of volcanoPods('v100,shared-a')) {
		const { pod: out } = await admit(pod, { namespace: 'crater-workspace' });
		assert.equal(ctr(out).resources.limits['rdma/rdma_shared_device_a'], '1');
		assert.equal(ctr(out).resources.limits['nvidia.com/v100'], '4', 'the GPUs stay');
		assert.equal(ctr(out).volumeMounts.filter((m) => m.mountPath === '/dev/shm').length, 1, 'its crater-cache /dev/shm stays');
		assert.deepEqual(ctr(out).securityContext.capabilities.add, ['IPC_LOCK']);
		await assertSecondPassEmpty(out, { namespace: 'crater-workspace' });
	}
});

test('seed 003: a memory limit is kept and explained (ib_read_bw "Couldn\'t allocate MR")', async () => {
	const [pod] = volcanoPods('v100', '32Gi');
	const { resp, pod: out } = await admit(pod, { namespace: 'crater-workspace' });
	assert.equal(ctr(out).resources.limits.memory, '32Gi');
	assert.equal(resp.warnings.length, 1);
	assert.match(resp.warnings[0], /container "master" has memory limit 32Gi: .*Couldn't allocate MR/);
	assert.ok(resp.warnings[0].length <= 120, 'short enough for the API server not to cut it');
});

test('seed 003: a comma-form networks annotation is kept first and rewritten as the JSON list', async () => {
	const pod = loadYaml('seed003-testpod1.yaml');
	pod.metadata.annotations['rdmak.io/rdma-networks'] = 'gpu-sriov';
	const { pod: out } = await admit(pod, { namespace: 'crater-workspace' });
	const list = nets(out);
	assert.deepEqual(list[0], { name: 'hostdevice-net' });
	assert.deepEqual(list.slice(1).map((n) => `${n.namespace}/${n.name}`),
		[1, 2, 3, 4, 5, 6, 7, 8].map((i) => `spiderpool/gpu${i}-sriov`));
	assert.equal(ctr(out).resources.limits['nvidia.com/hostdev'], '1', 'the user\'s resources stay');
	assert.equal(ctr(out).resources.limits['spidernet.io/gpu3sriov'], '1');
	await assertSecondPassEmpty(out, { namespace: 'crater-workspace' });
});

test('merge: the same network in the pod\'s namespace is not added twice; higher limits stay', async () => {
	const pod = loadYaml('seed004-rdma-tools-pod.yaml');
	pod.metadata.namespace = 'spiderpool';
	pod.metadata.annotations['k8s.v1.cni.cncf.io/networks'] =
		'[{"name":"gpu2-sriov","interface":"rail2","ips":["10.2.0.9/16"]},{"name":"storage","namespace":"nas"}]';
	ctr(pod).resources.limits = { 'spidernet.io/gpu2sriov': '3' };
	ctr(pod).resources.requests['spidernet.io/gpu2sriov'] = '3';
	const { pod: out } = await admit(pod, { namespace: 'spiderpool' });
	const list = nets(out);
	assert.equal(list.length, 2 + 7);
	assert.deepEqual(list[0], { name: 'gpu2-sriov', interface: 'rail2', ips: ['10.2.0.9/16'] }, 'kept as written');
	assert.ok(!list.slice(2).some((n) => n.name === 'gpu2-sriov'), 'gpu2-sriov (pod namespace) counts as present');
	assert.equal(ctr(out).resources.limits['spidernet.io/gpu2sriov'], '3', 'never lowered');
	assert.equal(ctr(out).resources.requests['spidernet.io/gpu2sriov'], '3');
	assert.equal(ctr(out).resources.limits['spidernet.io/gpu1sriov'], '1');
	await assertSecondPassEmpty(out, { namespace: 'spiderpool' });
});

test('merge: the GPU container gets it, or the one rdmak.io/rdma-container names', async () => {
	const base = {
		apiVersion: 'v1', kind: 'Pod',
		metadata: { name: 'train', annotations: { 'rdmak.io/rdma-networks': 'shared-a' } },
		spec: { containers: [{ name: 'log', image: 'busybox' }, { name: 'train', image: 'pytorch', resources: { limits: { 'nvidia.com/a100': 8 } } }] },
	};
	let { pod: out } = await admit(base);
	assert.equal(out.spec.containers[0].resources, undefined);
	assert.equal(out.spec.containers[1].resources.limits['rdma/rdma_shared_device_a'], '1', 'gpuResources: nvidia.com/a100');
	const named = structuredClone(base);
	named.metadata.annotations['rdmak.io/rdma-container'] = 'log';
	({ pod: out } = await admit(named));
	assert.equal(out.spec.containers[0].resources.limits['rdma/rdma_shared_device_a'], '1');
	assert.deepEqual(out.spec.containers[0].securityContext.capabilities.add, ['IPC_LOCK']);
	assert.equal(out.spec.containers[1].securityContext, undefined);
});

test('an unknown group is refused with allowed: false, naming it; nothing is patched', async () => {
	const pod = loadYaml('seed004-rdma-tools-pod.yaml');
	pod.metadata.annotations['cni.spidernet.io/rdma-resource-inject'] = 'gpu-ibsriov';
	const { resp } = await admit(pod);
	assert.equal(resp.allowed, false);
	assert.equal(resp.status.code, 403);
	assert.equal(resp.status.message, 'rdmak webhook: annotation cni.spidernet.io/rdma-resource-inject: no group '
		+ '"gpu-ibsriov" in the webhook\'s config (it has: gpu-sriov, shared-a, v100, hostdev)');
	assert.equal(resp.patch, undefined);
	await wh.waitLog(/webhook warning: default\/rdma-test-\*: refused \(groups gpu-ibsriov\)/);
});

test('a group with onError: allow admits a pod it cannot handle, unchanged, with a warning', async () => {
	const pod = loadYaml('seed003-testpod1.yaml');
	pod.metadata.annotations['rdmak.io/rdma-networks'] = 'hostdev';
	pod.metadata.annotations['rdmak.io/rdma-container'] = 'no-such';
	const { resp, pod: out } = await admit(pod, { namespace: 'crater-workspace' });
	assert.equal(resp.allowed, true);
	assert.equal(resp.patch, undefined);
	assert.deepEqual(out, pod);
	assert.match(resp.warnings.at(-1), /no container named "no-such" .*admitted unchanged \(onError: allow\)/);
});

test('a pod without the annotation passes untouched', async () => {
	const pod = loadYaml('seed002-rdma-test-pod-1.yaml');
	const { resp } = await admit(pod);
	assert.equal(resp.allowed, true);
	assert.equal(resp.patch, undefined);
	assert.equal(resp.warnings, undefined);
});

test('another kind (a misrouted Deployment) is allowed unchanged with a warning about the rules', async () => {
	const pod = loadYaml('seed004-rdma-tools-pod.yaml');
	const { resp } = await admit(pod, { kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
		resource: { group: 'apps', version: 'v1', resource: 'deployments' } });
	assert.equal(resp.allowed, true);
	assert.equal(resp.patch, undefined);
	assert.deepEqual(resp.warnings, ['rdmak webhook mutates v1 Pods only, not apps/v1 Deployment: check its MutatingWebhookConfiguration rules']);
});

test('malformed AdmissionReviews get 400 with the field; the server keeps serving', async () => {
	const good = review(loadYaml('seed004-rdma-tools-pod.yaml'));
	const cases = [
		['{"apiVersion":', /^bad AdmissionReview: not JSON: line 1 column 14: /],
		[{ ...good, kind: 'Pod' }, /^bad AdmissionReview: kind: expected AdmissionReview, got "Pod"$/],
		[{ ...good, apiVersion: 'admission.k8s.io/v2' }, /^bad AdmissionReview: apiVersion: expected admission.k8s.io\/v1/],
		[{ ...good, request: { ...good.request, uid: undefined } }, /^bad AdmissionReview: request.uid: missing$/],
		[{ ...good, request: { ...good.request, object: 'pod' } }, /^bad AdmissionReview: request.object: expected an object, got a string$/],
		[{ ...good, request: { ...good.request, kind: { version: 1, kind: 'Pod' } } }, /^bad AdmissionReview: request.kind.version: expected a string, got an integer$/],
	];
	for (const [body, re] of cases) {
		const r = await post(wh.port, pki.ca, body, { agent });
		assert.equal(r.status, 400, r.body);
		assert.match(r.body.trim(), re);
	}
	// a review cut in the middle (the body as sent is complete HTTP, the JSON is not)
	const text = JSON.stringify(good);
	const r = await post(wh.port, pki.ca, text.slice(0, text.length / 2), { agent });
	assert.equal(r.status, 400);
	assert.match(r.body, /not JSON/);
	const ok = await post(wh.port, pki.ca, good, { agent });
	assert.equal(ok.status, 200);
});

test('HTTP: 404, 405 with Allow, 415 for another content type; /readyz answers', async () => {
	let r = await post(wh.port, pki.ca, '', { path: '/nope', method: 'GET' });
	assert.equal(r.status, 404);
	r = await post(wh.port, pki.ca, '', { path: '/mutate', method: 'GET' });
	assert.equal(r.status, 405);
	assert.equal(r.headers.allow, 'POST');
	r = await post(wh.port, pki.ca, 'x', { headers: { 'Content-Type': 'text/plain' } });
	assert.equal(r.status, 415);
	r = await post(wh.port, pki.ca, '', { path: '/readyz', method: 'GET' });
	assert.equal(r.status, 200);
});

test('SIGTERM: readyz goes, the counts are logged, exit 0 (under ASan: nothing leaked)', async () => {
	const { code, signal } = await wh.stop('SIGTERM');
	assert.equal(signal, null);
	assert.equal(code, 0, wh.logs.slice(-20).join('\n'));
	await wh.waitLog(/served \d+ requests on \d+ connections: \d+ patched, \d+ unchanged, 1 refused, 8 bad requests/);
});
