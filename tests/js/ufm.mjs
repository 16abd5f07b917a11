#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// A stand-in for NVIDIA UFM's PKey GUIDs REST API, for the tests only (there is no UFM here).
// Built from NVIDIA's published "UFM Enterprise REST API Guide", page "PKey GUIDs Rest API"
// (docs.nvidia.com/networking/display/UFMEnterpriseRESTAPILatest/PKey+GUIDs+Rest+API, read in
// its v6.12, v6.19.3 and v6.22.1 editions), which says the /ufmRest/actions/ PKey APIs are
// deprecated and replaced by those under /ufmRest/resources/:
//   POST   /ufmRest/resources/pkeys                    add GUIDs: {"pkey":"0x..","guids":[..],
//          "membership":"full"|"limited" (default full), "index0" (default false),
//          "ip_over_ib" (default true)}; the pkey is made when absent
//   GET    /ufmRest/resources/pkeys[?guids_data=true]  every pkey, an object keyed by pkey
//   GET    /ufmRest/resources/pkeys/<pkey>[?guids_data=true]  one pkey (its GUIDs with guids_data)
//   DELETE /ufmRest/resources/pkeys/<pkey>/guids/<guid>,<guid>...  remove GUIDs (current)
//   POST   /ufmRest/actions/remove_guids_from_pkey     remove GUIDs (deprecated; what ib-kubernetes
//          still calls): served, and counted in the dump as deprecated
//   GET    /ufmRest/app/ufm_version                    {"ufm_release_version": "..."}
// GUIDs are hex strings of 16 to 20 characters, a pkey a hex string between 0x0 and 0x7fff
// exclusive (the page's words): anything else is 400. Authentication: HTTP Basic (user and
// password) under /ufmRest/, an access token (UFM user manual, "Token-based Authentication") as
// "Authorization: Basic <token>" under /ufmRestV3/; neither is 401. Where the pages say nothing
// (an unknown pkey), this stand-in answers 404, which a client must treat as "nothing to remove".
//
// Test-only control, no authentication, under /_standin/: GET dump (pkeys, the calls counted
// by kind, and request_wait_ms: for each of the last 1000 API requests, the milliseconds from
// accepting its connection to the request's last byte, the TLS handshake included: what shows a
// client's own delays, such as Nagle holding its last handshake flight back for an ACK; and
// auth_seen: the Authorization headers of the last 20 API requests, answered or not, so that a
// test can tell whether credentials reached a server), POST down?mode=reset|503|hang[&method=M]
// (the API then resets every connection, answers 503, or never answers; with method, only
// requests of that method), POST up, POST reset (forget everything).
//
// node ufm.mjs --cert F --key F [--port N] [--user U --password P] [--token T] [--port-file F]
// prints "listening <port>" on stdout once it listens on 127.0.0.1.
import https from 'node:https';
import fs from 'node:fs';
import { parseArgs } from 'node:util';

const { values: opt } = parseArgs({
	options: {
		cert: { type: 'string' }, key: { type: 'string' }, port: { type: 'string', default: '0' },
		user: { type: 'string', default: 'admin' }, password: { type: 'string', default: '123456' },
		token: { type: 'string' }, 'port-file': { type: 'string' }, version: { type: 'string', default: '6.19.3' },
	},
});

const pkeys = new Map(); // "0x8001" -> { ip_over_ib, partition_name, guids: Map(guid -> {membership, index0}) }
const calls = { add: 0, remove: 0, remove_deprecated: 0, get: 0, list: 0, version: 0, unauthorized: 0, bad: 0, refused: 0 };
let down = null; // null, 'reset', '503', 'hang'
let downMethod = null; // with down: only requests of this method (null: every one)
const authSeen = []; // the Authorization headers of the last 20 API requests, answered or not
const waits = []; // request_wait_ms, the last 1000

const GUID_RE = /^(0x)?[0-9a-fA-F]{16,20}$/;
// The pkey as the API keys it: "0x" and lower-case hex without leading zeros
function pkeyNorm(s) {
	if (typeof s !== 'string' || !/^0x[0-9a-fA-F]{1,4}$/.test(s)) return null;
	const v = parseInt(s, 16);
	if (v <= 0 || v >= 0x7fff) return null;
	return '0x' + v.toString(16);
}
const guidNorm = (g) => g.toLowerCase().replace(/^0x/, '');

function send(res, code, body) {
	const text = typeof body === 'string' ? body : JSON.stringify(body);
	res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
	res.end(text);
}

function authorized(req, prefix) {
	const h = req.headers.authorization || '';
	if (!h.startsWith('Basic ')) return false;
	const cred = h.slice(6);
	if (prefix === '/ufmRestV3') return opt.token !== undefined && cred === opt.token;
	const plain = Buffer.from(cred, 'base64').toString();
	return plain === `${opt.user}:${opt.password}`;
}

function pkeyView(p, withGuids) {
	const o = { partition_name: p.partition_name, ip_over_ib: p.ip_over_ib };
	if (withGuids)
		o.guids = [...p.guids].map(([guid, m]) => ({ guid, membership: m.membership, index0: m.index0 }));
	return o;
}

function addGuids(body) {
	const key = pkeyNorm(body.pkey);
	if (!key) return [400, { error: `pkey ${JSON.stringify(body.pkey)}: a hex string between 0x0 and 0x7fff exclusive` }];
	if (!Array.isArray(body.guids) || body.guids.length === 0 || !body.guids.every((g) => typeof g === 'string' && GUID_RE.test(g)))
		return [400, { error: 'guids: a list of hex strings of 16 to 20 characters' }];
	const membership = body.membership ?? 'full';
	if (membership !== 'full' && membership !== 'limited') return [400, { error: 'membership: "full" or "limited"' }];
	for (const k of ['index0', 'ip_over_ib'])
		if (body[k] !== undefined && typeof body[k] !== 'boolean') return [400, { error: `${k}: a boolean` }];
	let p = pkeys.get(key);
	if (!p) {
		p = { partition_name: `api_pkey_${key}`, ip_over_ib: body.ip_over_ib ?? true, guids: new Map() };
		pkeys.set(key, p);
	}
	for (const g of body.guids) p.guids.set(guidNorm(g), { membership, index0: body.index0 ?? false });
	return [200, {}];
}

function removeGuids(pkey, guids) {
	const key = pkeyNorm(pkey);
	if (!key || !Array.isArray(guids) || !guids.every((g) => typeof g === 'string' && GUID_RE.test(g)))
		return [400, { error: 'pkey or guids malformed' }];
	const p = pkeys.get(key);
	if (!p) return [404, { error: `pkey ${key} not found` }];
	for (const g of guids) p.guids.delete(guidNorm(g));
	return [200, {}];
}

function body(req) {
	return new Promise((resolve) => {
		let b = '';
		req.on('data', (d) => (b += d));
		req.on('end', () => {
			try {
				resolve(b ? JSON.parse(b) : {});
			} catch {
				resolve(undefined);
			}
		});
	});
}

async function control(req, res, url) {
	const what = url.pathname.slice('/_standin/'.length);
	if (what === 'dump') {
		const o = {};
		for (const [k, p] of pkeys) o[k] = pkeyView(p, true);
		return send(res, 200, { pkeys: o, calls, down, request_wait_ms: waits, auth_seen: authSeen });
	}
	if (what === 'down') {
		down = url.searchParams.get('mode') || 'reset';
		downMethod = url.searchParams.get('method');
		return send(res, 200, { down });
	}
	if (what === 'up') {
		down = null;
		downMethod = null;
		return send(res, 200, { down });
	}
	if (what === 'reset') {
		pkeys.clear();
		for (const k of Object.keys(calls)) calls[k] = 0;
		waits.length = 0;
		authSeen.length = 0;
		return send(res, 200, {});
	}
	send(res, 404, { error: 'no such control' });
}

async function api(req, res, url) {
	const m = url.pathname.match(/^(\/ufmRest|\/ufmRestV3)(\/.*)$/);
	if (!m) return send(res, 404, { error: 'not found' });
	const [, prefix, rest] = m;
	if (req.headers.authorization !== undefined) {
		authSeen.push(req.headers.authorization);
		if (authSeen.length > 20) authSeen.shift();
	}
	if (down && (!downMethod || downMethod === req.method)) {
		calls.refused++;
		if (down === 'reset') return req.socket.destroy();
		if (down === '503') return send(res, 503, { error: 'UFM is down' });
		return; // hang: never answer
	}
	if (!authorized(req, prefix)) {
		calls.unauthorized++;
		res.setHeader('WWW-Authenticate', 'Basic realm="UFM"');
		return send(res, 401, { error: 'Unauthorized' });
	}
	const guidsData = url.searchParams.get('guids_data') === 'true';
	let r;
	if (req.method === 'GET' && rest === '/app/ufm_version') {
		calls.version++;
		r = [200, { ufm_release_version: opt.version }];
	} else if (req.method === 'GET' && rest === '/resources/pkeys') {
		calls.list++;
		const o = {};
		for (const [k, p] of pkeys) o[k] = pkeyView(p, guidsData);
		r = [200, o];
	} else if (req.method === 'GET' && /^\/resources\/pkeys\/[^/]+$/.test(rest)) {
		calls.get++;
		const key = pkeyNorm(decodeURIComponent(rest.split('/')[3]));
		const p = key && pkeys.get(key);
		r = !key ? [400, { error: 'bad pkey' }] : p ? [200, pkeyView(p, guidsData)] : [404, { error: `pkey ${key} not found` }];
	} else if (req.method === 'POST' && rest === '/resources/pkeys') {
		calls.add++;
		const b = await body(req);
		r = b && typeof b === 'object' ? addGuids(b) : [400, { error: 'body: a JSON object' }];
	} else if (req.method === 'DELETE' && /^\/resources\/pkeys\/[^/]+\/guids\/[^/]+$/.test(rest)) {
		calls.remove++;
		const parts = rest.split('/');
		r = removeGuids(decodeURIComponent(parts[3]), decodeURIComponent(parts[5]).split(','));
	} else if (req.method === 'POST' && rest === '/actions/remove_guids_from_pkey') {
		calls.remove_deprecated++;
		const b = await body(req);
		r = b ? removeGuids(b.pkey, b.guids) : [400, { error: 'body: a JSON object' }];
	} else {
		r = [404, { error: `no ${req.method} ${rest}` }];
	}
	if (r[0] === 400) calls.bad++;
	const acceptedAt = req.socket._parent?.acceptedAt; // the TLS socket's TCP one
	if (acceptedAt !== undefined) {
		waits.push(Number(process.hrtime.bigint() - acceptedAt) / 1e6);
		if (waits.length > 1000) waits.shift();
	}
	send(res, r[0], r[1]);
}

const server = https.createServer({ cert: fs.readFileSync(opt.cert), key: fs.readFileSync(opt.key) }, (req, res) => {
	const url = new URL(req.url, 'https://ufm');
	(url.pathname.startsWith('/_standin/') ? control(req, res, url) : api(req, res, url)).catch((e) =>
		send(res, 500, { error: String(e) }),
	);
});
server.on('connection', (sock) => {
	sock.acceptedAt = process.hrtime.bigint();
});
server.keepAliveTimeout = 1000;
server.listen(Number(opt.port), '127.0.0.1', () => {
	const port = server.address().port;
	if (opt['port-file']) fs.writeFileSync(opt['port-file'], `${port}\n`);
	process.stdout.write(`listening ${port}\n`);
});
for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => process.exit(0));
