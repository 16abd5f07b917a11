// SPDX-License-Identifier: Apache-2.0
// The chart's webhook (deploy/chart/rdmak, templates/webhook.yaml, rendered by helm with seed 004's
// values) is valid Kubernetes objects (kubernetes-models' OpenAPI validators) that keep the promises
// their comments make; the ConfigMap's config is one `rdmak webhook` accepts, its rails are the
// NetworkAttachmentDefinitions deploy/ ships, and it gives seed 004's pod the seed's eight rails;
// the cert-manager objects chain up to the Secret the Deployment mounts (no cert-manager schema
// package here: checked field by field); the openssl alternative produces a pair the webhook
// serves and a client verifies, and keeps its CA across a renewal.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { MutatingWebhookConfiguration } from 'kubernetes-models/admissionregistration.k8s.io/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Service, ServiceAccount } from 'kubernetes-models/v1';
import YAML from 'yaml';
import { one, render } from './chart.mjs';
import { RDMAK, TOP, applyReviewPatch, loadYaml, post, review, startWebhook, validPod } from './webhookserver.mjs';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rdmak-webhook-deploy-'));
const load = (name) => YAML.parseAllDocuments(fs.readFileSync(path.join(TOP, 'deploy', name), 'utf8')).map((d) => d.toJS());
const byKind = (docs, kind) => docs.filter((d) => d.kind === kind);
const seed004 = render(['seed004']);
const webhookDocs = () => structuredClone(seed004.filter((d) => d.metadata.labels?.['app.kubernetes.io/component'] === 'webhook'));
const servers = [];

after(async () => {
	for (const s of servers) await s.stop('SIGKILL');
	fs.rmSync(dir, { recursive: true, force: true });
});

const dep = () => structuredClone(one(seed004, 'Deployment', 'rdmak-webhook'));
const argOf = (c, name) => c.args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

test('the webhook\'s Deployment, Service, PDB: valid objects; two unprivileged replicas with a read-only root', () => {
	const docs = webhookDocs();
	assert.deepEqual(docs.map((d) => d.kind).sort(), ['Certificate', 'Certificate', 'ConfigMap', 'Deployment', 'Issuer', 'Issuer',
		'MutatingWebhookConfiguration', 'PodDisruptionBudget', 'Service', 'ServiceAccount']);
	new ServiceAccount(one(docs, 'ServiceAccount')).validate();
	new Deployment(one(docs, 'Deployment')).validate();
	new PodDisruptionBudget(one(docs, 'PodDisruptionBudget')).validate();
	new Service(one(docs, 'Service')).validate();
	assert.equal(one(docs, 'ServiceAccount').automountServiceAccountToken, false);
	const d = one(docs, 'Deployment');
	assert.equal(d.spec.replicas, 2);
	const pod = d.spec.template.spec;
	assert.equal(pod.securityContext.runAsNonRoot, true);
	assert.ok(pod.securityContext.runAsUser > 0);
	const c = pod.containers[0];
	assert.equal(c.securityContext.privileged, false);
	assert.equal(c.securityContext.readOnlyRootFilesystem, true);
	assert.equal(c.securityContext.allowPrivilegeEscalation, false);
	assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']);
	assert.deepEqual(c.command, ['rdmak', 'webhook']);
	// the probes are the webhook's routes, over HTTPS
	assert.deepEqual([c.readinessProbe.httpGet.path, c.readinessProbe.httpGet.scheme], ['/readyz', 'HTTPS']);
	assert.deepEqual([c.livenessProbe.httpGet.path, c.livenessProbe.httpGet.scheme], ['/healthz', 'HTTPS']);
	// files the args name are in mounted volumes
	const mounts = Object.fromEntries(c.volumeMounts.map((m) => [m.name, m]));
	const vols = Object.fromEntries(pod.volumes.map((v) => [v.name, v]));
	assert.equal(path.dirname(argOf(c, 'config')), mounts.config.mountPath);
	assert.equal(path.dirname(argOf(c, 'tls-cert')), mounts.tls.mountPath);
	assert.equal(path.dirname(argOf(c, 'tls-key')), mounts.tls.mountPath);
	assert.equal(vols.config.configMap.name, 'rdmak-webhook');
	assert.equal(vols.tls.secret.secretName, 'rdmak-webhook-tls');
	// the memory limit holds the worst case of whole bodies the args allow, with room
	const limitMi = Number(c.resources.limits.memory.replace(/Mi$/, ''));
	assert.ok(Number(argOf(c, 'max-connections')) * Number(argOf(c, 'max-body')) < limitMi * 2 ** 20 * 0.8);
	// the Service reaches the container's port by name, the PDB covers the pods
	const svc = one(docs, 'Service');
	for (const [k, v] of Object.entries(svc.spec.selector)) assert.equal(d.spec.template.metadata.labels[k], v, `the Service selects the pods by ${k}`);
	assert.equal(svc.spec.ports[0].targetPort, c.ports[0].name);
	assert.equal(argOf(c, 'listen'), `:${c.ports[0].containerPort}`);
	assert.deepEqual(one(docs, 'PodDisruptionBudget').spec.selector.matchLabels, d.spec.selector.matchLabels);
	// the args are ones rdmak accepts: --help lists each
	const help = spawnSync(RDMAK, ['webhook', '--help'], { encoding: 'utf8' }).stdout;
	for (const a of c.args) assert.ok(help.includes(a.split('=')[0]), `${a} in --help`);
});

test('the MutatingWebhookConfiguration: pods on CREATE, sideEffects None, Fail narrowed by matchConditions', () => {
	const mwc = one(webhookDocs(), 'MutatingWebhookConfiguration');
	new MutatingWebhookConfiguration(mwc).validate();
	assert.equal(mwc.webhooks.length, 1);
	const w = mwc.webhooks[0];
	assert.deepEqual(w.rules, [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], scope: 'Namespaced' }]);
	assert.equal(w.sideEffects, 'None');
	assert.equal(w.failurePolicy, 'Fail');
	assert.equal(w.reinvocationPolicy, 'IfNeeded');
	assert.deepEqual(w.admissionReviewVersions, ['v1']);
	assert.deepEqual(w.namespaceSelector.matchExpressions,
		[{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system'] }]);
	// only pods that opted in reach the webhook (both annotations rdmak reads)
	assert.match(w.matchConditions[0].expression, /'rdmak\.io\/rdma-networks' in object\.metadata\.annotations/);
	assert.match(w.matchConditions[0].expression, /'cni\.spidernet\.io\/rdma-resource-inject' in object\.metadata\.annotations/);
	// it calls the Service, on the path the webhook serves
	const svc = one(webhookDocs(), 'Service');
	assert.deepEqual(w.clientConfig.service, { name: svc.metadata.name, namespace: svc.metadata.namespace, path: '/mutate', port: svc.spec.ports[0].port });
	// its own pods are in a namespace it leaves out: a new replica never waits on the webhook
	assert.ok(w.namespaceSelector.matchExpressions[0].values.includes(dep().metadata.namespace));
	// and a broken one is refused by the validator
	const broken = structuredClone(mwc);
	broken.webhooks[0].sideEffects = 7;
	assert.throws(() => new MutatingWebhookConfiguration(broken).validate());
});

test('cert-manager: self-signed root, CA issuer, a serving certificate for the Service into the mounted Secret', () => {
	const docs = webhookDocs().filter((d) => d.apiVersion.startsWith('cert-manager.io/'));
	assert.equal(docs.length, 4);
	for (const d of docs) assert.equal(d.apiVersion, 'cert-manager.io/v1');
	const issuers = Object.fromEntries(byKind(docs, 'Issuer').map((i) => [i.metadata.name, i]));
	const certs = Object.fromEntries(byKind(docs, 'Certificate').map((c) => [c.metadata.name, c]));
	const serving = certs['rdmak-webhook'];
	const ca = certs['rdmak-webhook-ca'];
	assert.ok(serving && ca);
	assert.equal(ca.spec.isCA, true);
	assert.ok(issuers[ca.spec.issuerRef.name].spec.selfSigned);
	assert.equal(issuers[serving.spec.issuerRef.name].spec.ca.secretName, ca.spec.secretName);
	assert.equal(serving.spec.secretName, dep().spec.template.spec.volumes.find((v) => v.name === 'tls').secret.secretName);
	const svc = one(webhookDocs(), 'Service');
	assert.ok(serving.spec.dnsNames.includes(`${svc.metadata.name}.${svc.metadata.namespace}.svc`));
	assert.ok(serving.spec.usages.includes('server auth'));
	for (const d of docs) assert.equal(d.metadata.namespace, svc.metadata.namespace);
	// cainjector fills caBundle from the serving Certificate (its CA, stable across renewals)
	const mwc = one(webhookDocs(), 'MutatingWebhookConfiguration');
	assert.equal(mwc.metadata.annotations['cert-manager.io/inject-ca-from'], `${serving.metadata.namespace}/${serving.metadata.name}`);
});

test('the webhook ConfigMap: a config rdmak accepts, with seed 004\'s rails as deploy/ declares them, and seed 002\'s shared HCA', () => {
	const cm = one(webhookDocs(), 'ConfigMap');
	new ConfigMap(cm).validate();
	const d = dep();
	assert.equal(cm.metadata.name, d.spec.template.spec.volumes.find((v) => v.name === 'config').configMap.name);
	const key = path.basename(argOf(d.spec.template.spec.containers[0], 'config'));
	assert.ok(key in cm.data, `the Deployment reads ${key}`);
	const file = path.join(dir, key);
	fs.writeFileSync(file, cm.data[key]);
	const r = spawnSync(RDMAK, ['webhook', '--check', '--json', '--config', file], { encoding: 'utf8' });
	assert.equal(r.status, 0, r.stderr);
	const cfg = JSON.parse(r.stdout);
	const groups = Object.fromEntries(cfg.groups.map((g) => [g.name, g]));
	assert.deepEqual(Object.keys(groups), ['gpu-sriov']);
	// every rail is a NetworkAttachmentDefinition in deploy/ bound to the same resource
	const nads = load('cni-nad-seed004-roce.yaml').filter((n) => n?.kind === 'NetworkAttachmentDefinition');
	assert.equal(groups['gpu-sriov'].networks.length, 8);
	for (const n of groups['gpu-sriov'].networks) {
		const nad = nads.find((x) => x.metadata.name === n.name && x.metadata.namespace === n.namespace);
		assert.ok(nad, `NAD ${n.namespace}/${n.name} in deploy/cni-nad-seed004-roce.yaml`);
		assert.equal(nad.metadata.annotations['k8s.v1.cni.cncf.io/resourceName'], n.resource);
		assert.equal(n.count, 1);
	}
	// seed 002's group: the shared HCA its test pods ask for by hand
	const file2 = path.join(dir, 'seed002.yaml');
	fs.writeFileSync(file2, one(render(['seed002']), 'ConfigMap', 'rdmak-webhook').data[key]);
	const r2 = spawnSync(RDMAK, ['webhook', '--check', '--json', '--config', file2], { encoding: 'utf8' });
	assert.equal(r2.status, 0, r2.stderr);
	const [shared] = JSON.parse(r2.stdout).groups;
	assert.equal(shared.name, 'shared-a');
	assert.deepEqual(shared.resources, { 'rdma/rdma_shared_device_a': 1 });
});

test('the openssl alternative: a pair the webhook serves under the Service name; a renewal keeps the CA', async () => {
	const certs = path.join(dir, 'certs');
	const script = path.join(TOP, 'deploy', 'webhook-certs-openssl.sh');
	execFileSync(script, ['--dir', certs, '--days', '2'], { stdio: 'pipe' });
	const ca1 = fs.readFileSync(path.join(certs, 'ca.crt'));
	const cm = one(webhookDocs(), 'ConfigMap');
	const cfg = path.join(dir, 'config.yaml');
	fs.writeFileSync(cfg, cm.data['config.yaml']);
	const s = await startWebhook({ config: cfg, cert: path.join(certs, 'tls.crt'), key: path.join(certs, 'tls.key') });
	servers.push(s);
	// seed 004's pod through the shipped config, verified as the API server would: the Service's name
	const pod = loadYaml('seed004-rdma-tools-pod.yaml');
	const r = await post(s.port, path.join(certs, 'ca.crt'), review(pod), { servername: 'rdmak-webhook.kube-system.svc' });
	assert.equal(r.status, 200);
	const out = applyReviewPatch(pod, r.json.response);
	validPod(out);
	assert.equal(JSON.parse(out.metadata.annotations['k8s.v1.cni.cncf.io/networks']).length, 8);
	// renewal: same CA (caBundle unchanged), a new serving pair the running webhook picks up
	const before = fs.readFileSync(path.join(certs, 'tls.crt'));
	execFileSync(script, ['--dir', certs, '--days', '2'], { stdio: 'pipe' });
	assert.deepEqual(fs.readFileSync(path.join(certs, 'ca.crt')), ca1);
	assert.notDeepEqual(fs.readFileSync(path.join(certs, 'tls.crt')), before);
	await s.waitLog(/certificate reloaded: CN=rdmak-webhook\.kube-system\.svc/);
	const again = await post(s.port, path.join(certs, 'ca.crt'), review(pod), { servername: 'rdmak-webhook.kube-system.svc', agent: false });
	assert.equal(again.status, 200);
	const { code } = await s.stop('SIGTERM');
	assert.equal(code, 0);
});
