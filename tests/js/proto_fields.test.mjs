// SPDX-License-Identifier: Apache-2.0
// The project's src/kubelet/deviceplugin.proto is the wire contract with the kubelet: every
// message and field the kubelet's device plugin API v1beta1 defines, with its number, type and
// label, must be there as k8s.io/kubelet pkg/apis/deviceplugin/v1beta1/api.proto publishes it.
// The table below is that file's, written out here so that the check needs nothing outside this
// repository; and the stand-in kubelet must load from a clone alone.
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

// message -> field -> [number, type, rule] (rule: '' singular, 'repeated', 'map<k>')
const V1BETA1 = {
	DevicePluginOptions: { pre_start_required: [1, 'bool', ''], get_preferred_allocation_available: [2, 'bool', ''] },
	RegisterRequest: {
		version: [1, 'string', ''], endpoint: [2, 'string', ''], resource_name: [3, 'string', ''],
		options: [4, 'DevicePluginOptions', ''],
	},
	Empty: {},
	ListAndWatchResponse: { devices: [1, 'Device', 'repeated'] },
	TopologyInfo: { nodes: [1, 'NUMANode', 'repeated'] },
	NUMANode: { ID: [1, 'int64', ''] },
	Device: { ID: [1, 'string', ''], health: [2, 'string', ''], topology: [3, 'TopologyInfo', ''] },
	PreStartContainerRequest: { devices_ids: [1, 'string', 'repeated'] },
	PreStartContainerResponse: {},
	PreferredAllocationRequest: { container_requests: [1, 'ContainerPreferredAllocationRequest', 'repeated'] },
	ContainerPreferredAllocationRequest: {
		available_deviceIDs: [1, 'string', 'repeated'], must_include_deviceIDs: [2, 'string', 'repeated'],
		allocation_size: [3, 'int32', ''],
	},
	PreferredAllocationResponse: { container_responses: [1, 'ContainerPreferredAllocationResponse', 'repeated'] },
	ContainerPreferredAllocationResponse: { deviceIDs: [1, 'string', 'repeated'] },
	AllocateRequest: { container_requests: [1, 'ContainerAllocateRequest', 'repeated'] },
	ContainerAllocateRequest: { devices_ids: [1, 'string', 'repeated'] },
	CDIDevice: { name: [1, 'string', ''] },
	AllocateResponse: { container_responses: [1, 'ContainerAllocateResponse', 'repeated'] },
	ContainerAllocateResponse: {
		envs: [1, 'string', 'map<string>'], mounts: [2, 'Mount', 'repeated'], devices: [3, 'DeviceSpec', 'repeated'],
		annotations: [4, 'string', 'map<string>'], cdi_devices: [5, 'CDIDevice', 'repeated'],
	},
	Mount: { container_path: [1, 'string', ''], host_path: [2, 'string', ''], read_only: [3, 'bool', ''] },
	DeviceSpec: { container_path: [1, 'string', ''], host_path: [2, 'string', ''], permissions: [3, 'string', ''] },
};

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

test('deviceplugin.proto: every v1beta1 message and field, by number, type and label', () => {
	assert.deepEqual(describe(fs.readFileSync(PROTO, 'utf8')), V1BETA1);
});

test('the check would see a renumbered or renamed field', () => {
	const text = fs.readFileSync(PROTO, 'utf8');
	const renumbered = text.replace(/bool read_only = 3;/, 'bool read_only = 4;');
	assert.notEqual(renumbered, text);
	assert.throws(() => assert.deepEqual(describe(renumbered), V1BETA1));
	const renamed = text.replace(/string permissions = 3;/, 'string perms = 3;');
	assert.notEqual(renamed, text);
	assert.throws(() => assert.deepEqual(describe(renamed), V1BETA1));
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

test('pluginregistration.proto: the kubelet\'s plugin registration API, by number, type and label', () => {
	const text = fs.readFileSync(path.join(TOP, 'src', 'kubelet', 'pluginregistration.proto'), 'utf8');
	assert.deepEqual(describePkg(text, 'pluginregistration'), REGISTRATION);
});
