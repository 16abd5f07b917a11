// SPDX-License-Identifier: Apache-2.0
// The chart as a cluster's security review reads it: the Pod Security level each part needs
// (judged by tests/js/pss.mjs from the published controls) is the one docs/deploy.md states,
// a release of only the webhook and etcd passes `restricted`, and the `helm test` Job reaches
// tainted GPU nodes.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { ALL_ON, helmRun, CHART, render } from './chart.mjs';
import { TOP } from './kubelet.mjs';
import { level, podTemplate, WORKLOADS } from './pss.mjs';

const EVERY_PART = [...ALL_ON, '--set', 'vf.enabled=true', '--set', 'dra.enabled=true', '--set', 'dra.nodeSelector.rdmak-dra=on'];
const partOf = (obj) => obj.metadata.labels?.['app.kubernetes.io/component'] + (obj.kind === 'Job' ? '-pod' : '');

// the table of docs/deploy.md's "Pod Security admission" section: part -> level
function documentedLevels() {
	const md = fs.readFileSync(path.join(TOP, 'docs', 'deploy.md'), 'utf8');
	const sec = md.split('\n## ').find((s) => s.startsWith('Pod Security admission'));
	assert.ok(sec, 'docs/deploy.md has a "Pod Security admission" section');
	const rows = sec.split('\n').filter((l) => /^\| [a-z-]+ \| (privileged|baseline|restricted) \|/.test(l));
	return Object.fromEntries(rows.map((l) => l.split('|').slice(1, 3).map((c) => c.trim())));
}

test('every part needs exactly the Pod Security level docs/deploy.md states', () => {
	const want = documentedLevels();
	const got = {};
	for (const obj of render([], EVERY_PART)) {
		if (!WORKLOADS.includes(obj.kind)) continue;
		const l = level(podTemplate(obj));
		got[partOf(obj)] = l.level;
		assert.equal(l.level, want[partOf(obj)], `${obj.kind} ${obj.metadata.name}: ${JSON.stringify(l.why)}`);
	}
	assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort(), 'the table names every part the chart renders');
});

test('the judge of the levels can fail: a hostPath, hostNetwork, an added capability or a root user each raise a pod\'s level', () => {
	const webhook = render([], ['--set', 'webhook.enabled=true', '--set', 'webhook.tls.mode=helm']).find((o) => o.kind === 'Deployment');
	const t = podTemplate(webhook);
	assert.equal(level(t).level, 'restricted');
	const variant = (f) => {
		const c = structuredClone(t);
		f(c.spec);
		return level(c).level;
	};
	assert.equal(variant((s) => s.volumes.push({ name: 'h', hostPath: { path: '/sys' } })), 'privileged');
	assert.equal(variant((s) => (s.hostNetwork = true)), 'privileged');
	assert.equal(variant((s) => (s.containers[0].securityContext.capabilities.add = ['NET_ADMIN'])), 'privileged');
	assert.equal(variant((s) => (s.containers[0].securityContext.runAsUser = 0)), 'baseline');
	assert.equal(variant((s) => delete s.containers[0].securityContext.allowPrivilegeEscalation), 'baseline');
	assert.equal(variant((s) => (s.containers[0].securityContext.capabilities.drop = [])), 'baseline');
});

test('a release of only the webhook and etcd passes restricted, for a namespace that enforces it', () => {
	const docs = render([], ['--set', 'plugin.enabled=false', '--set', 'cni.enabled=false', '--set', 'doctor.enabled=false',
		'--set', 'doctor.job.enabled=false', '--set', 'webhook.enabled=true', '--set', 'etcd.enabled=true']);
	const pods = docs.filter((o) => WORKLOADS.includes(o.kind));
	assert.deepEqual(pods.map((o) => o.kind).sort(), ['Deployment', 'StatefulSet']);
	for (const o of pods) assert.equal(level(podTemplate(o)).level, 'restricted', `${o.kind} ${o.metadata.name}`);
});

test('the helm test Job tolerates what doctor.job.tolerations says (by default every taint, as the node parts do)', () => {
	const job = (extra) => render([], extra).find((o) => o.kind === 'Job');
	assert.deepEqual(job([]).spec.template.spec.tolerations, [{ operator: 'Exists' }]);
	const gpu = [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }];
	assert.deepEqual(job(['--set-json', `doctor.job.tolerations=${JSON.stringify(gpu)}`]).spec.template.spec.tolerations, gpu);
	assert.equal(job(['--set-json', 'doctor.job.tolerations=[]']).spec.template.spec.tolerations, undefined);
	const bad = helmRun(['template', 'rdmak', CHART, '--set-json', 'doctor.job.tolerations=[{"operator":"Maybe"}]']);
	assert.notEqual(bad.status, 0);
	assert.match(bad.stderr, /doctor\.job\.tolerations\.0\.operator/);
});
