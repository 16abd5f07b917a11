// SPDX-License-Identifier: Apache-2.0
// A stand-in for the Kubernetes API server, for the tests only (none can be installed here): the
// few endpoints `rdmak dra` calls, over Node's https with a certificate from a test CA, a bearer
// token required, and every ResourceSlice it is given validated against the resource.k8s.io/v1
// schema (kubernetes-models 5, generated from Kubernetes' OpenAPI) and against the limits the
// API server's own validation adds (k8s.io/kubernetes pkg/apis/resource/validation): at most 128
// devices a slice, 32 attributes and capacities a device, string values of 64 bytes, attribute
// names a C identifier of at most 32 characters after an optional domain, device names DNS
// labels, the driver a DNS subdomain of at most 63, the pool name DNS subdomains joined by '/'.
// A claim's status written (PUT .../resourceclaims/NAME/status) is validated the same way: the
// ResourceClaim schema, then the API server's rules for status.devices[] (KEP-4817,
// ValidateResourceClaimStatusUpdate): each entry names a device of the claim's allocation
// (driver, pool, device), at most once; networkData's interfaceName at most 256 bytes,
// hardwareAddress at most 128, at most 16 ips, each an interface address in canonical form
// ("10.1.0.5/16", "fd00::5/64"), none twice; and the claim's spec and allocation unchanged.
// A write that fails validation is answered 422 and recorded in `invalid`.
//
//   GET    /api/v1/nodes/NAME
//   GET    /apis/resource.k8s.io/v1/namespaces/NS/resourceclaims/NAME
//   GET    /apis/resource.k8s.io/v1/resourceslices[?fieldSelector=spec.nodeName=N,spec.driver=D]
//          [&watch=1&resourceVersion=RV&allowWatchBookmarks=true]  (a watch: chunked JSON lines;
//          an RV older than the server keeps is answered with an ERROR event, code 410)
//   PUT    /apis/resource.k8s.io/v1/namespaces/NS/resourceclaims/NAME/status  (409 Conflict on a
//                                                           stale metadata.resourceVersion, 404)
//   POST   /apis/resource.k8s.io/v1/resourceslices          (409 AlreadyExists)
//   PUT    /apis/resource.k8s.io/v1/resourceslices/NAME     (409 Conflict on a stale
//                                                           metadata.resourceVersion, 404)
//   DELETE /apis/resource.k8s.io/v1/resourceslices/NAME     (404)
//
// API
//   const api = await startApiServer({ dir, token })  dir: where the CA and pair are made
//   api.port, api.ca, api.kubeconfig(file)            a kubeconfig for rdmak (token user)
//   api.nodes.set(name, uid); api.claims.set('ns/name', obj)
//   api.slices                                        Map name -> stored object
//   api.writes                                        [{ verb, name, bytes, status }]
//   api.statusWrites                                  [{ claim: 'ns/name', code, status }] claims' status
//   api.staleAfterRead(key)                           the next read of claim 'ns/name' goes stale
//   api.invalid                                       [{ name, why }]
//   api.forbid(verb)                                  403 for that verb ('list', 'create', ...)
//   api.allow()                                       no 403 any more
//   api.edit(name, fn)                                someone else's update of a slice
//   api.expireWatches()                               forget history: watches get 410
//   await api.down(); await api.up()                  the server going away and back, same port
//   await api.close()
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import net from 'node:net';
import { ResourceClaim, ResourceSlice } from 'kubernetes-models-5/resource.k8s.io/v1';

const openssl = (args) => execFileSync('openssl', args, { stdio: ['ignore', 'pipe', 'pipe'] });

function pki(dir) {
	fs.mkdirSync(dir, { recursive: true });
	const ca = path.join(dir, 'ca.crt');
	const caKey = path.join(dir, 'ca.key');
	const key = path.join(dir, 'api.key');
	const csr = path.join(dir, 'api.csr');
	const cert = path.join(dir, 'api.crt');
	const ext = path.join(dir, 'api.ext');
	openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', caKey,
		'-out', ca, '-days', '2', '-subj', '/CN=rdmak-test-apiserver-ca']);
	fs.writeFileSync(ext, 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
	openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', csr,
		'-subj', '/CN=kube-apiserver']);
	openssl(['x509', '-req', '-in', csr, '-CA', ca, '-CAkey', caKey, '-CAcreateserial', '-out', cert, '-days', '2',
		'-extfile', ext]);
	return { ca, cert, key };
}

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const subdomain = (s) => s.length <= 253 && s.split('.').every((l) => LABEL.test(l));
const CIDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

// The API server's own checks beyond the OpenAPI schema; '' when the slice passes.
export function sliceLimits(s) {
	const spec = s.spec || {};
	if (!subdomain(s.metadata?.name || '')) return `metadata.name ${s.metadata?.name}: not a DNS subdomain`;
	if (!spec.driver || !subdomain(spec.driver) || spec.driver.length > 63) return `spec.driver ${spec.driver}`;
	const pool = spec.pool || {};
	if (!pool.name || pool.name.length > 253 || !pool.name.split('/').every(subdomain)) return `spec.pool.name ${pool.name}`;
	if (!(pool.generation >= 0) || !(pool.resourceSliceCount >= 1)) return 'spec.pool generation/resourceSliceCount';
	const devs = spec.devices || [];
	if (devs.length > 128) return `spec.devices: ${devs.length} > 128`;
	const names = new Set();
	for (const [i, d] of devs.entries()) {
		if (!LABEL.test(d.name) || d.name.length > 63 || names.has(d.name)) return `spec.devices[${i}].name ${d.name}`;
		names.add(d.name);
		const attrs = d.attributes || {};
		const n = Object.keys(attrs).length + Object.keys(d.capacity || {}).length;
		if (n > 32) return `spec.devices[${i}]: ${n} attributes and capacities > 32`;
		for (const [k, v] of Object.entries(attrs)) {
			const parts = k.split('/');
			const id = parts.pop();
			if (parts.length > 1 || (parts.length === 1 && !subdomain(parts[0])) || !CIDENT.test(id) || id.length > 32)
				return `spec.devices[${i}].attributes[${k}]: name`;
			const kinds = Object.keys(v);
			if (kinds.length !== 1) return `spec.devices[${i}].attributes[${k}]: exactly one value`;
			if (v.string !== undefined && Buffer.byteLength(v.string) > 64) return `spec.devices[${i}].attributes[${k}]: longer than 64`;
		}
	}
	return '';
}

// "addr/len" as Kubernetes' IsValidInterfaceAddress takes it: an address and a prefix length of
// its family, both in canonical form (no leading zeros, IPv6 lower case and compressed).
function interfaceAddress(s) {
	const m = /^([^/]+)\/(\d{1,3})$/.exec(s);
	if (!m || String(Number(m[2])) !== m[2]) return false;
	const v = net.isIP(m[1]);
	if (!v || Number(m[2]) > (v === 4 ? 32 : 128)) return false;
	if (v === 4) return m[1].split('.').every((o) => String(Number(o)) === o);
	return new URL(`http://[${m[1]}]/`).hostname === `[${m[1]}]`;
}

// The API server's own rules for a claim's status.devices (beyond the schema's types).
export function claimStatusLimits(obj, cur) {
	if (JSON.stringify(obj.spec) !== JSON.stringify(cur.spec)) return 'spec: a status update changes no spec';
	if (JSON.stringify(obj.status?.allocation) !== JSON.stringify(cur.status?.allocation)) return 'status.allocation: changed';
	const results = obj.status?.allocation?.devices?.results || [];
	const seen = new Set();
	for (const [i, d] of (obj.status?.devices || []).entries()) {
		const at = `status.devices[${i}]`;
		if (!results.some((r) => r.driver === d.driver && r.pool === d.pool && r.device === d.device))
			return `${at}: must be an allocated device in the claim`;
		const key = `${d.driver}/${d.pool}/${d.device}/${d.shareID || ''}`;
		if (seen.has(key)) return `${at}: Duplicate value`;
		seen.add(key);
		const n = d.networkData;
		if (!n) continue;
		if (n.interfaceName !== undefined && Buffer.byteLength(n.interfaceName) > 256) return `${at}.networkData.interfaceName: Too long`;
		if (n.hardwareAddress !== undefined && Buffer.byteLength(n.hardwareAddress) > 128) return `${at}.networkData.hardwareAddress: Too long`;
		if ((n.ips || []).length > 16) return `${at}.networkData.ips: Too many`;
		if (new Set(n.ips || []).size !== (n.ips || []).length) return `${at}.networkData.ips: Duplicate value`;
		for (const ip of n.ips || []) if (!interfaceAddress(ip)) return `${at}.networkData.ips: Invalid value: ${JSON.stringify(ip)}`;
	}
	return null;
}

function fieldMatch(sel, obj) {
	if (!sel) return true;
	for (const term of sel.split(',')) {
		const [k, v] = term.split('=');
		const got = k.split('.').reduce((o, p) => (o == null ? undefined : o[p]), obj);
		if (got !== v) return false;
	}
	return true;
}

export async function startApiServer({ dir, token = 'test-token' }) {
	const { ca, cert, key } = pki(dir);
	const nodes = new Map();
	const claims = new Map();
	const slices = new Map();
	const writes = [];
	const statusWrites = [];
	const staleAfterRead = new Set();
	const invalid = [];
	const forbidden = new Set();
	const history = []; // [{ rv, type, obj }] for watches
	let historyStart = 1;
	let rv = 100;
	const watchers = new Set();
	const sockets = new Set();
	let server;
	let port = 0;

	const send = (res, status, obj) => {
		const body = JSON.stringify(obj);
		res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
		res.end(body);
	};
	const status = (res, code, reason, message) =>
		send(res, code, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, message, code });

	const event = (type, obj) => {
		history.push({ rv: Number(obj.metadata.resourceVersion), type, obj: structuredClone(obj) });
		for (const w of watchers)
			if (!w.res.writableEnded && fieldMatch(w.sel, obj)) w.res.write(JSON.stringify({ type, object: obj }) + '\n');
	};

	function readBody(req) {
		return new Promise((resolve) => {
			let b = '';
			req.on('data', (d) => (b += d));
			req.on('end', () => resolve(b));
		});
	}

	async function handle(req, res) {
		const url = new URL(req.url, 'https://x');
		if (req.headers.authorization !== `Bearer ${token}`) return status(res, 401, 'Unauthorized', 'Unauthorized');
		const p = url.pathname;
		let m;
		if (req.method === 'GET' && (m = p.match(/^\/api\/v1\/nodes\/([^/]+)$/))) {
			if (forbidden.has('getnode')) return status(res, 403, 'Forbidden', 'nodes is forbidden');
			if (!nodes.has(m[1])) return status(res, 404, 'NotFound', `nodes "${m[1]}" not found`);
			return send(res, 200, { apiVersion: 'v1', kind: 'Node', metadata: { name: m[1], uid: nodes.get(m[1]) } });
		}
		if (req.method === 'GET' && (m = p.match(/^\/apis\/resource\.k8s\.io\/v1\/namespaces\/([^/]+)\/resourceclaims\/([^/]+)$/))) {
			if (forbidden.has('getclaim')) return status(res, 403, 'Forbidden', 'resourceclaims is forbidden');
			const c = claims.get(`${m[1]}/${m[2]}`);
			if (!c) return status(res, 404, 'NotFound', `resourceclaims "${m[2]}" not found`);
			c.metadata.resourceVersion ??= String(++rv);
			send(res, 200, c);
			// someone else's write right after this read: the reader's update is stale
			if (staleAfterRead.delete(`${m[1]}/${m[2]}`)) c.metadata.resourceVersion = String(++rv);
			return;
		}
		if (req.method === 'PUT' && (m = p.match(/^\/apis\/resource\.k8s\.io\/v1\/namespaces\/([^/]+)\/resourceclaims\/([^/]+)\/status$/))) {
			const body = await readBody(req);
			if (forbidden.has('updateclaimstatus')) return status(res, 403, 'Forbidden', 'resourceclaims/status is forbidden: cannot update');
			const key = `${m[1]}/${m[2]}`;
			const cur = claims.get(key);
			if (!cur) return status(res, 404, 'NotFound', `resourceclaims "${m[2]}" not found`);
			let obj;
			try {
				obj = JSON.parse(body);
				new ResourceClaim(obj).validate();
			} catch (e) {
				invalid.push({ name: key, why: e.message });
				return status(res, 422, 'Invalid', e.message);
			}
			const why = obj.metadata?.name !== m[2] || obj.metadata?.uid !== cur.metadata.uid ? 'metadata: another claim' : claimStatusLimits(obj, cur);
			if (why) {
				invalid.push({ name: key, why });
				return status(res, 422, 'Invalid', why);
			}
			if (obj.metadata.resourceVersion !== cur.metadata.resourceVersion) {
				statusWrites.push({ claim: key, code: 409 });
				return status(res, 409, 'Conflict', 'Operation cannot be fulfilled on resourceclaims: the object has been modified');
			}
			cur.status = obj.status;
			cur.metadata.resourceVersion = String(++rv);
			statusWrites.push({ claim: key, code: 200, status: structuredClone(cur.status) });
			return send(res, 200, cur);
		}
		if (p === '/apis/resource.k8s.io/v1/resourceslices' && req.method === 'GET') {
			const sel = url.searchParams.get('fieldSelector');
			if (url.searchParams.get('watch') === '1') {
				if (forbidden.has('watch')) return status(res, 403, 'Forbidden', 'watch is forbidden');
				const from = Number(url.searchParams.get('resourceVersion') || 0);
				res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
				if (from < historyStart - 1) {
					res.write(JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } }) + '\n');
					return res.end();
				}
				for (const h of history) if (h.rv > from && fieldMatch(sel, h.obj)) res.write(JSON.stringify({ type: h.type, object: h.obj }) + '\n');
				const w = { res, sel };
				watchers.add(w);
				res.on('close', () => watchers.delete(w));
				return;
			}
			if (forbidden.has('list')) return status(res, 403, 'Forbidden', 'resourceslices is forbidden: cannot list');
			const items = [...slices.values()].filter((s) => fieldMatch(sel, s));
			return send(res, 200, { apiVersion: 'resource.k8s.io/v1', kind: 'ResourceSliceList', metadata: { resourceVersion: String(rv) }, items });
		}
		const one = p.match(/^\/apis\/resource\.k8s\.io\/v1\/resourceslices(?:\/([^/]+))?$/);
		if (!one) return status(res, 404, 'NotFound', `no route ${req.method} ${p}`);
		const body = await readBody(req);
		const verb = { POST: 'create', PUT: 'update', DELETE: 'delete' }[req.method];
		const record = (code, name) => writes.push({ verb, name, bytes: Buffer.byteLength(body), status: code });
		if (!verb) return status(res, 405, 'MethodNotAllowed', req.method);
		if (forbidden.has(verb)) {
			record(403, one[1]);
			return status(res, 403, 'Forbidden', `resourceslices is forbidden: cannot ${verb}`);
		}
		if (verb === 'delete') {
			const s = slices.get(one[1]);
			if (!s) return record(404, one[1]), status(res, 404, 'NotFound', `resourceslices "${one[1]}" not found`);
			slices.delete(one[1]);
			s.metadata.resourceVersion = String(++rv);
			event('DELETED', s);
			record(200, one[1]);
			return send(res, 200, s);
		}
		let obj;
		try {
			obj = JSON.parse(body);
			new ResourceSlice(obj).validate();
		} catch (e) {
			invalid.push({ name: obj?.metadata?.name, why: e.message });
			record(422, obj?.metadata?.name);
			return status(res, 422, 'Invalid', e.message);
		}
		const why = sliceLimits(obj);
		if (why) {
			invalid.push({ name: obj.metadata.name, why });
			record(422, obj.metadata.name);
			return status(res, 422, 'Invalid', why);
		}
		const name = obj.metadata.name;
		if (verb === 'create') {
			if (slices.has(name)) return record(409, name), status(res, 409, 'AlreadyExists', `resourceslices "${name}" already exists`);
			obj.metadata.uid = `uid-${name}`;
		} else {
			const cur = slices.get(one[1]);
			if (!cur || one[1] !== name) return record(404, name), status(res, 404, 'NotFound', `resourceslices "${one[1]}" not found`);
			if (obj.metadata.resourceVersion !== cur.metadata.resourceVersion)
				return record(409, name), status(res, 409, 'Conflict', 'Operation cannot be fulfilled: the object has been modified');
			obj.metadata.uid = cur.metadata.uid;
		}
		obj.metadata.resourceVersion = String(++rv);
		slices.set(name, obj);
		event(verb === 'create' ? 'ADDED' : 'MODIFIED', obj);
		record(verb === 'create' ? 201 : 200, name);
		return send(res, verb === 'create' ? 201 : 200, obj);
	}

	const listen = () =>
		new Promise((resolve, reject) => {
			server = https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, (req, res) => {
				handle(req, res).catch((e) => status(res, 500, 'InternalError', String(e)));
			});
			server.on('connection', (s) => {
				sockets.add(s);
				s.on('close', () => sockets.delete(s));
			});
			server.once('error', reject);
			server.listen(port, '127.0.0.1', () => {
				port = server.address().port;
				resolve();
			});
		});
	await listen();

	const api = {
		get port() { return port; },
		ca, nodes, claims, slices, writes, statusWrites, invalid,
		kubeconfig(file) {
			fs.writeFileSync(file, JSON.stringify({
				apiVersion: 'v1', kind: 'Config', 'current-context': 'test',
				clusters: [{ name: 'c', cluster: { server: `https://127.0.0.1:${port}`, 'certificate-authority': ca } }],
				users: [{ name: 'u', user: { token } }],
				contexts: [{ name: 'test', context: { cluster: 'c', user: 'u' } }],
			}));
			return file;
		},
		forbid(verb) { forbidden.add(verb); },
		staleAfterRead(key) { staleAfterRead.add(key); },
		allow() { forbidden.clear(); },
		edit(name, fn) {
			const s = structuredClone(slices.get(name));
			fn(s);
			s.metadata.resourceVersion = String(++rv);
			slices.set(name, s);
			event('MODIFIED', s);
		},
		expireWatches() {
			historyStart = rv + 1;
			history.length = 0;
			for (const w of watchers) w.res.end();
			watchers.clear();
		},
		async down() {
			for (const w of watchers) w.res.destroy();
			const closed = new Promise((r) => server.close(r));
			for (const s of sockets) s.destroy();
			await closed;
		},
		async up() { await listen(); },
		async close() {
			for (const w of watchers) w.res.destroy();
			const closed = new Promise((r) => server.close(r));
			for (const s of sockets) s.destroy();
			await closed;
		},
	};
	return api;
}
