// Package chart holds the tests of the Helm chart in helm/locus and of the
// Grafana dashboard in dashboards/ (DESIGN.md: "helm lint and helm template
// in CI"). It has no code of its own: the chart and the dashboard are
// contracts with the daemons, and these tests check them against the
// daemons themselves rather than against a copy of their flag or metric
// lists.
//
//   - helm lint --strict and helm template render the chart with its
//     default values and with several value sets (testdata/*.yaml: etcd with
//     three schedulers, TLS, auth, the ServiceMonitor, every flag value set).
//   - Every container argument of the rendered cache node StatefulSet and
//     scheduler Deployment is parsed by the daemon's own flag set (the
//     cache node in process through daemon.Main, the scheduler as a built
//     cmd/scheduler), so a flag that does not exist or a value that does
//     not parse fails the test, as it would fail the pod.
//   - The rendered objects agree with each other: listeners on 0.0.0.0 at
//     the container ports, probes on the HTTP port at /readyz and
//     /healthz, --join through the headless Service, a cache volume no
//     smaller than --cache-size, secrets mounted where the flags point.
//   - replicas > 1 without etcd fails rendering with a message naming the
//     values to change (standalone schedulers each keep their own state).
//   - What the API server would refuse, restated without k8s.io/api:
//     object names, labels, port names (IANA_SVC_NAME), duplicate ports,
//     env names, resource quantities. And what kubelet would make of the
//     pods: Secret files readable and the cache claim writable by the
//     non-root user (fsGroup), a grace period longer than the daemon's own
//     shutdown bound, a checksum annotation for each chart-made Secret,
//     several schedulers spread over hosts under a PodDisruptionBudget,
//     advertised addresses that parse with an IPv4 or IPv6 pod IP, a RAM
//     tier that fits in the memory limit with 1GiB for the daemon, a
//     scheduler startup probe that outlasts its etcd dial and gossip join,
//     and a scheduler block size equal to the cache nodes'.
//   - Upgrades: a fake API server on loopback answers helm's lookup of the
//     running StatefulSet (helm template --dry-run=server), and the claim
//     template keeps its live size (volumeClaimTemplates are immutable) or
//     rendering fails with the steps to grow the claims; the values an
//     install took always upgrade.
//   - Every metric name in the dashboard's PromQL is one the daemons export
//     in a real scrape of an in-process cache node and scheduler, and the
//     dashboard in dashboards/ is byte-identical to the chart's copy.
//
// helm comes from scripts/install-tools.sh (go install, pinned). Without it
// the helm tests skip, or fail when LOCUS_REQUIRE_TOOLS=1 (CI).
package chart
