{{/* SPDX-License-Identifier: Apache-2.0 */}}
{{/*
Names: "rdmak" for a release named rdmak (or anything containing it), else "<release>-rdmak";
each component is "<fullname>-<component>", so `helm install rdmak` gives the names the docs use
(rdmak-plugin, rdmak-webhook, ...).
*/}}
{{- define "rdmak.fullname" -}}
{{- if contains "rdmak" .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-rdmak" .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "rdmak.name" -}}
{{- printf "%s-%s" (include "rdmak.fullname" .root) .component -}}
{{- end -}}

{{/* selector labels: stable across upgrades (a selector is immutable) */}}
{{- define "rdmak.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rdmak.name" . }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end -}}

{{- define "rdmak.labels" -}}
{{ include "rdmak.selectorLabels" . }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/part-of: rdmak
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{/* registry/repository:tag, the registry replaced by global.imageRegistryOverride */}}
{{- define "rdmak.imageRef" -}}
{{- $reg := .image.registry -}}
{{- if .root.Values.global.imageRegistryOverride -}}{{- $reg = .root.Values.global.imageRegistryOverride -}}{{- end -}}
{{- $tag := .image.tag | default .root.Chart.AppVersion -}}
{{- if $reg -}}
{{- printf "%s/%s:%s" (trimSuffix "/" $reg) .image.repository $tag -}}
{{- else -}}
{{- printf "%s:%s" .image.repository $tag -}}
{{- end -}}
{{- end -}}

{{- define "rdmak.image" -}}
{{- include "rdmak.imageRef" (dict "root" . "image" .Values.image) -}}
{{- end -}}

{{- define "rdmak.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ . | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* the scheduling values every component has */}}
{{- define "rdmak.scheduling" -}}
{{- with .nodeSelector }}
nodeSelector:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with .priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- end -}}

{{/*
The container hardening every rdmak container shares: no privilege, no capability, a read-only
root, no setuid escalation, the runtime's default seccomp filter.
*/}}
{{- define "rdmak.containerSecurity" -}}
privileged: false
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: {drop: ["ALL"]}
seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{- define "rdmak.webhookService" -}}
{{- include "rdmak.name" (dict "root" . "component" "webhook") -}}
{{- end -}}

{{- define "rdmak.etcdName" -}}
{{- include "rdmak.name" (dict "root" . "component" "etcd") -}}
{{- end -}}

{{/* plugin.config, or k8s-rdma-shared-dev-plugin's default when it is empty (values.yaml says why) */}}
{{- define "rdmak.pluginConfig" -}}
{{- $default := dict "configList" (list (dict "resourceName" "hca_shared_devices_a" "rdmaHcaMax" 1000 "selectors" (dict "vendors" (list "15b3")))) -}}
{{- toPrettyJson (.Values.plugin.config | default $default) -}}
{{- end -}}

{{/* vf.policies as one List (rdmak vf reads a List's items) */}}
{{- define "rdmak.vfPolicies" -}}
{{- dict "apiVersion" "v1" "kind" "List" "items" (.Values.vf.policies | default list) | toPrettyJson }}
{{- end -}}

{{/* the labels policies' nodeSelector is matched against: the plugin's nodeSelector (this node has
them: the vf pod runs only there) and vf.nodeLabels, as k=v,k2=v2 ("" when none) */}}
{{- define "rdmak.vfNodeLabels" -}}
{{- $l := merge (dict) (.Values.vf.nodeLabels | default dict) (.Values.plugin.nodeSelector | default dict) }}
{{- $out := list }}
{{- range $k := keys $l | sortAlpha }}
{{- if not (kindIs "invalid" (index $l $k)) }}
{{- $out = append $out (printf "%s=%s" $k (index $l $k)) }}
{{- end }}
{{- end }}
{{- join "," $out }}
{{- end -}}

{{/* the node's fabrics file (docs/fabric.md) as the cni part installs it: each fabric's
credentials and CA under /etc/rdmak/fabric/<name>/ on the host, where `rdmak cni install` copies them */}}
{{- define "rdmak.fabricsJson" -}}
{{- $fabrics := dict }}
{{- range $name, $f := .Values.fabric.fabrics }}
{{- $one := dict "ufm" $f.ufm "credentials" (printf "/etc/rdmak/fabric/%s" $name) }}
{{- if or $f.ca (and $f.credentials $f.credentials.ca) }}
{{- $_ := set $one "ca" (printf "/etc/rdmak/fabric/%s/ca.crt" $name) }}
{{- end }}
{{- if $f.timeoutSeconds }}
{{- $_ := set $one "timeoutSeconds" $f.timeoutSeconds }}
{{- end }}
{{- $_ := set $fabrics $name $one }}
{{- end }}
{{- dict "stateDir" .Values.fabric.stateDir "fabrics" $fabrics | toPrettyJson }}
{{- end -}}

{{/*
The node's CNI settings (/etc/rdmak/cni.json, docs/cni.md and docs/ipam.md "What it trusts"):
host paths and the etcd stores by name, each store's client certificate where the cni part's
installer puts its Secret (/etc/rdmak/etcd/<name>/). No secret in it.
*/}}
{{- define "rdmak.cniJson" -}}
{{- $n := .Values.cni.node }}
{{- $stores := dict }}
{{- range $name, $e := $n.etcd }}
{{- $one := dict "endpoints" $e.endpoints }}
{{- if $e.prefix }}
{{- $_ := set $one "prefix" $e.prefix }}
{{- end }}
{{- if $e.secretName }}
{{- $dir := printf "/etc/rdmak/etcd/%s" $name }}
{{- $_ := set $one "tls" (dict "ca" (printf "%s/ca.crt" $dir) "cert" (printf "%s/tls.crt" $dir) "key" (printf "%s/tls.key" $dir)) }}
{{- end }}
{{- $_ := set $stores $name $one }}
{{- end }}
{{- dict "sysfs" $n.sysfs "stateDir" $n.stateDir "logDir" $n.logDir "dataDirs" $n.dataDirs "etcd" $stores | toPrettyJson }}
{{- end -}}

{{/* a fabric's Secret: the one it names, or the chart's own for credentials given in the values */}}
{{- define "rdmak.fabricSecret" -}}
{{- if .fabric.secretName -}}
{{- .fabric.secretName -}}
{{- else -}}
{{- printf "%s-fabric-%s" (include "rdmak.fullname" .root) .name -}}
{{- end -}}
{{- end -}}

{{/*
Liveness of a daemon that serves no HTTP (plugin, cni, doctor, vf): the daemon touches
/run/rdmak-alive/alive at every pass of its loop (--alive-file, at least once a second), and
`rdmak probe` fails when the file is older than 60 s or missing. The startup probe holds the
liveness probe back until the loop first runs (the plugin may wait up to vf.waitTimeout for the
vf marker before it starts its loop): .startup is how many seconds that may take.
*/}}
{{- define "rdmak.aliveProbes" -}}
startupProbe:
  exec: {command: ["rdmak", "probe", "--max-age", "60", "/run/rdmak-alive/alive"]}
  periodSeconds: 10
  timeoutSeconds: 10
  failureThreshold: {{ add1 (div (add .startup 9) 10) }}
livenessProbe:
  exec: {command: ["rdmak", "probe", "--max-age", "60", "/run/rdmak-alive/alive"]}
  periodSeconds: 30
  timeoutSeconds: 10
  failureThreshold: 3
{{- end -}}

{{- define "rdmak.aliveMount" -}}
- {name: alive, mountPath: /run/rdmak-alive}
{{- end -}}

{{- define "rdmak.aliveVolume" -}}
- name: alive
  emptyDir: {medium: Memory, sizeLimit: 1Mi}
{{- end -}}
