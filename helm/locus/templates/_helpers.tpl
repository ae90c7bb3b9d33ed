{{/* Names and labels. */}}

{{- define "locus.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
locus.fullname is the prefix of every object's name, at most 42
characters: the longest name built on it, the cache nodes' StatefulSet
(prefix + "-cachenode", which must stay within 52 for its pods'
controller-revision-hash label), then fits whole, and so does every other
suffix within 63, so no two objects are truncated to one name.
*/}}
{{- define "locus.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 42 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 42 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 42 | trimSuffix "-" -}}
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

{{/* The pod IP as the host of an advertised host:port: bracketed for IPv6. */}}
{{- define "locus.advertiseHost" -}}
{{- ternary "[$(POD_IP)]" "$(POD_IP)" (eq .Values.ipFamily "IPv6") -}}
{{- end -}}

{{- define "locus.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/*
locus.flag appends one daemon flag to the list $acc.args, or nothing when
the value is empty (the daemon's default then applies). Lists are joined
with commas (the daemons' list flags); booleans are rendered even when
false. Call with (list $acc "flag-name" value); render $acc.args with toYaml.

Numbers from a values file reach the template as float64, which %v prints
in exponent form from a million on (1e+06, 2.097152e+06), a form no daemon
flag parses: whole numbers are printed as integers. Sizes written as
Kubernetes quantities (8Gi) get the B the daemons' units need (8GiB).
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
{{- else if and (kindIs "float64" $v) (eq $v (floor $v)) -}}
{{- $arg = printf "--%s=%d" $name (int64 $v) -}}
{{- else if not (kindIs "invalid" $v) -}}
{{- if ne (toString $v) "" -}}{{- $arg = printf "--%s=%s" $name (include "locus.daemonSize" $v) -}}{{- end -}}
{{- end -}}
{{- if $arg -}}{{- $_ := set $acc "args" (append $acc.args $arg) -}}{{- end -}}
{{- end -}}

{{/* locus.daemonSize: a Kubernetes binary quantity (8Gi) as the daemons' unit (8GiB); anything else as it is. */}}
{{- define "locus.daemonSize" -}}
{{- $s := toString . -}}
{{- if regexMatch "^[0-9.]+(Ki|Mi|Gi|Ti)$" $s -}}{{- printf "%sB" $s -}}{{- else -}}{{- $s -}}{{- end -}}
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
{{- include "locus.validateForward" . -}}
{{- $full := include "locus.fullname" . -}}
{{- if not (regexMatch "^[a-z]([-a-z0-9]*[a-z0-9])?$" $full) -}}
{{- fail (printf "the objects' name prefix %q (from the release name %q, nameOverride or fullnameOverride) is not a DNS-1035 label, which Service names must be: use lowercase letters, digits and '-', starting with a letter (no dots). Choose another release name or set fullnameOverride" $full .Release.Name) -}}
{{- end -}}
{{- if and .Values.gossipKey.enabled (not .Values.gossipKey.key) (not .Values.gossipKey.existingSecret) -}}
{{- fail "gossipKey.enabled is true but neither gossipKey.key nor gossipKey.existingSecret is set: give the key (16, 24 or 32 bytes, raw or base64) or the name of a Secret holding it" -}}
{{- end -}}
{{- if and (not .Values.gossipKey.enabled) (or .Values.gossipKey.key .Values.gossipKey.existingSecret) -}}
{{- fail "gossipKey.key or gossipKey.existingSecret is set but gossipKey.enabled is false, so the gossip would run unencrypted: set gossipKey.enabled=true to use the key, or remove it" -}}
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
{{- if .Values.scheduler.etcd.tlsSecret -}}
{{- range .Values.scheduler.etcd.endpoints -}}
{{- if or (hasPrefix "http://" (lower .)) (hasPrefix "unix:" (lower .)) -}}
{{- fail (printf "scheduler.etcd.endpoints has %q but scheduler.etcd.tlsSecret is set: with an etcd CA every endpoint is dialed over TLS, so write it as https://" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if not (has .Values.ipFamily (list "IPv4" "IPv6")) -}}
{{- fail (printf "ipFamily is %q: want IPv4 or IPv6 (the family of the pods' IPs)" (toString .Values.ipFamily)) -}}
{{- end -}}
{{- if lt (int .Values.cachenode.replicas) 1 -}}
{{- fail "cachenode.replicas must be at least 1" -}}
{{- end -}}
{{- include "locus.validateRAMTier" . -}}
{{- include "locus.validateBlockSize" . -}}
{{- include "locus.validateGrace" (list .Values.cachenode "cachenode" "drain-timeout" "drainTimeout" "30s" 15) -}}
{{- include "locus.validateGrace" (list .Values.scheduler "scheduler" "shutdown-timeout" "shutdownTimeout" "30s" 0) -}}
{{- end -}}

{{/*
locus.validateRAMTier fails rendering when the cache node's RAM tier
(--memory-size: cachenode.memorySize, or the last one in
cachenode.extraArgs, which wins) plus 1GiB for the daemon itself is more
than cachenode.resources.limits.memory. The tier is the daemon's own
anonymous memory and the daemon checks it only against the machine's RAM
(not the container's limit), so such a pod is OOM-killed once the tier
fills, and again after each restart. Sizes the chart cannot read are left
to the daemon.
*/}}
{{- define "locus.validateRAMTier" -}}
{{- $c := .Values.cachenode -}}
{{- $what := "cachenode.memorySize" -}}
{{- $tier := $c.memorySize -}}
{{- $x := include "locus.flagValue" (list $c.extraArgs "memory-size" false) -}}
{{- if ne $x "" -}}
{{- $tier = $x -}}
{{- $what = "cachenode.extraArgs (--memory-size)" -}}
{{- end -}}
{{- $limit := dig "limits" "memory" "" (default dict $c.resources) -}}
{{- if and (not (kindIs "invalid" $tier)) (ne (toString $tier) "") (ne (toString $limit) "") -}}
{{- $tb := include "locus.daemonBytes" $tier -}}
{{- $lb := include "locus.quantityBytes" $limit -}}
{{- if and (ne $tb "") (ne $lb "") -}}
{{- $need := addf (float64 $tb) 1073741824.0 -}}
{{- if gt $need (float64 $lb) -}}
{{- fail (printf "%s is %s: the RAM tier is the cache node's own memory, and cachenode.resources.limits.memory (%s) must hold it plus about 1GiB for the daemon itself, or the pod is OOM-killed once the tier fills: raise cachenode.resources.limits.memory to at least %dMi, or lower %s" $what (toString $tier) (toString $limit) (int64 (ceil (divf $need 1048576.0))) $what) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
locus.validateBlockSize fails rendering when the scheduler is given a
block size (scheduler.blockSize, or --block-size in scheduler.extraArgs)
other than the cache nodes' (cachenode.blockSize, or their extraArgs, or
their default of 128MiB): such a scheduler answers every call 503 and is
never ready. Unset, it takes the nodes'.
*/}}
{{- define "locus.validateBlockSize" -}}
{{- $s := .Values.scheduler -}}
{{- $c := .Values.cachenode -}}
{{- $sWhat := "scheduler.blockSize" -}}
{{- $sv := $s.blockSize -}}
{{- $x := include "locus.flagValue" (list $s.extraArgs "block-size" false) -}}
{{- if ne $x "" -}}{{- $sv = $x -}}{{- $sWhat = "scheduler.extraArgs (--block-size)" -}}{{- end -}}
{{- $cWhat := "the cache nodes' block size" -}}
{{- $cv := "128MiB" -}}
{{- if and (not (kindIs "invalid" $c.blockSize)) (ne (toString $c.blockSize) "") -}}{{- $cv = $c.blockSize -}}{{- $cWhat = "cachenode.blockSize" -}}{{- end -}}
{{- $y := include "locus.flagValue" (list $c.extraArgs "block-size" false) -}}
{{- if ne $y "" -}}{{- $cv = $y -}}{{- $cWhat = "cachenode.extraArgs (--block-size)" -}}{{- end -}}
{{- if and (not (kindIs "invalid" $sv)) (ne (toString $sv) "") -}}
{{- $sb := include "locus.daemonBytes" $sv -}}
{{- $cb := include "locus.daemonBytes" $cv -}}
{{- if and (ne $sb "") (ne $cb "") (ne (float64 $sb) (float64 $cb)) -}}
{{- fail (printf "%s is %s but the cache nodes' block size is %s (%s): the scheduler would answer every call 503 and never be ready: leave scheduler.blockSize empty (the scheduler takes the nodes'), or give both the same size" $sWhat (toString $sv) (toString $cv) $cWhat) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* locus.daemonBytes: a size as the daemons read it (internal/units: 8GiB, 1.5g, 500MB, plain bytes; and the Kubernetes 8Gi the chart passes as 8GiB) in bytes; empty when it is none of these. */}}
{{- define "locus.daemonBytes" -}}
{{- $s := lower (trim (toString .)) -}}
{{- if or (kindIs "float64" .) (kindIs "int64" .) (kindIs "int" .) -}}
{{- float64 . -}}
{{- else if regexMatch "^[0-9]+(\\.[0-9]+)?[a-z]*$" $s -}}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $s -}}
{{- $unit := trimPrefix $num $s -}}
{{- $mult := dict "" 1.0 "b" 1.0 "k" 1024.0 "kib" 1024.0 "ki" 1024.0 "m" 1048576.0 "mib" 1048576.0 "mi" 1048576.0 "g" 1073741824.0 "gib" 1073741824.0 "gi" 1073741824.0 "t" 1099511627776.0 "tib" 1099511627776.0 "ti" 1099511627776.0 "kb" 1e3 "mb" 1e6 "gb" 1e9 "tb" 1e12 -}}
{{- if hasKey $mult $unit -}}
{{- mulf (float64 $num) (index $mult $unit) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* locus.quantityBytes: a Kubernetes memory quantity (4Gi, 4096Mi, 4G, 4294967296) in bytes; empty for a form it does not read. */}}
{{- define "locus.quantityBytes" -}}
{{- $s := toString . -}}
{{- if or (kindIs "float64" .) (kindIs "int64" .) (kindIs "int" .) -}}
{{- float64 . -}}
{{- else if regexMatch "^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$" $s -}}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $s -}}
{{- $unit := trimPrefix $num $s -}}
{{- $mult := dict "" 1.0 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0 "Ei" 1152921504606846976.0 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18 -}}
{{- mulf (float64 $num) (index $mult $unit) -}}
{{- end -}}
{{- end -}}

{{/*
locus.validateGrace fails rendering unless the pod's
terminationGracePeriodSeconds is longer than the daemon's own bound on its
shutdown: the flag's value (extraArgs win, as on the command line, in any
form the flag package reads: locus.flagValue; else the value; else the
daemon's default) plus extra seconds. Shorter, kubelet
kills the daemon mid-drain: reads in flight fail, a cache node does not
leave the gossip (its peers wait for the failure detector), a scheduler
loses its last counter flush. Call with (list values component flag
valueName default extraSeconds).
*/}}
{{- define "locus.validateGrace" -}}
{{- $v := index . 0 -}}
{{- $component := index . 1 -}}
{{- $flag := index . 2 -}}
{{- $valueName := index . 3 -}}
{{- $d := default (index . 4) (index $v $valueName) -}}
{{- $what := printf "%s.%s" $component $valueName -}}
{{- $x := include "locus.flagValue" (list $v.extraArgs $flag false) -}}
{{- if ne $x "" -}}
{{- $d = $x -}}
{{- $what = printf "%s.extraArgs (--%s)" $component $flag -}}
{{- end -}}
{{- $need := addf (include "locus.seconds" (list $what $d)) (index . 5) -}}
{{- $grace := float64 $v.terminationGracePeriodSeconds -}}
{{- if not (gt $grace $need) -}}
{{- fail (printf "%s.terminationGracePeriodSeconds is %v but %s is %v: the %s takes up to %v seconds to stop (--%s%s), so kubelet would kill it mid-shutdown. Raise %s.terminationGracePeriodSeconds above %v" $component $v.terminationGracePeriodSeconds $what $d $component $need $flag (ternary (printf " plus %vs" (index . 5)) "" (gt (int (index . 5)) 0)) $component $need) -}}
{{- end -}}
{{- end -}}

{{/*
locus.flagSeconds is a duration flag's value in seconds as the daemon gets
it: the last occurrence in args (a component's extraArgs, which win), else
the value, else the daemon's default. Call with (list args "flag-name"
value default "value.name").
*/}}
{{- define "locus.flagSeconds" -}}
{{- $d := index . 3 -}}
{{- $what := index . 4 -}}
{{- $v := index . 2 -}}
{{- if and (not (kindIs "invalid" $v)) (ne (toString $v) "") -}}
{{- $d = $v -}}
{{- end -}}
{{- $x := include "locus.flagValue" (list (index . 0) (index . 1) false) -}}
{{- if ne $x "" -}}
{{- $d = $x -}}
{{- $what = printf "extraArgs (--%s)" (index . 1) -}}
{{- end -}}
{{- include "locus.seconds" (list $what $d) -}}
{{- end -}}

{{/*
locus.scheduler.startupProbe is the scheduler's startup probe: /healthz
(a TCP check under mTLS, as the other probes) with
scheduler.startupProbe's settings and a failureThreshold that lets it fail
for as long as the scheduler may take before it serves HTTP: it reaches
etcd first (--etcd-dial-timeout, default 5s), then joins the gossip
(retrying for --join-timeout, default 30s; the chart's 2m), plus 30s. The
liveness probe, checked only once this one succeeded, would otherwise kill
a scheduler waiting for its first cache node about a minute in. A larger
failureThreshold in the values is kept.
*/}}
{{- define "locus.scheduler.startupProbe" -}}
{{- $s := .Values.scheduler -}}
{{- $p := deepCopy (default dict $s.startupProbe) -}}
{{- $period := float64 (default 5 $p.periodSeconds) -}}
{{- $need := addf (include "locus.flagSeconds" (list $s.extraArgs "join-timeout" $s.joinTimeout "30s" "scheduler.joinTimeout")) 30 -}}
{{- if $s.etcd.endpoints -}}
{{- $need = addf $need (include "locus.flagSeconds" (list $s.extraArgs "etcd-dial-timeout" $s.etcd.dialTimeout "5s" "scheduler.etcd.dialTimeout")) -}}
{{- end -}}
{{- $threshold := add1 (int (ceil (divf $need $period))) -}}
{{- if and $p.failureThreshold (gt (int $p.failureThreshold) $threshold) -}}
{{- $threshold = int $p.failureThreshold -}}
{{- end -}}
{{- $_ := set $p "periodSeconds" (int $period) -}}
{{- $_ := set $p "failureThreshold" $threshold -}}
{{- include "locus.probe" (list . "/healthz" "http" $p) -}}
{{- end -}}

{{/*
locus.flagValue is the value the last occurrence of a flag in args (a
component's extraArgs, which come after the chart's flags and so win)
gives it, read as Go's flag package reads it: -name=v or --name=v; -name
or --name followed by the value as the next argument (a flag that takes
one); -name or --name alone (a boolean flag: "true"). Empty when args do
not set it. Call with (list args "name" isBool).
*/}}
{{- define "locus.flagValue" -}}
{{- $name := index . 1 -}}
{{- $isBool := index . 2 -}}
{{- $v := "" -}}
{{- $next := false -}}
{{- range (index . 0) -}}
{{- $a := toString . -}}
{{- $b := ternary (trimPrefix "-" (trimPrefix "-" $a)) "" (hasPrefix "-" $a) -}}
{{- if $next -}}
{{- $v = $a -}}
{{- $next = false -}}
{{- else if hasPrefix (printf "%s=" $name) $b -}}
{{- $v = trimPrefix (printf "%s=" $name) $b -}}
{{- else if eq $name $b -}}
{{- if $isBool -}}
{{- $v = "true" -}}
{{- else -}}
{{- $next = true -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $v -}}
{{- end -}}

{{/*
locus.seconds converts a Go duration ("45s", "2m", "1m30s", "1.5h",
"500ms") to seconds. Call with (list "value.name" value); anything else
fails rendering naming the value.
*/}}
{{- define "locus.seconds" -}}
{{- $what := index . 0 -}}
{{- $s := toString (index . 1) -}}
{{- if eq $s "0" -}}
0
{{- else -}}
{{- if not (regexMatch "^([0-9]+(\\.[0-9]+)?(h|ms|m|s|us|µs|ns))+$" $s) -}}
{{- fail (printf "%s is %q: give a duration such as 45s, 2m or 1m30s" $what $s) -}}
{{- end -}}
{{- $mult := dict "h" 3600.0 "m" 60.0 "s" 1.0 "ms" 0.001 "us" 0.000001 "µs" 0.000001 "ns" 0.000000001 -}}
{{- $total := 0.0 -}}
{{- range regexFindAll "[0-9]+(\\.[0-9]+)?(h|ms|m|s|us|µs|ns)" $s -1 -}}
{{- $n := float64 (regexFind "^[0-9.]+" .) -}}
{{- $u := trimPrefix (regexFind "^[0-9.]+" .) . -}}
{{- $total = addf $total (mulf $n (index $mult $u)) -}}
{{- end -}}
{{- $total -}}
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

{{/* The disk cache's size in MiB: the last --cache-size in cachenode.extraArgs (it wins), else cachenode.cacheSize. */}}
{{- define "locus.cachenode.cacheMiB" -}}
{{- $x := include "locus.flagValue" (list .Values.cachenode.extraArgs "cache-size" false) -}}
{{- if ne $x "" -}}
{{- include "locus.mebibytes" (list "cachenode.extraArgs (--cache-size)" $x) -}}
{{- else -}}
{{- include "locus.mebibytes" (list "cachenode.cacheSize" .Values.cachenode.cacheSize) -}}
{{- end -}}
{{- end -}}

{{/*
locus.cachenode.minVolumeMiB is the smallest ext4 volume (mke2fs defaults)
the disk cache fits on for a non-root daemon: the cache plus about 8% (5%
reserved for root, about 2% for the journal and inode tables) plus the
cache's own reserve (min(5%, 1GiB) of the file system kept free): cache
x 1.09 + 1GiB, measured at 1GiB to 200GiB (internal/chart,
TestCacheVolumeFitsCacheOnExt4). An upgrade keeps a live claim at least
this large, or at least the size the values give (locus.cachenode.claimSize).
*/}}
{{- define "locus.cachenode.minVolumeMiB" -}}
{{- $cache := include "locus.cachenode.cacheMiB" . | int64 -}}
{{- add (div (add (mul $cache 109) 99) 100) 1024 -}}
{{- end -}}

{{/* The size of each cache node's volume for --cache-dir, as a Kubernetes quantity. */}}
{{- define "locus.cachenode.volumeSize" -}}
{{- $what := "cachenode.cacheSize" -}}
{{- $size := .Values.cachenode.cacheSize -}}
{{- $x := include "locus.flagValue" (list .Values.cachenode.extraArgs "cache-size" false) -}}
{{- if ne $x "" -}}
{{- $what = "cachenode.extraArgs (--cache-size)" -}}
{{- $size = $x -}}
{{- end -}}
{{- $cache := include "locus.cachenode.cacheMiB" . | int64 -}}
{{- if .Values.cachenode.persistence.size -}}
{{- $vol := int64 (include "locus.mebibytes" (list "cachenode.persistence.size" .Values.cachenode.persistence.size)) -}}
{{- if lt $vol $cache -}}
{{- fail (printf "cachenode.persistence.size (%s) is smaller than %s (%s): the disk cache would not fit; raise the volume or lower --cache-size" (toString .Values.cachenode.persistence.size) $what (toString $size)) -}}
{{- end -}}
{{- regexReplaceAll "B$" (toString .Values.cachenode.persistence.size) "" -}}
{{- else -}}
{{- $withHeadroom := add (div (add (mul $cache (add 100 (int64 .Values.cachenode.persistence.headroomPercent))) 99) 100) 1024 -}}
{{- printf "%dMi" $withHeadroom -}}
{{- end -}}
{{- end -}}

{{/*
locus.cachenode.claimSize is the storage request of the StatefulSet's
"cache" claim template. A StatefulSet's volumeClaimTemplates cannot change
(the API server refuses the whole upgrade), but their size follows
cachenode.cacheSize, a value operators raise. So on an upgrade the chart
looks the live StatefulSet up and keeps its claim size as long as the new
cacheSize fits in it: the claim is at least what an install with these
values would get (so unchanged values always upgrade, whatever
persistence.size or headroomPercent the install took), or at least
locus.cachenode.minVolumeMiB (a smaller cache, or a lower headroom, on
the old claim). A cache that no longer fits, an
explicit persistence.size other than the live one, or persistence turned
on or off fails rendering with the steps that apply the change. Under
`helm template` (no cluster) lookup finds nothing: the size from values.
*/}}
{{- define "locus.cachenode.claimSize" -}}
{{- $want := include "locus.cachenode.volumeSize" . -}}
{{- $sts := lookup "apps/v1" "StatefulSet" .Release.Namespace (include "locus.cachenode.fullname" .) -}}
{{- if not $sts -}}
{{- $want -}}
{{- else -}}
{{- $live := "" -}}
{{- range (dig "spec" "volumeClaimTemplates" list $sts) -}}
{{- if eq (dig "metadata" "name" "" .) "cache" -}}
{{- $live = toString (dig "spec" "resources" "requests" "storage" "" .) -}}
{{- end -}}
{{- end -}}
{{- $steps := printf "A StatefulSet's volumeClaimTemplates cannot change. To apply it: expand each claim (kubectl -n %s patch pvc cache-%s-<ordinal> -p '{\"spec\":{\"resources\":{\"requests\":{\"storage\":\"%s\"}}}}', which needs a StorageClass with allowVolumeExpansion), delete the StatefulSet but not its pods (kubectl -n %s delete statefulset %s --cascade=orphan), then upgrade again: the new StatefulSet adopts the pods and their claims" .Release.Namespace $sts.metadata.name $want .Release.Namespace $sts.metadata.name -}}
{{- if not $live -}}
{{- fail (printf "cachenode.persistence.enabled is true but the running StatefulSet %s has no cache claim template (it was installed with persistence off). %s" $sts.metadata.name $steps) -}}
{{- end -}}
{{- $liveMiB := int64 (include "locus.mebibytes" (list (printf "the claim template of StatefulSet %s" $sts.metadata.name) $live)) -}}
{{- $wantMiB := int64 (include "locus.mebibytes" (list "cachenode.persistence.size" $want)) -}}
{{- if and .Values.cachenode.persistence.size (ne $liveMiB $wantMiB) -}}
{{- fail (printf "cachenode.persistence.size is %s but the running StatefulSet %s claims %s. %s" (toString .Values.cachenode.persistence.size) $sts.metadata.name $live $steps) -}}
{{- end -}}
{{- /* The cache fits the live claim if a new install with these values would claim no more (the values' own rule), or if the claim holds the cache on ext4. */ -}}
{{- if and (gt (include "locus.cachenode.minVolumeMiB" . | int64) $liveMiB) (gt $wantMiB $liveMiB) -}}
{{- fail (printf "the cache size (cachenode.cacheSize %s, or --cache-size in cachenode.extraArgs) no longer fits the running StatefulSet %s's claims of %s (it needs at least %sMi on ext4; a new install gets %s). %s" (toString .Values.cachenode.cacheSize) $sts.metadata.name $live (include "locus.cachenode.minVolumeMiB" .) $want $steps) -}}
{{- end -}}
{{- $live -}}
{{- end -}}
{{- end -}}

{{/* The live StatefulSet, when persistence is off: refuses to drop its claim templates. */}}
{{- define "locus.cachenode.checkNoClaims" -}}
{{- $sts := lookup "apps/v1" "StatefulSet" .Release.Namespace (include "locus.cachenode.fullname" .) -}}
{{- if and $sts (dig "spec" "volumeClaimTemplates" list $sts) -}}
{{- fail (printf "cachenode.persistence.enabled is false but the running StatefulSet %s has claim templates: a StatefulSet's volumeClaimTemplates cannot change. Delete it first (kubectl -n %s delete statefulset %s; its claims stay), then upgrade" $sts.metadata.name .Release.Namespace $sts.metadata.name) -}}
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

{{/*
locus.validateForward refuses schedulers that would not forward to the
leader when there are several: followers that do not forward report not
ready by design, so a rolling update never sees its new pods ready and the
PodDisruptionBudget, counting them as down, blocks node drains. It judges
the flag the daemon gets: scheduler.forwardToLeader (unset renders no flag:
the daemon's default, false), overridden by the last --forward-to-leader in
scheduler.extraArgs, read as Go's strconv.ParseBool reads it.
*/}}
{{- define "locus.validateForward" -}}
{{- $s := .Values.scheduler -}}
{{- $v := "false" -}}
{{- $what := "scheduler.forwardToLeader" -}}
{{- if and (not (kindIs "invalid" $s.forwardToLeader)) (ne (toString $s.forwardToLeader) "") -}}
{{- $v = toString $s.forwardToLeader -}}
{{- end -}}
{{- $x := include "locus.flagValue" (list $s.extraArgs "forward-to-leader" true) -}}
{{- if ne $x "" -}}
{{- $v = $x -}}
{{- $what = "scheduler.extraArgs (--forward-to-leader)" -}}
{{- end -}}
{{- if and (gt (int $s.replicas) 1) (not (has $v (list "1" "t" "T" "TRUE" "true" "True"))) -}}
{{- fail (printf "%s is %q with scheduler.replicas %d, so the followers would not forward to the leader: they report not ready by design, so a rolling update never sees its new pods ready (the old ones stay), helm --wait never returns, and the PodDisruptionBudget, counting the followers as down, blocks every node drain. Keep forwardToLeader true (followers forward placements to the leader), or run one replica" $what $v (int $s.replicas)) -}}
{{- end -}}
{{- if and $s.etcd.endpoints (not (has $v (list "1" "t" "T" "TRUE" "true" "True"))) -}}
{{- fail (printf "%s is %q with scheduler.etcd.endpoints set: a rolling update starts the new scheduler pod next to the old one (maxSurge 1, maxUnavailable 0), as a follower, which without forwarding reports not ready by design, so the update never finishes and helm --wait never returns. Keep forwardToLeader true" $what $v) -}}
{{- end -}}
{{- end -}}
