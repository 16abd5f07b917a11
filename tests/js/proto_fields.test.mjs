// SPDX-License-Identifier: Apache-2.0
// The project's src/kubelet/deviceplugin.proto is the wire contract with the kubelet: every
// message and field of the device plugin API v1beta1, with its number, type and label, as
// k8s.io/kubelet publishes it. The published api.proto is kept as a fact source under
// tests/fixtures/anchors/kubelet (SOURCES.md: where it comes from); the project's own .proto
// leaves out the Go generation options and the services, whose method paths the transport
// names in C (src/kubelet): those are checked against the published services. The stand-in
// kubelet must load from a clone alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const TOP = process.env.TOP || path.resolve(here, '..', '..');
const PROTO = path.join(TOP, 'src', 'kubelet', 'deviceplugin.proto');

const UPSTREAM = path.join(TOP, 'tests', 'fixtures', 'anchors', 'kubelet', 'deviceplugin-v1beta1-api.proto');

// message -> field -> [number, type, rule] (rule: '' singular, 'repeated', 'map<k>')
function describe(text) {
	const { root, package: pkg } = protobuf.parse(text, { keepCase: true });
	assert.equal(pkg, 'v1beta1', 'package v1beta1 (part of every method path)');
	const ns = root.lookup('v1beta1');
	const out = {};
	for (const t of ns.nestedArray.filter((x) => x instanceof protobuf.Type)) {
		out[t.name] = {};
		for (const f of t.fieldsArray) {
			const rule = f.map ? `map<${f.keyType}>` : f.repeated ? 'repeated' : '';
			out[t.name][f.name] = [f.id, f.type, rule];
		}
	}
	return out;
}

// "/v1beta1.Service/Method" of every rpc a .proto declares
function methods(text) {
	const ns = protobuf.parse(text, { keepCase: true }).root.lookup('v1beta1');
	return ns.nestedArray
		.filter((x) => x instanceof protobuf.Service)
		.flatMap((svc) => svc.methodsArray.map((m) => `/v1beta1.${svc.name}/${m.name}`))
		.sort();
}

test('deviceplugin.proto: every v1beta1 message and field of the published api.proto', () => {
	const upstream = describe(fs.readFileSync(UPSTREAM, 'utf8'));
	assert.ok(Object.keys(upstream).length >= 20, 'the published file holds the API\'s messages');
	assert.deepEqual(describe(fs.readFileSync(PROTO, 'utf8')), upstream);
});

test('the transport serves and calls the published services\' method paths', () => {
	const kubelet = path.join(TOP, 'src', 'kubelet');
	const inC = fs.readdirSync(kubelet)
		.filter((f) => f.endsWith('.c'))
		.flatMap((f) => fs.readFileSync(path.join(kubelet, f), 'utf8').match(/"\/v1beta1\.[A-Za-z]+\/[A-Za-z]+"/g) || [])
		.map((x) => x.slice(1, -1));
	assert.deepEqual([...new Set(inC)].sort(), methods(fs.readFileSync(UPSTREAM, 'utf8')));
});

test('the check would see a renumbered or renamed field, or a field gone', () => {
	const upstream = describe(fs.readFileSync(UPSTREAM, 'utf8'));
	const text = fs.readFileSync(PROTO, 'utf8');
	for (const [from, to] of [
		[/bool read_only = 3;/, 'bool read_only = 4;'],
		[/string permissions = 3;/, 'string perms = 3;'],
		[/\s*repeated CDIDevice cdi_devices = 5;[^\n]*/, ''],
	]) {
		const changed = text.replace(from, to);
		assert.notEqual(changed, text, `${from} is in the project's .proto`);
		assert.throws(() => assert.deepEqual(describe(changed), upstream));
	}
});

test('the stand-in kubelet loads from a clone alone (nothing beside the repository)', () => {
	// a tree holding only the project's .proto, with nothing beside it
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'proto-clone-'));
	try {
		const top = path.join(dir, 'clone');
		fs.mkdirSync(path.join(top, 'src', 'kubelet'), { recursive: true });
		fs.copyFileSync(PROTO, path.join(top, 'src', 'kubelet', 'deviceplugin.proto'));
		const r = spawnSync(process.execPath, ['--input-type=module', '-e',
			`const k = await import(${JSON.stringify(path.join(here, 'kubelet.mjs'))});
			 if (typeof k.api.DevicePlugin !== 'function' || typeof k.api.Registration !== 'function') process.exit(3);`],
			{ env: { ...process.env, TOP: top }, encoding: 'utf8', timeout: 20000 });
		assert.equal(r.status, 0, r.stderr);
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
});

// The DRA plugin's protos (src/kubelet/dra.proto, pluginregistration.proto): the kubelet's
// k8s.io/kubelet pkg/apis/dra/v1 and v1beta1 api.proto (the same messages, field for field) and
// pkg/apis/pluginregistration/v1/api.proto, written out here as they publish them.
const DRA = {
	NodePrepareResourcesRequest: { claims: [1, 'Claim', 'repeated'] },
	NodePrepareResourcesResponse: { claims: [1, 'NodePrepareResourceResponse', 'map<string>'] },
	NodePrepareResourceResponse: { devices: [1, 'Device', 'repeated'], error: [2, 'string', ''] },
	Device: {
		request_names: [1, 'string', 'repeated'], pool_name: [2, 'string', ''], device_name: [3, 'string', ''],
		cdi_device_ids: [4, 'string', 'repeated'],
	},
	NodeUnprepareResourcesRequest: { claims: [1, 'Claim', 'repeated'] },
	NodeUnprepareResourcesResponse: { claims: [1, 'NodeUnprepareResourceResponse', 'map<string>'] },
	NodeUnprepareResourceResponse: { error: [1, 'string', ''] },
	Claim: { namespace: [1, 'string', ''], uid: [2, 'string', ''], name: [3, 'string', ''] },
};
const REGISTRATION = {
	PluginInfo: { type: [1, 'string', ''], name: [2, 'string', ''], endpoint: [3, 'string', ''], supported_versions: [4, 'string', 'repeated'] },
	RegistrationStatus: { plugin_registered: [1, 'bool', ''], error: [2, 'string', ''] },
	RegistrationStatusResponse: {},
	InfoRequest: {},
};

// k8s.io/kubelet pkg/apis/dra-health/v1alpha1/api.proto, as published (fields 4 and 5 of
// DeviceHealth, added after 1.34, are not sent by rdmak and left out of its proto).
const DRA_HEALTH = {
	NodeWatchResourcesRequest: {},
	DeviceIdentifier: { pool_name: [1, 'string', ''], device_name: [2, 'string', ''] },
	DeviceHealth: { device: [1, 'DeviceIdentifier', ''], health: [2, 'HealthStatus', ''], last_updated_time: [3, 'int64', ''] },
	NodeWatchResourcesResponse: { devices: [1, 'DeviceHealth', 'repeated'] },
};

function describePkg(text, pkgName) {
	const { root, package: pkg } = protobuf.parse(text, { keepCase: true });
	assert.equal(pkg, pkgName, `package ${pkgName} (part of every method path)`);
	const out = {};
	for (const t of root.lookup(pkgName).nestedArray.filter((x) => x instanceof protobuf.Type)) {
		out[t.name] = {};
		for (const f of t.fieldsArray) out[t.name][f.name] = [f.id, f.type, f.map ? `map<${f.keyType}>` : f.repeated ? 'repeated' : ''];
	}
	return out;
}

test('dra.proto: every message and field of the kubelet\'s DRA API v1 (= v1beta1), by number, type and label', () => {
	const text = fs.readFileSync(path.join(TOP, 'src', 'kubelet', 'dra.proto'), 'utf8');
	assert.deepEqual(describePkg(text, 'k8s.io.kubelet.pkg.apis.dra.v1'), DRA);
	const renumbered = text.replace(/string device_name = 3;/, 'string device_name = 5;');
	assert.notEqual(renumbered, text);
	assert.throws(() => assert.deepEqual(describePkg(renumbered, 'k8s.io.kubelet.pkg.apis.dra.v1'), DRA));
});

test('drahealth.proto: the kubelet\'s DRA health stream v1alpha1, by number, type and label, and its enum', () => {
	const text = fs.readFileSync(path.join(TOP, 'src', 'kubelet', 'drahealth.proto'), 'utf8');
	assert.deepEqual(describePkg(text, 'v1alpha1'), DRA_HEALTH);
	const { root } = protobuf.parse(text, { keepCase: true });
	assert.deepEqual({ ...root.lookupEnum('v1alpha1.HealthStatus').values }, { UNKNOWN: 0, HEALTHY: 1, UNHEALTHY: 2 });
});

test('pluginregistration.proto: the kubelet\'s plugin registration API, by number, type and label', () => {
	const text = fs.readFileSync(path.join(TOP, 'src', 'kubelet', 'pluginregistration.proto'), 'utf8');
	assert.deepEqual(describePkg(text, 'pluginregistration'), REGISTRATION);
});
