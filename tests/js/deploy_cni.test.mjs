// SPDX-License-Identifier: Apache-2.0
// The chart's CNI installer DaemonSet (deploy/chart/rdmak, templates/cni.yaml, rendered by helm) and
// the NetworkAttachmentDefinitions (deploy/cni-nad-*.yaml) are valid Kubernetes objects
// (kubernetes-models' validators; the NAD CRD's published schema, with unknown fields refused rather
// than pruned), the DaemonSet agrees with the installer, the Dockerfile and the Makefile, each NAD's
// resourceName is a resource `rdmak plugin` advertises on a sample node with the config the NAD's
// comment names, and each NAD's CNI config is one rdmak-cni accepts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { DaemonSet } from 'kubernetes-models/apps/v1';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1';
import { ObjectMeta } from '@kubernetes-models/apimachinery/apis/meta/v1/ObjectMeta';
import YAML from 'yaml';
import { one, render } from './chart.mjs';
import { TOP } from './kubelet.mjs';

const RDMAK = process.env.RDMAK || path.join(TOP, 'build', 'rdmak');
const BUILD = process.env.BUILD || path.join(TOP, 'build');
const NODES = process.env.NODES || path.join(TOP, 'examples', 'nodes');
const readDocs = (file) => YAML.parseAllDocuments(fs.readFileSync(file, 'utf8')).map((d) => d.toJS()).filter(Boolean);
const deploy = (name) => readDocs(path.join(TOP, 'deploy', name));
const NAD_FILES = ['cni-nad-seed003-hostdev.yaml', 'cni-nad-seed004-roce.yaml', 'cni-nad-seed004-ib.yaml'];

// A structural OpenAPI v3 check as the API server applies a CRD schema (type, properties), except
// that a field the schema does not know is an error here: the API server would silently prune it,
// which for a NAD means a config the user wrote that Multus never sees.
function checkSchema(schema, value, where, errors) {
	const t = schema.type;
	const actual = Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value;
	if (t && t !== actual) {
		errors.push(`${where}: ${actual}, want ${t}`);
		return errors;
	}
	if (t === 'object' && schema.properties && where !== '.metadata') {
		for (const [k, v] of Object.entries(value)) {
			if (!(k in schema.properties)) errors.push(`${where}.${k}: not in the schema`);
			else checkSchema(schema.properties[k], v, `${where}.${k}`, errors);
		}
	}
	return errors;
}

const crd = new CustomResourceDefinition(readDocs(path.join(TOP, 'tests', 'fixtures', 'cni', 'nad-crd.yaml'))[0]);
const nadSchema = crd.spec.versions.find((v) => v.name === 'v1').schema.openAPIV3Schema;

function validateNad(doc) {
	assert.equal(doc.apiVersion, `${crd.spec.group}/v1`);
	assert.equal(doc.kind, crd.spec.names.kind);
	new ObjectMeta(doc.metadata).validate();
	assert.match(doc.metadata.name, /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'a DNS-1123 label');
	assert.deepEqual(checkSchema(nadSchema, doc, '', []), []);
}

test('the NAD CRD fixture is itself a valid CustomResourceDefinition', () => {
	crd.validate();
	assert.equal(crd.metadata.name, `${crd.spec.names.plural}.${crd.spec.group}`);
});

test('the chart\'s rdmak-cni DaemonSet is valid and agrees with the Dockerfile and the Makefile', () => {
	const docs = render();
	const ds = new DaemonSet(one(docs, 'DaemonSet', 'rdmak-cni'));
	ds.validate();
	const spec = ds.spec.template.spec;
	const c = spec.containers[0];
	const arg = (name) => c.args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
	const mounts = Object.fromEntries(c.volumeMounts.map((m) => [m.name, m]));
	const vols = Object.fromEntries(spec.volumes.map((v) => [v.name, v]));
	// where the script writes (host root + path on the host) is where the host folder is mounted
	assert.equal(mounts['cni-bin'].mountPath, path.join(arg('host-root'), arg('cni-dir')));
	assert.equal(vols['cni-bin'].hostPath.path, arg('cni-dir'));
	assert.ok(c.args.includes('--wait'), 'the container stays up after installing');
	// rdmak-ipam's node for perNodeBlockSize: the downward API's node name, which the installer
	// writes where the plugin reads it (src/ipam/store.h IPAM_NODE_NAME_FILE)
	const nodeEnv = c.env.find((e) => e.name === 'RDMAK_NODE_NAME');
	assert.equal(nodeEnv?.valueFrom?.fieldRef?.fieldPath, 'spec.nodeName');
	// the bundle's place on the host is the one the relocated binary was linked for
	const reloc = fs.readFileSync(path.join(TOP, 'Makefile'), 'utf8').match(/^RELOC\s*\?=\s*(\S+)/m)[1];
	assert.equal(vols['rdmak-opt'].hostPath.path, reloc);
	assert.equal(mounts['rdmak-opt'].mountPath, path.join(arg('host-root'), reloc));
	// the installer is rdmak's own (the image has no shell), and the Dockerfile's image has the bundle
	assert.deepEqual(c.command, ['rdmak', 'cni', 'install']);
	const dockerfile = fs.readFileSync(path.join(TOP, 'deploy', 'Dockerfile'), 'utf8');
	assert.match(dockerfile, /deploy\/bundle\.sh build\/reloc\/rdmak \/opt\/rdmak --cni build\/reloc\/rdmak-cni/);
	// unprivileged, as the comments say; on the nodes where the device plugin runs
	assert.equal(c.securityContext.privileged, false);
	assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']);
	assert.equal(c.securityContext.readOnlyRootFilesystem, true);
	assert.ok(c.resources.requests.cpu && c.resources.limits.memory);
	const plugin = one(docs, 'DaemonSet', 'rdmak-plugin');
	assert.deepEqual(spec.nodeSelector, plugin.spec.template.spec.nodeSelector);
	// another CNI_PATH moves the hostPath, the mount and the installer's argument together
	const k3s = one(render([], ['--set', 'cniBinDir=/var/lib/rancher/k3s/data/current/bin']), 'DaemonSet', 'rdmak-cni').spec.template.spec;
	const k3sArg = k3s.containers[0].args.find((a) => a.startsWith('--cni-dir=')).slice('--cni-dir='.length);
	assert.equal(k3sArg, '/var/lib/rancher/k3s/data/current/bin');
	assert.equal(k3s.volumes.find((v) => v.name === 'cni-bin').hostPath.path, k3sArg);
	assert.equal(k3s.containers[0].volumeMounts.find((m) => m.name === 'cni-bin').mountPath, path.join('/host', k3sArg));
});

// which plugin config declares each NAD file's resources, and the sample node it is checked on
const RESOURCE_SOURCES = {
	'cni-nad-seed003-hostdev.yaml': { config: { chart: 'seed003' }, node: 'cx5-roce-sriov' },
	'cni-nad-seed004-roce.yaml': { config: { file: 'examples/plugin/sriov-roce.json' }, node: 'cx5-roce-sriov' },
	'cni-nad-seed004-ib.yaml': { config: { file: 'examples/plugin/rails-ib-seed004.json' }, node: 'cx7-rail-1016vf' },
};

function advertised(src, dir) {
	let file;
	if (src.config.chart) {
		// the plugin config the chart renders with tests/fixtures/chart/<seed>.yaml
		file = path.join(dir, 'config.json');
		fs.writeFileSync(file, one(render([src.config.chart]), 'ConfigMap', 'rdmak-plugin').data['config.json']);
	} else {
		file = path.join(TOP, src.config.file);
	}
	const r = spawnSync(RDMAK, ['plugin', '--dry-run', '--json', '--root', path.join(NODES, src.node), '--config', file], { encoding: 'utf8' });
	assert.equal(r.status, 0, r.stderr);
	return Object.fromEntries(JSON.parse(r.stdout).resources.map((x) => [x.resource, x.advertised]));
}

for (const file of NAD_FILES) {
	test(`${file}: valid NetworkAttachmentDefinitions of rdmak-cni, each tied to an advertised resource`, () => {
		const docs = deploy(file);
		assert.ok(docs.length === 1 || docs.length === 8, `one network or eight rails (${docs.length})`);
		const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-nad-'));
		try {
			const adv = advertised(RESOURCE_SOURCES[file], dir);
			const subnets = new Set();
			for (const doc of docs) {
				validateNad(doc);
				const conf = JSON.parse(doc.spec.config);
				assert.equal(conf.type, 'rdmak-cni');
				assert.equal(conf.name, doc.metadata.name, 'the CNI network name is the NAD name');
				assert.equal(conf.ipam.type, 'rdmak-ipam');
				const range = conf.ipam.range || conf.ipam.ranges[0][0].subnet;
				assert.ok(!subnets.has(range), `each rail its own subnet (${range})`);
				subnets.add(range);
				const res = doc.metadata.annotations['k8s.v1.cni.cncf.io/resourceName'];
				if (file.endsWith('roce.yaml') && !/gpu[12]sriov$/.test(res)) {
					// seed 004's RoCE rails 3-8: no sample node has more than two SR-IOV RoCE PFs
					// (cx5-roce-sriov, rails 1-2 below), so these only follow the naming
					assert.match(res, /^spidernet\.io\/gpu[3-8]sriov$/);
					continue;
				}
				assert.ok(res in adv, `${res} is declared by ${JSON.stringify(RESOURCE_SOURCES[file].config)}`);
				assert.ok(adv[res] > 0, `${res} advertised on ${RESOURCE_SOURCES[file].node}`);
			}
			if (docs.length === 8) {
				const names = docs.map((d) => d.metadata.annotations['k8s.v1.cni.cncf.io/resourceName']);
				assert.equal(new Set(names).size, 8, 'eight rails, eight resources');
			}
		} finally {
			fs.rmSync(dir, { recursive: true, force: true });
		}
	});
}

// What Multus adds before it calls the plugin: the device plugin's allocation as "deviceID" (for
// a NAD with a resourceName) and, for a network with the capability, the pod's InfiniBand GUID.
function asMultusSendsIt(conf) {
	const c = { ...conf, deviceID: '0000:1b:00.2' };
	if (c.capabilities?.infinibandGUID) c.runtimeConfig = { infinibandGUID: '02:00:00:00:00:00:00:01' };
	return c;
}

function confCheck(confs) {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-nadconf-'));
	try {
		const files = confs.map((c, i) => {
			const f = path.join(dir, `${i}-${c.name}.json`);
			fs.writeFileSync(f, JSON.stringify(c));
			return f;
		});
		return spawnSync(path.join(BUILD, 'tests', 'helpers', 'cni_conf_check'), files, { encoding: 'utf8' });
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
}

test("every NAD's config passes rdmak-cni's and rdmak-ipam's own validation", () => {
	const confs = NAD_FILES.flatMap((f) => deploy(f)).map((d) => asMultusSendsIt(JSON.parse(d.spec.config)));
	assert.equal(confs.length, 17);
	const r = confCheck(confs);
	assert.equal(r.status, 0, r.stdout + r.stderr);
	assert.equal(r.stdout.split('\n').filter((l) => l.endsWith(': ok')).length, 17);
	// and the check does refuse: a hostdev network Multus gave no device, a key rdmak-cni lacks
	const bad = confCheck([JSON.parse(deploy(NAD_FILES[0])[0].spec.config), { ...confs[0], vlanTag: 7 }]);
	assert.equal(bad.status, 1);
	assert.match(bad.stdout, /code 7: .*deviceID/);
	assert.match(bad.stdout, /code 2: .*vlanTag/);
});

test('the NAD check refuses a broken object', () => {
	const doc = deploy('cni-nad-seed003-hostdev.yaml')[0];
	assert.throws(() => validateNad({ ...doc, spec: { config: JSON.parse(doc.spec.config) } }), /config: object, want string/);
	assert.throws(() => validateNad({ ...doc, spec: { ...doc.spec, plugin: 'x' } }), /spec\.plugin: not in the schema/);
	assert.throws(() => validateNad({ ...doc, metadata: { ...doc.metadata, name: 'Bad_Name' } }));
});
