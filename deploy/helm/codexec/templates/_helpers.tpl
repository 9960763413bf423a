{{/* Object name: "<release>-<chart>" unless overridden, at most 63 characters. */}}
{{- define "codexec.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "codexec.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels that select the pods; never change them in an upgrade. */}}
{{- define "codexec.selectorLabels" -}}
app.kubernetes.io/name: {{ include "codexec.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "codexec.labels" -}}
{{ include "codexec.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The chart's own Secret, rendered when any secret value is inline. */}}
{{- define "codexec.secretName" -}}
{{- include "codexec.fullname" . -}}
{{- end -}}

{{- define "codexec.hasInlineSecret" -}}
{{- if or (and .Values.auth.tokens (not .Values.auth.existingSecret)) (and .Values.store.dsn (not .Values.store.existingSecret)) (and .Values.blobStore.dsn (not .Values.blobStore.existingSecret)) (and .Values.replicaSecret.value (not .Values.replicaSecret.existingSecret)) -}}true{{- end -}}
{{- end -}}

{{/* Whether the shared stores are configured (both are needed for replicas). */}}
{{- define "codexec.sharedStore" -}}
{{- if and (or .Values.store.dsn .Values.store.existingSecret) (or .Values.blobStore.dsn .Values.blobStore.existingSecret) -}}true{{- end -}}
{{- end -}}

{{/* Settings the chart sets itself; refused in .Values.env. */}}
{{- define "codexec.ownedEnv" -}}
CODEXEC_SANDBOX_MODE CODEXEC_DATA_DIR CODEXEC_HTTP_ADDR CODEXEC_AUTH_TOKENS CODEXEC_OAUTH_ISSUER CODEXEC_OAUTH_JWKS_URL CODEXEC_OAUTH_SCOPES CODEXEC_RESOURCE_URL CODEXEC_STORE CODEXEC_BLOB_STORE CODEXEC_SHUTDOWN_GRACE_MS CODEXEC_REPLICA_ID CODEXEC_REPLICA_ADDR CODEXEC_REPLICA_SECRET OTEL_EXPORTER_OTLP_ENDPOINT OTEL_SERVICE_NAME OTEL_TRACES_SAMPLER OTEL_TRACES_SAMPLER_ARG OTEL_EXPORTER_OTLP_HEADERS
{{- end -}}

{{/*
Refuses value combinations that would deploy a server that cannot work or
that anyone on the network could use. Included by the Deployment.
*/}}
{{- define "codexec.validate" -}}
{{- $v := .Values -}}
{{- if not (has $v.sandbox.mode (list "namespace" "subprocess")) -}}
{{- fail (printf "sandbox.mode must be namespace or subprocess, got %q (docker mode needs a container engine the chart does not provide)" $v.sandbox.mode) -}}
{{- end -}}
{{- if not (or $v.auth.tokens $v.auth.existingSecret $v.auth.oauth.issuer $v.auth.allowUnauthenticated) -}}
{{- fail "no authentication: set auth.tokens, auth.existingSecret or auth.oauth.issuer (or auth.allowUnauthenticated=true when nothing untrusted can reach the Service)" -}}
{{- end -}}
{{- if and $v.auth.oauth.issuer (not $v.auth.resourceURL) -}}
{{- fail "auth.oauth.issuer needs auth.resourceURL: the public URL of /mcp that access tokens are issued for" -}}
{{- end -}}
{{- $replicas := ternary (int $v.autoscaling.maxReplicas) (int $v.replicaCount) $v.autoscaling.enabled -}}
{{- if and (gt $replicas 1) (not (include "codexec.sharedStore" .)) -}}
{{- fail "more than one replica (replicaCount > 1 or autoscaling.enabled) needs the shared stores: set store.dsn or store.existingSecret (PostgreSQL) and blobStore.dsn or blobStore.existingSecret (S3)" -}}
{{- end -}}
{{- if and (or $v.store.dsn $v.store.existingSecret) (not (or $v.replicaSecret.value $v.replicaSecret.existingSecret)) -}}
{{- fail "store needs replicaSecret.value or replicaSecret.existingSecret: the secret replicas sign the calls they forward to each other with (16+ characters; openssl rand -hex 32)" -}}
{{- end -}}
{{- if and $v.persistence.enabled (gt $replicas 1) -}}
{{- fail "persistence.enabled gives one ReadWriteOnce volume: use it with replicaCount=1 and autoscaling.enabled=false" -}}
{{- end -}}
{{- if and $v.autoscaling.enabled (gt (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas)) -}}
{{- fail "autoscaling.minReplicas must not exceed autoscaling.maxReplicas" -}}
{{- end -}}
{{- if and $v.tracing.collector.enabled (not $v.tracing.collector.exportEndpoint) -}}
{{- fail "tracing.collector.enabled needs tracing.collector.exportEndpoint: where the sidecar sends the traces" -}}
{{- end -}}
{{- range $name, $_ := $v.env -}}
{{- if has $name (splitList " " (include "codexec.ownedEnv" $)) -}}
{{- fail (printf "env.%s is set by the chart; use its own value instead (see values.yaml)" $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
