// SPDX-License-Identifier: Apache-2.0
// `rdmak bench k8s` prints two pods: valid Kubernetes Pods (kubernetes-models' OpenAPI
// validators), in YAML and as a v1 List, that keep the promises docs/bench.md makes: the RDMA
// resources, IPC_LOCK for a root container, no memory limit, a memory /dev/shm, one pod per node,
// the networks annotation, the GPU, the registry override of seed 002's offline cluster.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Pod } from 'kubernetes-models/v1';
import YAML from 'yaml';

// Not kubelet.mjs's TOP: importing it loads the kubelet proto, which this test has no use for.
const TOP = process.env.TOP || path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

const RDMAK = process.env.RDMAK || path.join(TOP, 'build', 'rdmak');
// the image is tagged with rdmak's version (tools/version.sh)
const VERSION = spawnSync(path.join(TOP, 'tools', 'version.sh'), { encoding: 'utf8' }).stdout.trim();

function k8s(...args) {
	const r = spawnSync(RDMAK, ['bench', 'k8s', ...args], { encoding: 'utf8' });
	assert.equal(r.status, 0, r.stderr);
	return r.stdout;
}

function checkPod(obj, role, node) {
	const pod = new Pod(obj);
	pod.validate(); // throws with the offending path
	assert.equal(pod.metadata.labels['rdmak.io/bench-role'], role);
	assert.equal(pod.spec.restartPolicy, 'Never');
	assert.deepEqual(pod.spec.nodeSelector, { 'kubernetes.io/hostname': node });
	const c = pod.spec.containers[0];
	assert.equal(c.securityContext.runAsUser, 0, 'IPC_LOCK is only effective for root (nvidia-container-toolkit#2037)');
	assert.deepEqual(c.securityContext.capabilities.add, ['IPC_LOCK']);
	assert.equal(c.resources.limits.memory, undefined, 'no memory limit: registered memory is charged to it (seed 003)');
	assert.equal(c.resources.requests.memory, undefined);
	assert.deepEqual(c.resources.requests, c.resources.limits);
	const shm = pod.spec.volumes.find((v) => v.name === c.volumeMounts.find((m) => m.mountPath === '/dev/shm').name);
	assert.equal(shm.emptyDir.medium, 'Memory');
	assert.deepEqual(c.command, ['sleep', 'infinity']);
	return pod;
}

test('seed 002 setup: two pods on a31 and a42 with rdma/rdma_shared_device_a (YAML)', () => {
	const text = k8s('--resource', 'rdma/rdma_shared_device_a', '--node', 'a31', '--node', 'a42', '--name', 'seed002');
	assert.match(text, /^# rdmak bench k8s: two pods/);
	assert.match(text, /kubectl exec -n default seed002-server -- rdmak bench server/);
	const docs = YAML.parseAllDocuments(text).map((d) => d.toJS());
	assert.equal(docs.length, 2);
	const s = checkPod(docs[0], 'server', 'a31');
	const c = checkPod(docs[1], 'client', 'a42');
	assert.equal(s.metadata.name, 'seed002-server');
	assert.equal(c.metadata.name, 'seed002-client');
	assert.deepEqual(s.spec.containers[0].resources.limits, { 'rdma/rdma_shared_device_a': '1' });
	assert.equal(s.spec.containers[0].image, `rdmak-bench:${VERSION}`);
	assert.equal(s.metadata.annotations, undefined);
});

test('offline registry, GPU, secondary networks, several resources (JSON List)', () => {
	const list = JSON.parse(k8s('--json', '--resource', 'spidernet.io/gpu1sriov', '--resource', 'spidernet.io/gpu2sriov=2',
		'--count', '1', '--gpu', '--networks', 'spiderpool/gpu1-sriov,spiderpool/gpu2-sriov', '--node', 'worker1',
		'--node', 'worker2', '--registry', '192.168.101.159:5000/t9kpublic', '--namespace', 'bench'));
	assert.equal(list.kind, 'List');
	const [s, c] = list.items.map((p, i) => checkPod(p, i ? 'client' : 'server', i ? 'worker2' : 'worker1'));
	for (const p of [s, c]) {
		assert.equal(p.metadata.namespace, 'bench');
		assert.deepEqual(p.spec.containers[0].resources.limits,
			{ 'spidernet.io/gpu1sriov': '1', 'spidernet.io/gpu2sriov': '2', 'nvidia.com/gpu': '1' });
		assert.equal(p.spec.containers[0].image, `192.168.101.159:5000/t9kpublic/rdmak-bench:${VERSION}`);
		assert.equal(p.metadata.annotations['k8s.v1.cni.cncf.io/networks'], 'spiderpool/gpu1-sriov,spiderpool/gpu2-sriov');
	}
	assert.match(s.metadata.name, /^rdmak-bench-[0-9a-f]{5}-server$/);
	assert.equal(c.metadata.name, s.metadata.name.replace(/-server$/, '-client'));
});

test('values YAML would misread stay strings', () => {
	const text = k8s('--resource', 'rdma/hca=2', '--node', 'n1', '--node', '2', '--networks', 'on', '--name', 'q');
	const docs = YAML.parseAllDocuments(text).map((d) => d.toJS());
	assert.equal(docs[1].spec.nodeSelector['kubernetes.io/hostname'], '2');
	assert.equal(docs[0].metadata.annotations['k8s.v1.cni.cncf.io/networks'], 'on');
	assert.equal(docs[0].spec.containers[0].resources.limits['rdma/hca'], '2');
	checkPod(docs[0], 'server', 'n1');
});
