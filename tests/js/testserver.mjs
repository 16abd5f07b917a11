// SPDX-License-Identifier: Apache-2.0
// Runs tests/helpers/kl_testserver (one kubelet_server with canned devices; see its header).
//   const s = await startTestServer(root, ['--devices', '4'], ms, env)  resolves once it is listening
//   s.pid, s.socketPath, s.stderr()   (everything it logged so far)
//   await s.waitStderr(/re/, ms)      until its log matches
//   s.signal('SIGUSR1')               flip dev0's health
//   await s.heap()                    heap in use (SIGUSR2): { bytes, asan: whether ASan counted it }
//   await s.stop()                    SIGTERM; resolves { code, signal, stderr }
// The binary is $KL_TESTSERVER, else $BUILD/tests/helpers/kl_testserver (BUILD from tests/run.sh),
// else build/tests/helpers/kl_testserver.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { TOP, withTimeout } from './kubelet.mjs';

export const TESTSERVER =
	process.env.KL_TESTSERVER || path.join(process.env.BUILD || path.join(TOP, 'build'), 'tests', 'helpers', 'kl_testserver');

export async function startTestServer(root, args = [], ms = 10000, env = process.env) {
	const proc = spawn(TESTSERVER, ['--kubelet-dir', root, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
	let err = '';
	let out = '';
	proc.stderr.on('data', (d) => (err += d));
	const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal, stderr: err })));
	const listening = new Promise((resolve, reject) => {
		proc.stdout.on('data', (d) => {
			out += d;
			const m = out.match(/^listening (.*)$/m);
			if (m) resolve(m[1]);
		});
		proc.on('error', reject);
		exited.then(({ code, signal }) => reject(new Error(`kl_testserver exited (${code ?? signal}): ${err}`)));
	});
	const socketPath = await withTimeout(listening, ms, 'kl_testserver to listen');
	const heap = () => {
		const seen = (out.match(/^heap \d+ \w+$/gm) || []).length;
		const p = new Promise((resolve) => {
			const onData = () => {
				const all = out.match(/^heap \d+ \w+$/gm) || [];
				if (all.length > seen) {
					const [, bytes, counter] = all[seen].split(' ');
					proc.stdout.off('data', onData);
					resolve({ bytes: Number(bytes), asan: counter === 'asan' });
				}
			};
			proc.stdout.on('data', onData);
		});
		proc.kill('SIGUSR2');
		return withTimeout(p, 5000, 'kl_testserver to print its heap');
	};
	return {
		proc,
		pid: proc.pid,
		socketPath,
		stderr: () => err,
		waitStderr: (re, waitMs = 5000) => {
			if (re.test(err)) return Promise.resolve();
			let onData;
			const p = new Promise((resolve) => {
				onData = () => re.test(err) && resolve();
				proc.stderr.on('data', onData);
			});
			return withTimeout(p, waitMs, `kl_testserver to log ${re}`).finally(() => proc.stderr.off('data', onData));
		},
		exited,
		signal: (sig) => proc.kill(sig),
		heap,
		stop: (stopMs = 10000) => {
			if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
			return withTimeout(exited, stopMs, 'kl_testserver to exit');
		},
	};
}

export function percentile(sorted, p) {
	if (!sorted.length) return NaN;
	return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}
