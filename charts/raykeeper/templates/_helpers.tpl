{{/* Object-name prefix: the release name, plus "-raykeeper" unless it already contains the chart name. */}}
{{- define "raykeeper.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "raykeeper.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "raykeeper.webhook" -}}{{ include "raykeeper.fullname" . }}-webhook{{- end -}}
{{- define "raykeeper.controller" -}}{{ include "raykeeper.fullname" . }}-controller{{- end -}}
{{- define "raykeeper.tlsSecret" -}}
{{- if eq .Values.certs.mode "provided" -}}{{ .Values.certs.provided.secretName }}{{- else -}}{{ include "raykeeper.webhook" . }}-tls{{- end -}}
{{- end -}}

{{- define "raykeeper.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/*
Selector labels of a component (include with (dict "ctx" $ "component" "webhook")). The same as the
kustomize tree's, so a Service or PodDisruptionBudget selects the same Pods either way.
*/}}
{{- define "raykeeper.selectorLabels" -}}
app.kubernetes.io/name: {{ include "raykeeper.name" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Metadata labels: the selector labels plus Helm's. */}}
{{- define "raykeeper.labels" -}}
{{ include "raykeeper.selectorLabels" . }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The namespaces the controller watches ([] = all). */}}
{{- define "raykeeper.watchAll" -}}
{{- if empty .Values.controller.watchNamespaces }}true{{ end -}}
{{- end -}}

{{/* Pod-level security of both Deployments: the restricted Pod Security Standard. */}}
{{- define "raykeeper.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "raykeeper.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop:
    - ALL
{{- end -}}

{{/* Scheduling fields shared by both Deployments (include with the component's values). */}}
{{- define "raykeeper.scheduling" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- end -}}

{{/*
The webhook's CA bundle (base64 PEM) and serving certificate, decided once per render and cached in
.Values (templates share one copy of .Values): on upgrade, the existing Secret's certificate, key and CA
are kept, so the CA never rotates under a running webhook; on install (or in `helm template`) new ones.
*/}}
{{- define "raykeeper.generatedCerts" -}}
{{- if not .Values.__certs -}}
{{- $secretName := include "raykeeper.tlsSecret" . -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace $secretName -}}
{{- if and $existing $existing.data (index $existing.data "tls.crt") (index $existing.data "tls.key") (index $existing.data "ca.crt") -}}
{{- $_ := set .Values "__certs" (dict "crt" (index $existing.data "tls.crt") "key" (index $existing.data "tls.key") "ca" (index $existing.data "ca.crt")) -}}
{{- else -}}
{{- $svc := include "raykeeper.webhook" . -}}
{{- $ns := .Release.Namespace -}}
{{- $days := int .Values.certs.generate.validityDays -}}
{{- $ca := genCA (printf "%s-ca" $svc) $days -}}
{{- $names := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) -}}
{{- $cert := genSignedCert (printf "%s.%s.svc" $svc $ns) nil $names $days $ca -}}
{{- $_ := set .Values "__certs" (dict "crt" ($cert.Cert | b64enc) "key" ($cert.Key | b64enc) "ca" ($ca.Cert | b64enc)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "raykeeper.caBundle" -}}
{{- if eq .Values.certs.mode "generate" -}}
{{- include "raykeeper.generatedCerts" . -}}
{{- .Values.__certs.ca -}}
{{- else if eq .Values.certs.mode "provided" -}}
{{- .Values.certs.provided.caBundle -}}
{{- end -}}
{{- end -}}

{{/* --reconcilers: the list given, else "" (all of them; companion mode leaves out those KubeRay runs). */}}
{{- define "raykeeper.reconcilers" -}}
{{- if .Values.controller.reconcilers -}}
{{- join "," .Values.controller.reconcilers -}}
{{- end -}}
{{- end -}}

{{/*
--orphan-scan-interval: the value given; under watchNamespaces unset means "0" (off), because each scan lists
RayClusters in every namespace, which the watched namespaces' Roles do not allow.
*/}}
{{- define "raykeeper.orphanScanInterval" -}}
{{- if .Values.controller.orphans.scanInterval }}{{ .Values.controller.orphans.scanInterval }}{{ else if not (include "raykeeper.watchAll" .) }}0{{ end -}}
{{- end -}}

{{/* "true" when the orphan finder scans under watchNamespaces: it then needs list on RayClusters cluster-wide (and nothing else there). */}}
{{- define "raykeeper.orphanListAll" -}}
{{- $scan := include "raykeeper.orphanScanInterval" . -}}
{{- $r := include "raykeeper.reconcilers" . -}}
{{- if and (not (include "raykeeper.watchAll" .)) $scan (ne $scan "0") (or (not $r) (has "gcs-orphans" (splitList "," $r))) }}true{{ end -}}
{{- end -}}

{{/* "true" when the RayJob reconciler runs (its RBAC, its webhook): never in companion mode. */}}
{{- define "raykeeper.rayjobEnabled" -}}
{{- $r := include "raykeeper.reconcilers" . -}}
{{- if and (not .Values.companion.enabled) (or (not $r) (has "rayjob" (splitList "," $r))) }}true{{ end -}}
{{- end -}}

{{/* "true" when the RayCronJob reconciler runs (its RBAC, its webhook): never in companion mode, like rayjob. */}}
{{- define "raykeeper.raycronjobEnabled" -}}
{{- $r := include "raykeeper.reconcilers" . -}}
{{- if and (not .Values.companion.enabled) (or (not $r) (has "raycronjob" (splitList "," $r))) }}true{{ end -}}
{{- end -}}

{{/* "true" when the RayCluster operator (reconciler raycluster-pods: Ray pods and Services) runs: never in companion mode. */}}
{{- define "raykeeper.operatorEnabled" -}}
{{- $r := include "raykeeper.reconcilers" . -}}
{{- if and (not .Values.companion.enabled) (or (not $r) (has "raycluster-pods" (splitList "," $r))) }}true{{ end -}}
{{- end -}}

{{/*
The controller's RBAC rules (include with (dict "rayjob" <bool> "raycronjob" <bool> "operator" <bool>)): the ClusterRole's, or each watched
namespace's Role's. Why each rule is there: manifests/base/rbac-controller.yaml.
*/}}
{{- define "raykeeper.controllerRules" -}}
{{- if .rayjob }}
- apiGroups: ["ray.io"]
  resources: ["rayclusters"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["ray.io"]
  resources: ["rayjobs"]
  verbs: ["get", "list", "watch", {{ if .raycronjob }}"create", {{ end }}"update", "patch", "delete"]
- apiGroups: ["ray.io"]
  resources: ["rayclusters/status", "rayjobs/status"]
  verbs: ["get", "update", "patch"]
{{- if .raycronjob }}
- apiGroups: ["ray.io"]
  resources: ["raycronjobs"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["ray.io"]
  resources: ["raycronjobs/status"]
  verbs: ["update", "patch"]
{{- end }}
- apiGroups: ["ray.io"]
  resources: ["rayclusters/finalizers", "rayjobs/finalizers"{{ if .raycronjob }}, "raycronjobs/finalizers"{{ end }}]
  verbs: ["update"]
{{- else }}
{{- /* The RayCluster reconciler alone: finalizer patches and the cleanup Job's owner; no create, delete or status. */}}
- apiGroups: ["ray.io"]
  resources: ["rayclusters"]
  verbs: ["get", "list", "watch", "update", "patch"]
- apiGroups: ["ray.io"]
  resources: ["rayclusters/finalizers"]
  verbs: ["update"]
{{- if .raycronjob }}
{{- /* RayCronJobs without the RayJob state machine: their RayJobs created and deleted, their status written. */}}
- apiGroups: ["ray.io"]
  resources: ["rayjobs"]
  verbs: ["get", "list", "watch", "create", "delete"]
- apiGroups: ["ray.io"]
  resources: ["raycronjobs"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["ray.io"]
  resources: ["raycronjobs/status"]
  verbs: ["update", "patch"]
- apiGroups: ["ray.io"]
  resources: ["raycronjobs/finalizers"]
  verbs: ["update"]
{{- end }}
{{- end }}
{{- if .operator }}
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "watch", "create", "delete"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["list", "watch", "create"{{ if .rayjob }}, "update"{{ end }}]
{{- /* The autoscaler's ServiceAccount, Role and RoleBinding; holding the Role's rules is what lets us create it. */}}
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "patch"]
- apiGroups: [""]
  resources: ["pods/resize"]
  verbs: ["patch"]
- apiGroups: [""]
  resources: ["serviceaccounts"]
  verbs: ["get", "create"]
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["roles", "rolebindings"]
  verbs: ["get", "create"]
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["create"]
{{- /* Embedded GCS storage: the operator-managed <cluster>-gcs-pvc (get, create; the GC deletes it), listed by the orphan finder. */}}
- apiGroups: [""]
  resources: ["persistentvolumeclaims"]
  verbs: ["get", "list", "create"]
{{- else }}
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "watch", "delete"]
{{- if .rayjob }}
{{- /* The RayJob's own head Service (<rayjob>-head-svc): made in Running, moved to a retry's cluster. */}}
- apiGroups: [""]
  resources: ["services"]
  verbs: ["list", "watch", "create", "update"]
{{- end }}
{{- end }}
{{- if or .rayjob .operator }}
{{- /* Token auth: a GET of the named auth Secret (the RayJob's dashboard token; the operator's check), never list or watch. */}}
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get"]
{{- end }}
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["create", "get", "list", "watch", "delete"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end -}}
