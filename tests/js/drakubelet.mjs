// SPDX-License-Identifier: Apache-2.0
// The kubelet's side of the DRA plugin API for the stand-in kubelet of the tests, written against
// an independent gRPC implementation (@grpc/grpc-js): the messages declared here from the
// kubelet's published field numbers (k8s.io/kubelet pkg/apis/{pluginregistration/v1,dra/v1,
// dra/v1beta1,dra-health/v1alpha1}/api.proto), not loaded from the project's own protos (proto_fields.test.mjs checks
// those against the same numbers).
//
//   const { v1, v1beta1, reg, health } = loadDra(dir)   packages; dir: where the .proto texts go
//   new v1.DRAPlugin('unix:' + socket, grpc.credentials.createInsecure())
//   call(client, 'NodePrepareResources', req)   a promise of the answer
import fs from 'node:fs';
import path from 'node:path';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';

// The kubelet's messages, by the published numbers; v1 and v1beta1 are the same but for the
// package (part of the method path).
const draProto = (pkg) => `syntax = "proto3";
package ${pkg};
service DRAPlugin {
	rpc NodePrepareResources (NodePrepareResourcesRequest) returns (NodePrepareResourcesResponse) {}
	rpc NodeUnprepareResources (NodeUnprepareResourcesRequest) returns (NodeUnprepareResourcesResponse) {}
}
message NodePrepareResourcesRequest { repeated Claim claims = 1; }
message NodePrepareResourcesResponse { map<string, NodePrepareResourceResponse> claims = 1; }
message NodePrepareResourceResponse { repeated Device devices = 1; string error = 2; }
message Device { repeated string request_names = 1; string pool_name = 2; string device_name = 3; repeated string cdi_device_ids = 4; }
message NodeUnprepareResourcesRequest { repeated Claim claims = 1; }
message NodeUnprepareResourcesResponse { map<string, NodeUnprepareResourceResponse> claims = 1; }
message NodeUnprepareResourceResponse { string error = 1; }
message Claim { string namespace = 1; string uid = 2; string name = 3; }
`;
const regProto = `syntax = "proto3";
package pluginregistration;
message PluginInfo { string type = 1; string name = 2; string endpoint = 3; repeated string supported_versions = 4; }
message RegistrationStatus { bool plugin_registered = 1; string error = 2; }
message RegistrationStatusResponse {}
message InfoRequest {}
service Registration {
	rpc GetInfo(InfoRequest) returns (PluginInfo) {}
	rpc NotifyRegistrationStatus(RegistrationStatus) returns (RegistrationStatusResponse) {}
}
`;
// The resource health stream (KEP-4680): its package is plain "v1alpha1".
const healthProto = `syntax = "proto3";
package v1alpha1;
service DRAResourceHealth {
	rpc NodeWatchResources(NodeWatchResourcesRequest) returns (stream NodeWatchResourcesResponse) {}
}
message NodeWatchResourcesRequest {}
message DeviceIdentifier { string pool_name = 1; string device_name = 2; }
enum HealthStatus { UNKNOWN = 0; HEALTHY = 1; UNHEALTHY = 2; }
message DeviceHealth { DeviceIdentifier device = 1; HealthStatus health = 2; int64 last_updated_time = 3; int64 health_check_timeout_seconds = 4; string message = 5; }
message NodeWatchResourcesResponse { repeated DeviceHealth devices = 1; }
`;

function load(root, text, name) {
	const f = path.join(root, name);
	fs.writeFileSync(f, text);
	return grpc.loadPackageDefinition(protoLoader.loadSync(f, { keepCase: true, defaults: true, longs: Number, enums: String }));
}


export function loadDra(root) {
	return {
		v1: load(root, draProto('k8s.io.kubelet.pkg.apis.dra.v1'), 'v1.proto').k8s.io.kubelet.pkg.apis.dra.v1,
		v1beta1: load(root, draProto('k8s.io.kubelet.pkg.apis.dra.v1beta1'), 'v1beta1.proto').k8s.io.kubelet.pkg.apis.dra.v1beta1,
		reg: load(root, regProto, 'reg.proto').pluginregistration,
		health: load(root, healthProto, 'health.proto').v1alpha1,
	};
}

export const call = (client, method, req) =>
	new Promise((resolve, reject) => client[method](req, (e, r) => (e ? reject(e) : resolve(r))));
