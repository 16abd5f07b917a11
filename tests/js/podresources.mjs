// SPDX-License-Identifier: Apache-2.0
// A stand-in for the kubelet's PodResources API v1 (the pod-resources/kubelet.sock side of a real
// kubelet), written against an independent gRPC implementation (@grpc/grpc-js). Its messages are
// the published ones, k8s.io/kubelet pkg/apis/podresources/v1/api.proto, with every field List
// answers (cpu_ids, memory, topology, dynamic_resources included), not the project's trimmed
// src/kubelet/podresources.proto: our reader must skip what it leaves out.
//
// API
//   import { PodResources, vfPods } from './podresources.mjs';
//   const s = new PodResources(socketPath)
//   s.pods = [{ name, namespace, containers: [{ name, devices: [{ resource_name, device_ids }] }] }]
//   s.hang = true        List never answers (the client's deadline must end the call)
//   s.fail = grpc code   List answers that status (grpc.status.UNIMPLEMENTED: an old kubelet)
//   s.calls              how many List calls arrived
//   await s.start(); await s.stop()
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';

// k8s.io/kubelet pkg/apis/podresources/v1/api.proto, List's part, gogoproto options left out.
export const PUBLISHED = `
syntax = "proto3";
package v1;
service PodResourcesLister {
	rpc List(ListPodResourcesRequest) returns (ListPodResourcesResponse) {}
}
message ListPodResourcesRequest {}
message ListPodResourcesResponse {
	repeated PodResources pod_resources = 1;
}
message PodResources {
	string name = 1;
	string namespace = 2;
	repeated ContainerResources containers = 3;
}
message ContainerResources {
	string name = 1;
	repeated ContainerDevices devices = 2;
	repeated int64 cpu_ids = 3;
	repeated ContainerMemory memory = 4;
	repeated DynamicResource dynamic_resources = 5;
}
message ContainerMemory {
	string memory_type = 1;
	uint64 size = 2;
	TopologyInfo topology = 3;
}
message ContainerDevices {
	string resource_name = 1;
	repeated string device_ids = 2;
	TopologyInfo topology = 3;
}
message TopologyInfo {
	repeated NUMANode nodes = 1;
}
message NUMANode {
	int64 ID = 1;
}
message DynamicResource {
	string class_name = 1;
	string claim_name = 2;
	string claim_namespace = 3;
	repeated ClaimResource claim_resources = 4;
}
message ClaimResource {
	repeated CDIDevice cdi_devices = 1;
}
message CDIDevice {
	string name = 1;
}
`;

function loadApi() {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'podres-proto-'));
	const file = path.join(dir, 'api.proto');
	try {
		fs.writeFileSync(file, PUBLISHED);
		const def = protoLoader.loadSync(file, { keepCase: true, longs: Number, enums: String, defaults: true });
		return grpc.loadPackageDefinition(def).v1;
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
}

export const api = loadApi();

// Pods of the cx5-roce-sriov sample node: VFs of its two PFs (exclusive, by PCI address, as
// rdmak plugin and sriov-network-device-plugin name them) and the shared HCAs (ids "0".."N-1").
// Fields the kubelet sends beside the devices (cpus, memory, NUMA nodes) are there too.
export function samplePods() {
	const numa = { nodes: [{ ID: 0 }] };
	return [
		{
			name: 'trainer-0', namespace: 'ml',
			containers: [
				{
					name: 'trainer', cpu_ids: [2, 3], memory: [{ memory_type: 'memory', size: 1 << 30, topology: numa }],
					devices: [{ resource_name: 'nvidia.com/cx5_vf', device_ids: ['0000:1b:00.2', '0000:1b:00.3'], topology: numa }],
				},
				{ name: 'sidecar', devices: [] },
			],
		},
		{
			name: 'trainer-1', namespace: 'ml',
			containers: [{ name: 'trainer', devices: [{ resource_name: 'nvidia.com/cx5_vf', device_ids: ['0000:1b:02.2'] }] }],
		},
		{
			name: 'bench', namespace: 'perf',
			containers: [{ name: 'ib', devices: [{ resource_name: 'rdma/shared_cx5', device_ids: ['7'] }] }],
		},
		{
			name: 'bench2', namespace: 'perf',
			containers: [{ name: 'ib', devices: [{ resource_name: 'rdma/shared_cx5', device_ids: ['12'] }] }],
		},
		{ name: 'web', namespace: 'default', containers: [{ name: 'nginx', devices: [{ resource_name: 'example.com/gpu', device_ids: ['GPU-1'] }] }] },
	];
}

export class PodResources {
	constructor(socketPath) {
		this.socketPath = socketPath;
		this.pods = [];
		this.hang = false;
		this.fail = null;
		this.calls = 0;
		this.pending = [];
	}

	start() {
		this.server = new grpc.Server();
		this.server.addService(api.PodResourcesLister.service, {
			List: (call, cb) => {
				this.calls++;
				if (this.hang) {
					this.pending.push(cb);
					return;
				}
				if (this.fail !== null)
					return cb({ code: this.fail, details: 'stand-in refuses' });
				cb(null, { pod_resources: this.pods });
			},
		});
		fs.mkdirSync(path.dirname(this.socketPath), { recursive: true });
		fs.rmSync(this.socketPath, { force: true });
		return new Promise((resolve, reject) =>
			this.server.bindAsync(`unix:${this.socketPath}`, grpc.ServerCredentials.createInsecure(), (err) =>
				err ? reject(err) : resolve()));
	}

	stop() {
		return new Promise((resolve) => {
			if (!this.server)
				return resolve();
			this.server.forceShutdown();
			this.server = null;
			fs.rmSync(this.socketPath, { force: true });
			resolve();
		});
	}
}
