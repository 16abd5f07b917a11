// SPDX-License-Identifier: Apache-2.0
// What `rdmak convert` writes (the golden outputs under tests/fixtures/convert, which
// tests/cmd/convert.sh keeps equal to what the binary prints), checked by the peers that will
// read it: every NetworkAttachmentDefinition against the NAD CRD's schema (k8s.cni.cncf.io/v1:
// metadata naming rules, spec.config a string holding a CNI network config, as Multus reads
// it), and every chart-values document through a real `helm template` of deploy/chart/rdmak,
// so values.schema.json checks it and the plugin config lands in the plugin's ConfigMap
// unchanged.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import YAML from 'yaml';
import { CHART, helmRun, one } from './chart.mjs';
import { TOP } from './kubelet.mjs';

const FX = path.join(TOP, 'tests', 'fixtures', 'convert');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-convert-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const outputs = fs.readdirSync(FX).filter((f) => f.endsWith('.out.yaml')).sort();
const docsOf = (f) => YAML.parseAllDocuments(fs.readFileSync(path.join(FX, f), 'utf8')).map((d) => {
	if (d.errors.length) throw new Error(`${f}: ${d.errors[0].message}`);
	return d.toJS();
}).filter(Boolean);

// apimachinery's rules: a DNS-1123 subdomain (an object's name) and label (a namespace)
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

test('the golden outputs are there to check', () => {
	assert.ok(outputs.length >= 8, `${outputs.length} outputs under ${FX}`);
});

test('every NetworkAttachmentDefinition is one the NAD CRD and Multus accept', () => {
	let n = 0;
	for (const f of outputs)
		for (const d of docsOf(f).filter((x) => x.kind === 'NetworkAttachmentDefinition')) {
			const at = `${f}: ${d.metadata?.name}`;
			assert.equal(d.apiVersion, 'k8s.cni.cncf.io/v1', at);
			assert.match(d.metadata.name, SUBDOMAIN, at);
			assert.ok(d.metadata.name.length <= 253, at);
			if (d.metadata.namespace !== undefined) assert.match(d.metadata.namespace, LABEL, at);
			for (const [k, v] of Object.entries(d.metadata.annotations ?? {})) assert.equal(typeof v, 'string', `${at}: annotation ${k}`);
			for (const [k, v] of Object.entries(d.metadata.labels ?? {})) {
				assert.equal(typeof v, 'string', `${at}: label ${k}`);
				assert.ok(v.length <= 63, `${at}: label ${k}`);
			}
			// the CRD's schema: spec.config is a string; Multus parses it as a CNI config
			assert.deepEqual(Object.keys(d.spec), ['config'], at);
			assert.equal(typeof d.spec.config, 'string', at);
			const conf = JSON.parse(d.spec.config);
			assert.equal(conf.type, 'rdmak-cni', at);
			assert.match(conf.cniVersion, /^\d+\.\d+\.\d+$/, at);
			assert.equal(conf.name, d.metadata.name, `${at}: the network's name is the NAD's`);
			n++;
		}
	assert.ok(n >= 6, `${n} NADs checked`);
});

test('every chart-values document renders with the chart (values.schema.json) and carries its plugin config unchanged', () => {
	let n = 0;
	for (const f of outputs)
		for (const [i, d] of docsOf(f).entries()) {
			if (d.kind !== undefined) continue;
			const values = path.join(dir, `${f}.${i}.yaml`);
			fs.writeFileSync(values, YAML.stringify(d));
			const r = helmRun(['template', 'rdmak', CHART, '--namespace', 'rdmak', '-f', values]);
			assert.equal(r.status, 0, `${f} document ${i}: helm template: ${r.stderr}`);
			const docs = YAML.parseAllDocuments(r.stdout).map((x) => x.toJS()).filter(Boolean);
			if (d.plugin?.config) {
				const ds = one(docs, 'DaemonSet', 'rdmak-plugin');
				const cm = one(docs, 'ConfigMap', ds.spec.template.spec.volumes.find((v) => v.name === 'config').configMap.name);
				assert.deepEqual(JSON.parse(cm.data['config.json']), d.plugin.config, `${f}: the plugin config in the ConfigMap`);
			}
			n++;
		}
	assert.ok(n >= 2, `${n} values documents rendered`);
});
