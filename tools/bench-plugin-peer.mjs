#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// The peer of `make bench`'s Allocate figures: a device plugin written with @grpc/grpc-js, in a
// process of its own as a real device plugin is, answering every Allocate with a canned
// AllocateResponse (rdmak's own answer for one VF, so that both send the same bytes).
//   node tools/bench-plugin-peer.mjs SOCKET RESPONSE.json     prints "listening" once bound
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const TOP = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { api } = await import(path.join(TOP, 'tests', 'js', 'kubelet.mjs'));
const grpc = createRequire(path.join(TOP, 'tests', 'js', 'package.json'))('@grpc/grpc-js');
const [sock, respFile] = process.argv.slice(2);
const canned = JSON.parse(fs.readFileSync(respFile, 'utf8'));
const server = new grpc.Server();
server.addService(api.DevicePlugin.service, {
	Allocate: (call, cb) => cb(null, canned),
	GetDevicePluginOptions: (call, cb) => cb(null, {}),
	ListAndWatch: (call) => call.write({ devices: [] }),
	GetPreferredAllocation: (call, cb) => cb(null, { container_responses: [] }),
	PreStartContainer: (call, cb) => cb(null, {}),
});
server.bindAsync(`unix:${sock}`, grpc.ServerCredentials.createInsecure(), (err) => {
	if (err) throw err;
	process.stdout.write('listening\n');
});
process.on('SIGTERM', () => {
	server.forceShutdown();
	process.exit(0);
});
