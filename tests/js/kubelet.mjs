// SPDX-License-Identifier: Apache-2.0
// A stand-in kubelet for tests: the device-plugin side of a real kubelet, written against an
// independent gRPC implementation (@grpc/grpc-js), so that it checks our C transport rather than
// agreeing with it. The messages come from the project's own src/kubelet/deviceplugin.proto
// (checked field by field against the kubelet's published v1beta1 numbers by
// proto_fields.test.mjs); the two services, which that file leaves out for protoc-c, are
// declared here as k8s.io/kubelet pkg/apis/deviceplugin/v1beta1/api.proto declares them.
//
// API
//   import { Kubelet } from './kubelet.mjs';
//   const k = new Kubelet(root, opts)  root: the kubelet root dir (the folder used is
//                                       <root>/device-plugins, created if missing).
//       opts.connect (default true): on Register, dial the plugin's endpoint and call
//                    GetDevicePluginOptions *before* answering, then open ListAndWatch, as the
//                    kubelet's device manager does.
//   await k.start()                     serve Registration on <root>/device-plugins/kubelet.sock
//   k.registrations                     every Register call, in order:
//                                       { req: RegisterRequest, at: performance.now(), plugin }
//   await k.waitRegistration(n, ms)     the n-th Register (1-based), waiting up to ms
//   k.rejectRegistration = 'msg'        answer Register with INVALID_ARGUMENT 'msg' (null: accept);
//                                       k.rejected lists the refused ones, k.on('reject', fn(reg))
//   await k.restart(opts)               what a kubelet restart looks like to a plugin: close
//                                       every connection, stop serving, delete every socket in
//                                       the folder, listen again; resolves once listening;
//                                       returns performance.now() of the moment sockets were gone.
//                                       opts.deleteSockets=false: only kubelet.sock is re-created
//   await k.stop()                      close everything (kubelet.sock is removed)
//   k.dial(endpoint)                    a Plugin client on <root>/device-plugins/<endpoint>
//   k.pluginDir, k.socketPath           the folder, kubelet.sock
//   k.on('register', fn(reg))           (an EventEmitter)
//
//   Plugin (reg.plugin, or k.dial()):
//   p.options                           DevicePluginOptions (fetched at registration)
//   p.lists                             every ListAndWatch response, as arrays of Device
//                                       ({ ID, health, topology: { nodes: [{ ID }] } })
//   p.watch()                           open a ListAndWatch stream (done on registration)
//   await p.waitList(pred, ms, from=0)  the first list at index >= from with pred(list) true
//   await p.getOptions()
//   await p.allocate([[ids], ...])      AllocateResponse (container_responses[i].envs is an object)
//   await p.preferred([{ available, mustInclude, size }])  PreferredAllocationResponse
//   await p.preStart(ids)
//   p.close()
// Every promise rejects with the gRPC error (err.code, err.details) when the plugin fails a call.
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';

const here = path.dirname(fileURLToPath(import.meta.url));
export const TOP = process.env.TOP || path.resolve(here, '..', '..');
export const PROTO = path.resolve(TOP, 'src', 'kubelet', 'deviceplugin.proto');

// The kubelet's services (api.proto, v1beta1), with the method paths the kubelet dials.
export const SERVICES = `
service Registration {
	rpc Register(RegisterRequest) returns (Empty) {}
}
service DevicePlugin {
	rpc GetDevicePluginOptions(Empty) returns (DevicePluginOptions) {}
	rpc ListAndWatch(Empty) returns (stream ListAndWatchResponse) {}
	rpc GetPreferredAllocation(PreferredAllocationRequest) returns (PreferredAllocationResponse) {}
	rpc Allocate(AllocateRequest) returns (AllocateResponse) {}
	rpc PreStartContainer(PreStartContainerRequest) returns (PreStartContainerResponse) {}
}
`;

function loadApi() {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kubelet-proto-'));
	const file = path.join(dir, 'api.proto');
	try {
		fs.writeFileSync(file, fs.readFileSync(PROTO, 'utf8') + SERVICES);
		const def = protoLoader.loadSync(file, { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true });
		return grpc.loadPackageDefinition(def).v1beta1;
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
}

export const api = loadApi();

const unary = (client, method, req, ms = 5000) =>
	new Promise((resolve, reject) => {
		client[method](req, { deadline: Date.now() + ms }, (err, resp) => (err ? reject(err) : resolve(resp)));
	});

export function withTimeout(promise, ms, what) {
	let timer;
	const t = new Promise((_, reject) => {
		timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
	});
	return Promise.race([promise, t]).finally(() => clearTimeout(timer));
}

export class Plugin extends EventEmitter {
	constructor(socketPath) {
		super();
		this.socketPath = socketPath;
		this.client = new api.DevicePlugin(`unix:${socketPath}`, grpc.credentials.createInsecure());
		this.lists = [];
		this.streams = [];
		this.options = null;
		this.closed = false;
	}

	watch() {
		const s = this.client.ListAndWatch({});
		s.on('data', (resp) => {
			this.lists.push(resp.devices);
			this.emit('list', resp.devices);
		});
		s.on('error', (err) => this.emit('stream-error', err));
		s.on('end', () => this.emit('stream-end'));
		this.streams.push(s);
		return s;
	}

	waitList(pred = () => true, ms = 5000, from = 0) {
		for (let i = from; i < this.lists.length; i++) if (pred(this.lists[i])) return Promise.resolve(this.lists[i]);
		let onList;
		const p = new Promise((resolve) => {
			onList = (l) => {
				if (this.lists.length > from && pred(l)) resolve(l);
			};
			this.on('list', onList);
		});
		return withTimeout(p, ms, 'a ListAndWatch list').finally(() => this.off('list', onList));
	}

	getOptions(ms) {
		return unary(this.client, 'GetDevicePluginOptions', {}, ms);
	}

	allocate(containers, ms) {
		return unary(this.client, 'Allocate', { container_requests: containers.map((ids) => ({ devices_ids: ids })) }, ms);
	}

	preferred(reqs, ms) {
		return unary(
			this.client,
			'GetPreferredAllocation',
			{
				container_requests: reqs.map((r) => ({
					available_deviceIDs: r.available,
					must_include_deviceIDs: r.mustInclude || [],
					allocation_size: r.size,
				})),
			},
			ms,
		);
	}

	preStart(ids, ms) {
		return unary(this.client, 'PreStartContainer', { devices_ids: ids }, ms);
	}

	close() {
		this.closed = true;
		for (const s of this.streams) s.cancel();
		this.streams = [];
		this.client.close();
	}
}

export class Kubelet extends EventEmitter {
	constructor(root, opts = {}) {
		super();
		this.root = root;
		this.pluginDir = path.join(root, 'device-plugins');
		this.socketPath = path.join(this.pluginDir, 'kubelet.sock');
		this.connect = opts.connect !== false;
		this.registrations = [];
		this.rejectRegistration = null;
		this.rejected = [];
		this.plugins = [];
		this.server = null;
		fs.mkdirSync(this.pluginDir, { recursive: true });
	}

	dial(endpoint) {
		const p = new Plugin(path.join(this.pluginDir, endpoint));
		this.plugins.push(p);
		return p;
	}

	async #register(call, callback) {
		const reg = { req: call.request, at: performance.now(), plugin: null };
		if (this.rejectRegistration) {
			this.rejected.push(reg);
			callback({ code: grpc.status.INVALID_ARGUMENT, details: this.rejectRegistration });
			this.emit('reject', reg);
			return;
		}
		if (this.connect) {
			// Like the device manager: connect and ask for options before answering.
			const p = this.dial(call.request.endpoint);
			try {
				p.options = await p.getOptions(5000);
			} catch (err) {
				p.close();
				callback({ code: grpc.status.UNAVAILABLE, details: `cannot reach ${call.request.endpoint}: ${err.message}` });
				return;
			}
			// a restart while we waited closed this client: the call's kubelet is gone
			if (p.closed) {
				callback({ code: grpc.status.UNAVAILABLE, details: 'kubelet restarting' });
				return;
			}
			reg.plugin = p;
		}
		this.registrations.push(reg);
		callback(null, {});
		if (reg.plugin) reg.plugin.watch();
		this.emit('register', reg);
	}

	async start() {
		this.server = new grpc.Server();
		this.server.addService(api.Registration.service, { Register: (call, cb) => this.#register(call, cb) });
		await new Promise((resolve, reject) =>
			this.server.bindAsync(`unix:${this.socketPath}`, grpc.ServerCredentials.createInsecure(), (err) =>
				err ? reject(err) : resolve(),
			),
		);
	}

	waitRegistration(n = 1, ms = 5000) {
		if (this.registrations.length >= n) return Promise.resolve(this.registrations[n - 1]);
		let onReg;
		const p = new Promise((resolve) => {
			onReg = () => {
				if (this.registrations.length >= n) resolve(this.registrations[n - 1]);
			};
			this.on('register', onReg);
		});
		return withTimeout(p, ms, `registration #${n}`).finally(() => this.off('register', onReg));
	}

	#closePlugins() {
		for (const p of this.plugins) p.close();
		this.plugins = [];
	}

	async #shutdown() {
		this.#closePlugins();
		if (this.server) {
			this.server.forceShutdown();
			this.server = null;
		}
	}

	// The kubelet deletes every socket in the folder when it starts.
	deleteSockets() {
		for (const name of fs.readdirSync(this.pluginDir)) {
			const p = path.join(this.pluginDir, name);
			try {
				if (fs.lstatSync(p).isSocket()) fs.unlinkSync(p);
			} catch (err) {
				if (err.code !== 'ENOENT') throw err;
			}
		}
	}

	async restart({ deleteSockets = true } = {}) {
		await this.#shutdown();
		if (deleteSockets) this.deleteSockets();
		else fs.rmSync(this.socketPath, { force: true });
		const at = performance.now();
		await this.start();
		return at;
	}

	async stop() {
		await this.#shutdown();
		fs.rmSync(this.socketPath, { force: true });
	}
}
