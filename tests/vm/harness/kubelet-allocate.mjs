// SPDX-License-Identifier: Apache-2.0
// For tests/vm/plugin.sh: the tests' stand-in kubelet (tests/js/kubelet.mjs, grpc-js) serves
// Registration under KUBELET_DIR, waits for RESOURCE's registration and a ListAndWatch answer
// with at least one healthy device, allocates the first device for one container, and writes
// {"registration", "devices", "allocate"} as JSON to OUT. Exit 0, or 1 with the reason.
//   node kubelet-allocate.mjs KUBELET_DIR RESOURCE OUT
import fs from 'node:fs';
import { Kubelet } from '../../js/kubelet.mjs';

const [kdir, resource, out] = process.argv.slice(2);
const k = new Kubelet(kdir);
await k.start();
try {
	let reg;
	for (let n = 1; !reg; n++) {
		const r = await k.waitRegistration(n, 120000);
		if (r.req.resource_name === resource) reg = r;
	}
	const list = await reg.plugin.waitList((l) => l.some((d) => d.health === 'Healthy'), 120000);
	const first = list.find((d) => d.health === 'Healthy').ID;
	const alloc = await reg.plugin.allocate([[first]]);
	fs.writeFileSync(out, JSON.stringify({ registration: reg.req, devices: list, allocate: alloc }));
	reg.plugin.close();
} catch (e) {
	console.error(`kubelet-allocate: ${e.message || e}`);
	process.exitCode = 1;
}
await k.stop();
