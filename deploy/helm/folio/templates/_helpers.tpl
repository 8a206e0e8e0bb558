{{/*
Names. Object names are "<fullname>-<component>"; fullname is cut so that the
longest suffix ("-extraction", 11 characters) still fits 63.
*/}}
{{- define "folio.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default "folio" .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "folio.componentName" -}}
{{- printf "%s-%s" (include "folio.fullname" .root) .component -}}
{{- end -}}

{{/*
Labels. app.kubernetes.io/name is always "folio": the operator's sandbox
NetworkPolicy and FOLIO_CONVERSION_POD_SELECTOR find the conversion pods by it.
*/}}
{{- define "folio.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: folio
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: folio
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "folio.componentLabels" -}}
{{ include "folio.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "folio.selectorLabels" -}}
app.kubernetes.io/name: folio
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Pod labels of a long-running component: selector labels, common labels and the metrics marker. */}}
{{- define "folio.podLabels" -}}
{{ include "folio.componentLabels" . }}
folio.dev/metrics: "true"
{{- end -}}

{{/* image reference: repository@digest, else repository:tag (default appVersion). */}}
{{- define "folio.imageRef" -}}
{{- if .image.digest -}}
{{- printf "%s@%s" .image.repository .image.digest -}}
{{- else -}}
{{- printf "%s:%s" .image.repository (default .root.Chart.AppVersion .image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "folio.image" -}}
{{ include "folio.imageRef" (dict "image" .Values.image "root" .) }}
{{- end -}}

{{- define "folio.sandboxImage" -}}
{{ include "folio.imageRef" (dict "image" .Values.sandbox.image "root" .) }}
{{- end -}}

{{/* Edge replicas: one without Redis (rate limits and key fences are per process then). */}}
{{- define "folio.edgeReplicas" -}}
{{- if .Values.redis.enabled -}}{{ .Values.edge.replicas }}{{- else -}}1{{- end -}}
{{- end -}}

{{- define "folio.edgeAutoscaling" -}}
{{- if and .Values.edge.autoscaling.enabled .Values.redis.enabled -}}true{{- end -}}
{{- end -}}

{{/*
Secrets. Each of database, redis and upstream is read from its
existingSecret, else from the chart's Secret "<fullname>" (which holds the
values given as url/apiKey, or is created by the operator when none is).
*/}}
{{- define "folio.secretName" -}}
{{- default (include "folio.fullname" .root) .ref.existingSecret -}}
{{- end -}}

{{/* Keys the chart's own Secret holds: the values given inline without an existingSecret. */}}
{{- define "folio.inlineSecrets" -}}
{{- $out := dict -}}
{{- if and .Values.database.url (not .Values.database.existingSecret) -}}
{{- $_ := set $out .Values.database.existingSecretKey .Values.database.url -}}
{{- end -}}
{{- if and .Values.redis.enabled .Values.redis.url (not .Values.redis.existingSecret) -}}
{{- $_ := set $out .Values.redis.existingSecretKey .Values.redis.url -}}
{{- end -}}
{{- if and .Values.upstream.apiKey (not .Values.upstream.existingSecret) -}}
{{- $_ := set $out .Values.upstream.existingSecretKey .Values.upstream.apiKey -}}
{{- end -}}
{{- if and .Values.webhooks.secretKey (not .Values.webhooks.existingSecret) -}}
{{- $_ := set $out .Values.webhooks.existingSecretKey .Values.webhooks.secretKey -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{- define "folio.env.database" -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "folio.secretName" (dict "ref" .Values.database "root" .) }}
      key: {{ .Values.database.existingSecretKey }}
{{- end -}}

{{- define "folio.env.redis" -}}
{{- if .Values.redis.enabled }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "folio.secretName" (dict "ref" .Values.redis "root" .) }}
      key: {{ .Values.redis.existingSecretKey }}
{{- end }}
{{- end -}}

{{- define "folio.env.upstream" -}}
- name: FOLIO_UPSTREAM_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "folio.secretName" (dict "ref" .Values.upstream "root" .) }}
      key: {{ .Values.upstream.existingSecretKey }}
      {{- /* Without a key given here, one in the Secret is used when present: no upstream otherwise. */}}
      optional: {{ not (or .Values.upstream.apiKey .Values.upstream.existingSecret) }}
{{- end -}}

{{- define "folio.env.webhooks" -}}
- name: FOLIO_WEBHOOK_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "folio.secretName" (dict "ref" .Values.webhooks "root" .) }}
      key: {{ .Values.webhooks.existingSecretKey }}
      {{- /* Without a key given here, one in the Secret is used when present: webhooks off otherwise. */}}
      optional: {{ not (or .Values.webhooks.secretKey .Values.webhooks.existingSecret) }}
- name: FOLIO_WEBHOOK_ROTATION_OVERLAP_SECONDS
  value: {{ .Values.webhooks.rotationOverlapSeconds | int | quote }}
{{- end -}}

{{/*
The chart's gRPC services, as the edge and the workers reach them: the same
addresses and deadlines for both.
*/}}
{{- define "folio.env.services" -}}
{{- $fullname := include "folio.fullname" . -}}
- name: FOLIO_EXTRACTION_ADDRESS
  value: {{ printf "%s-extraction:50051" $fullname | quote }}
{{- if .Values.conversion.enabled }}
- name: FOLIO_CONVERSION_ADDRESS
  value: {{ printf "%s-conversion:50052" $fullname | quote }}
# The sandbox's time limit plus a minute for the queue and the sandbox pod's start.
- name: FOLIO_CONVERSION_DEADLINE_SECONDS
  value: {{ add .Values.conversion.timeoutSeconds 60 | quote }}
{{- end }}
{{- end -}}

{{/*
Durable jobs' limits (values `jobs`): the edge accepts jobs by them and the
workers read by them, so both get them from here. maxBytes goes through int64:
a float64 from YAML would print as 5.24288e+08.
*/}}
{{- define "folio.env.jobs" -}}
- name: FOLIO_JOB_MAX_PAGES
  value: {{ .Values.jobs.maxPages | int64 | quote }}
- name: FOLIO_JOB_MAX_BYTES
  value: {{ .Values.jobs.maxBytes | int64 | quote }}
- name: FOLIO_JOB_RETENTION_DAYS
  value: {{ .Values.jobs.retentionDays | toString | quote }}
- name: FOLIO_JOB_RANGE_PAGES
  value: {{ .Values.jobs.rangePages | int64 | quote }}
{{- end -}}

{{/* Variables every long-running process reads, then the component's extra env map. */}}
{{- define "folio.env.common" -}}
- name: LOG_LEVEL
  value: {{ .root.Values.logLevel | quote }}
- name: FOLIO_METRICS_PORT
  value: {{ .root.Values.metrics.port | quote }}
{{- with .root.Values.tracing.otlpEndpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
{{- end }}
{{- end -}}

{{/*
The parser jail of a process whose children parse client bytes (edge, worker:
pdfinfo/pdftoppm; extraction: tesseract), docs/adr/0006-parser-jail-bubblewrap.md.
Called with the root context.
*/}}
{{- define "folio.env.parserJail" -}}
- name: FOLIO_PARSER_JAIL
  value: {{ .Values.parserJail.mode | quote }}
{{- end -}}

{{/* The container security context of those processes: the chart's, with the jail's seccomp profile when it is on. */}}
{{- define "folio.parserSecurityContext" -}}
{{- if ne .Values.parserJail.mode "bwrap" }}
{{- toYaml .Values.containerSecurityContext }}
{{- else }}
{{- toYaml (mergeOverwrite (deepCopy .Values.containerSecurityContext) (dict "seccompProfile" .Values.parserJail.seccompProfile)) }}
{{- end }}
{{- end -}}

{{- define "folio.env.extra" -}}
{{- range $name, $value := . }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end -}}

{{/* A checksum of the chart's Secret, so pods restart when an inline secret changes. */}}
{{- define "folio.secretChecksum" -}}
{{ include "folio.inlineSecrets" . | sha256sum }}
{{- end -}}

{{/* The pod-level scheduling fields of a component's values. */}}
{{- define "folio.scheduling" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
Spread replicas over nodes, softly, unless the values give their own
constraints. .component, .values, .root.
*/}}
{{- define "folio.topologySpread" -}}
topologySpreadConstraints:
{{- if .values.topologySpreadConstraints }}
  {{- toYaml .values.topologySpreadConstraints | nindent 2 }}
{{- else }}
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "folio.selectorLabels" . | nindent 8 }}
{{- end }}
{{- end -}}

{{/* The writable /tmp every Folio container has (the root file system is read-only). */}}
{{- define "folio.tmpVolumeMount" -}}
- name: tmp
  mountPath: /tmp
{{- end -}}

{{- define "folio.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: 1Gi
{{- end -}}

{{/* HorizontalPodAutoscaler of a component: .component, .values, .root. */}}
{{- define "folio.hpa" -}}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "folio.componentName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "folio.componentLabels" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: {{ .kind | default "Deployment" }}
    name: {{ include "folio.componentName" . }}
  minReplicas: {{ .values.autoscaling.minReplicas }}
  maxReplicas: {{ .values.autoscaling.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ .values.autoscaling.targetCPUUtilizationPercentage }}
{{- end -}}

{{/* PodDisruptionBudget of a component: .component, .values, .root. */}}
{{- define "folio.pdb" -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "folio.componentName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "folio.componentLabels" . | nindent 4 }}
spec:
  maxUnavailable: {{ .values.pdb.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "folio.selectorLabels" . | nindent 6 }}
{{- end -}}

{{/* ServiceAccount of a component: .component, .values, .root, .automount, and .imagePullSecrets for pods that are not the chart's own. */}}
{{- define "folio.serviceAccount" -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "folio.componentName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "folio.componentLabels" . | nindent 4 }}
  {{- with .values.serviceAccount.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
automountServiceAccountToken: {{ .automount }}
{{- with .imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Whether the Prometheus Operator's kind .kind is served (or forced by .force). */}}
{{- define "folio.hasMonitoringKind" -}}
{{- if or .force (.root.Capabilities.APIVersions.Has (printf "monitoring.coreos.com/v1/%s" .kind)) -}}true{{- end -}}
{{- end -}}

{{/* The labels the operator puts on every sandbox pod (internal/operator/types.ts SANDBOX_POD_LABELS). */}}
{{- define "folio.sandboxPodLabels" -}}
app.kubernetes.io/name: folio
app.kubernetes.io/component: sandbox
app.kubernetes.io/managed-by: folio-operator
{{- end -}}

{{/* NetworkPolicy peers that call the gRPC services: the edge, and the jobs workers when they run. */}}
{{- define "folio.grpcClients" -}}
- podSelector:
    matchLabels:
      {{- include "folio.selectorLabels" (dict "root" . "component" "edge") | nindent 6 }}
{{- if .Values.worker.enabled }}
- podSelector:
    matchLabels:
      {{- include "folio.selectorLabels" (dict "root" . "component" "worker") | nindent 6 }}
{{- end }}
{{- end -}}

{{/* The ingress rule of every Folio pod's metrics port: from networkPolicy.metricsFrom, or from anywhere. */}}
{{- define "folio.metricsIngressRule" -}}
- ports:
    - protocol: TCP
      port: metrics
  {{- with .Values.networkPolicy.metricsFrom }}
  from:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
