{{/* Names and labels. */}}

{{- define "locus.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "locus.fullname" -}}
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

{{- define "locus.cachenode.fullname" -}}
{{- printf "%s-cachenode" (include "locus.fullname" .) | trunc 52 | trimSuffix "-" -}}
{{- end -}}

{{/* The headless Service that gives the cache nodes' gossip its DNS name. */}}
{{- define "locus.cachenode.gossipService" -}}
{{- printf "%s-gossip" (include "locus.cachenode.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "locus.scheduler.fullname" -}}
{{- printf "%s-scheduler" (include "locus.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "locus.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "locus.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "locus.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "locus.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: locus
{{- end -}}

{{/* Selector labels of one component: call with (dict "ctx" $ "component" "cachenode"). */}}
{{- define "locus.selectorLabels" -}}
app.kubernetes.io/name: {{ include "locus.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "locus.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/*
locus.flag appends one daemon flag to the list $acc.args, or nothing when
the value is empty (the daemon's default then applies). Lists are joined
with commas (the daemons' list flags); booleans are rendered even when
false. Call with (list $acc "flag-name" value); render $acc.args with toYaml.
*/}}
{{- define "locus.flag" -}}
{{- $acc := index . 0 -}}
{{- $name := index . 1 -}}
{{- $v := index . 2 -}}
{{- $arg := "" -}}
{{- if kindIs "bool" $v -}}
{{- $arg = printf "--%s=%t" $name $v -}}
{{- else if kindIs "slice" $v -}}
{{- if $v -}}{{- $arg = printf "--%s=%s" $name (join "," $v) -}}{{- end -}}
{{- else if not (kindIs "invalid" $v) -}}
{{- if ne (toString $v) "" -}}{{- $arg = printf "--%s=%v" $name $v -}}{{- end -}}
{{- end -}}
{{- if $arg -}}{{- $_ := set $acc "args" (append $acc.args $arg) -}}{{- end -}}
{{- end -}}

{{/*
Secret names and mount paths.
*/}}
{{- define "locus.gossipKeySecret" -}}
{{- default (printf "%s-gossip-key" (include "locus.fullname" .)) .Values.gossipKey.existingSecret -}}
{{- end -}}

{{- define "locus.authSecret" -}}
{{- default (printf "%s-auth" (include "locus.fullname" .)) .Values.scheduler.auth.existingSecret -}}
{{- end -}}

{{/* Validation shared by the templates: fails rendering with what to change. */}}
{{- define "locus.validate" -}}
{{- if and .Values.gossipKey.enabled (not .Values.gossipKey.key) (not .Values.gossipKey.existingSecret) -}}
{{- fail "gossipKey.enabled is true but neither gossipKey.key nor gossipKey.existingSecret is set: give the key (16, 24 or 32 bytes, raw or base64) or the name of a Secret holding it" -}}
{{- end -}}
{{- if and .Values.tls.enabled (not .Values.tls.secretName) -}}
{{- fail "tls.enabled is true but tls.secretName is empty: name a kubernetes.io/tls Secret (tls.crt, tls.key, and ca.crt when tls.ca is true)" -}}
{{- end -}}
{{- if and .Values.scheduler.auth.enabled (not .Values.scheduler.auth.token) (not .Values.scheduler.auth.existingSecret) -}}
{{- fail "scheduler.auth.enabled is true but neither scheduler.auth.token nor scheduler.auth.existingSecret is set: give the bearer token or the name of a Secret holding it" -}}
{{- end -}}
{{- if and (gt (int .Values.scheduler.replicas) 1) (not .Values.scheduler.etcd.endpoints) -}}
{{- fail (printf "scheduler.replicas is %d but scheduler.etcd.endpoints is empty: standalone schedulers each keep their own state in memory (DESIGN.md), so several would place tasks on the same slots and count them apart. Set scheduler.etcd.endpoints for a highly available scheduler, or scheduler.replicas to 1" (int .Values.scheduler.replicas)) -}}
{{- end -}}
{{- if lt (int .Values.cachenode.replicas) 1 -}}
{{- fail "cachenode.replicas must be at least 1" -}}
{{- end -}}
{{- end -}}

{{/*
locus.mebibytes converts a size to MiB: "<integer><unit>" with the units
MiB, GiB, TiB (the daemons') or Mi, Gi, Ti (Kubernetes quantities). Call
with (list "value.name" value). Anything else fails rendering: the chart
could not size the cache volume from it.
*/}}
{{- define "locus.mebibytes" -}}
{{- $what := index . 0 -}}
{{- $s := toString (index . 1) -}}
{{- if not (regexMatch "^[0-9]+(Mi|Gi|Ti)B?$" $s) -}}
{{- fail (printf "%s is %q: give it as an integer with the unit MiB, GiB or TiB (e.g. 100GiB) so the chart can size the cache volume from it" $what $s) -}}
{{- end -}}
{{- $n := int64 (regexFind "^[0-9]+" $s) -}}
{{- $unit := regexFind "(Mi|Gi|Ti)" $s -}}
{{- if eq $unit "Gi" -}}{{- $n = mul $n 1024 -}}{{- end -}}
{{- if eq $unit "Ti" -}}{{- $n = mul $n 1048576 -}}{{- end -}}
{{- $n -}}
{{- end -}}

{{/* The size of each cache node's volume for --cache-dir, as a Kubernetes quantity. */}}
{{- define "locus.cachenode.volumeSize" -}}
{{- $cache := int64 (include "locus.mebibytes" (list "cachenode.cacheSize" .Values.cachenode.cacheSize)) -}}
{{- if .Values.cachenode.persistence.size -}}
{{- $vol := int64 (include "locus.mebibytes" (list "cachenode.persistence.size" .Values.cachenode.persistence.size)) -}}
{{- if lt $vol $cache -}}
{{- fail (printf "cachenode.persistence.size (%s) is smaller than cachenode.cacheSize (%s): the disk cache would not fit; raise the volume or lower --cache-size" (toString .Values.cachenode.persistence.size) (toString .Values.cachenode.cacheSize)) -}}
{{- end -}}
{{- regexReplaceAll "B$" (toString .Values.cachenode.persistence.size) "" -}}
{{- else -}}
{{- $withHeadroom := div (add (mul $cache (add 100 (int64 .Values.cachenode.persistence.headroomPercent))) 99) 100 -}}
{{- printf "%dMi" $withHeadroom -}}
{{- end -}}
{{- end -}}

{{/* A probe of path on port: HTTP(S), or a TCP check under mTLS (kubelet has no client certificate). Call with (list $ path port settings). */}}
{{- define "locus.probe" -}}
{{- $ctx := index . 0 -}}
{{- $path := index . 1 -}}
{{- $port := index . 2 -}}
{{- $p := index . 3 -}}
{{- if and $ctx.Values.tls.enabled $ctx.Values.tls.ca -}}
tcpSocket:
  port: {{ $port }}
{{- else -}}
httpGet:
  path: {{ $path }}
  port: {{ $port }}
  scheme: {{ ternary "HTTPS" "HTTP" (and $ctx.Values.tls.enabled true) }}
{{- end }}
{{ toYaml $p }}
{{- end -}}
