package chart_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/locuscache/locus/internal/testproc"
	"github.com/locuscache/locus/internal/units"
	"github.com/locuscache/locus/pkg/node/daemon"
	"github.com/locuscache/locus/pkg/scheduler/schedulertest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	schedulertest.RemoveBuilds()
	os.Exit(code)
}

// moduleRoot returns the repository root (where go.mod is).
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := testproc.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func chartDir(t *testing.T) string { return filepath.Join(moduleRoot(t), "helm", "locus") }

// findHelm returns the helm binary (PATH, else GOPATH/bin where
// scripts/install-tools.sh puts it). Missing, it skips the test, or fails
// it when LOCUS_REQUIRE_TOOLS=1 (CI).
func findHelm(t *testing.T) string {
	t.Helper()
	p, err := testproc.LookPath("helm")
	if err == nil {
		return p
	}
	msg := "helm not found; install it with scripts/install-tools.sh"
	if os.Getenv("LOCUS_REQUIRE_TOOLS") == "1" {
		t.Fatal(msg + " (LOCUS_REQUIRE_TOOLS=1)")
	}
	t.Skip(msg)
	return ""
}

// valueSets are the values the chart is linted and rendered with: the
// defaults (no file) and each testdata file.
var valueSets = []string{"", "ha.yaml", "tls.yaml", "tls-server-only.yaml", "auth.yaml", "servicemonitor.yaml", "rack-label.yaml", "all-flags.yaml", "quantities.yaml", "ipv6.yaml"}

func valueSetName(f string) string {
	if f == "" {
		return "defaults"
	}
	return strings.TrimSuffix(f, ".yaml")
}

// helm runs helm with args in the chart directory and returns stdout, or
// stderr and the error.
func helm(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = chartDir(t)
	// A private HELM_* home, so that the operator's repositories and
	// plugins do not take part.
	home := t.TempDir()
	// No kubeconfig either: only a test's own --kube-apiserver is reached.
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home, "KUBECONFIG="+os.DevNull)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stderr.String(), fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

func valuesArgs(t *testing.T, file string) []string {
	if file == "" {
		return nil
	}
	return []string{"--values", filepath.Join(moduleRoot(t), "internal", "chart", "testdata", file)}
}

// render runs helm template with the value set and parses the manifests.
func render(t *testing.T, bin, file string, extra ...string) *manifests {
	t.Helper()
	args := append([]string{"template", "locus", ".", "--namespace", "lake"}, valuesArgs(t, file)...)
	out, err := helm(t, bin, append(args, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	return parseManifests(t, out)
}

// TestHelmLint: helm lint --strict passes for every value set.
func TestHelmLint(t *testing.T) {
	bin := findHelm(t)
	for _, f := range valueSets {
		t.Run(valueSetName(f), func(t *testing.T) {
			args := append([]string{"lint", "--strict", "."}, valuesArgs(t, f)...)
			if _, err := helm(t, bin, args...); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRenderedManifests renders every value set and checks the objects
// against the daemons and against each other.
func TestRenderedManifests(t *testing.T) {
	bin := findHelm(t)
	schedBin := schedulertest.BuildScheduler(t)
	for _, f := range valueSets {
		t.Run(valueSetName(f), func(t *testing.T) {
			m := render(t, bin, f)
			node := m.one(t, "StatefulSet")
			sched := m.one(t, "Deployment")
			nc := node.container(t, "cachenode")
			sc := sched.container(t, "scheduler")

			checkDaemonFlags(t, "cachenode", nc, func(args []string) (int, string) {
				var stderr bytes.Buffer
				code := daemon.Main(args, func(string) (string, bool) { return "", false }, &stderr, &stderr)
				return code, stderr.String()
			})
			checkDaemonFlags(t, "scheduler", sc, func(args []string) (int, string) {
				cmd := exec.Command(schedBin, args...)
				cmd.Env = []string{"PATH=" + os.Getenv("PATH")} // no LOCUS_* from the test's environment
				out, err := cmd.CombinedOutput()
				if err != nil {
					if ee, ok := err.(*exec.ExitError); ok {
						return ee.ExitCode(), string(out)
					}
					t.Fatalf("run scheduler: %v", err)
				}
				return 0, string(out)
			})

			tls := m.values(t, f).tls()
			for _, c := range []*container{nc, sc} {
				checkListeners(t, c, m.values(t, f).ipFamily())
				checkProbes(t, c, tls)
				checkFilesMounted(t, c)
				checkVolumesAccessible(t, c)
			}
			checkGracePeriod(t, node, nc, "drain-timeout", 30*time.Second, 15*time.Second)
			checkGracePeriod(t, sched, sc, "shutdown-timeout", 30*time.Second, 0)
			checkAPIFields(t, m)
			checkJoin(t, m, node, nc, sc)
			checkCacheVolume(t, node, nc)
			checkRAMTierFits(t, nc)
			checkBlockSizesAgree(t, nc, sc)
			checkSecrets(t, m, nc, sc)
			checkSecretChecksums(t, m, nc, sc)
			checkSchedulerStrategy(t, sched, sc)
			checkHighAvailability(t, m, sched)
			checkServices(t, m)
			checkDashboardConfigMap(t, m)
			checkServiceMonitors(t, m, f == "servicemonitor.yaml")
		})
	}
}

// TestStandaloneReplicasRefused: more than one scheduler without etcd
// fails rendering with a message naming both values, as standalone
// schedulers each keep their own state (DESIGN.md).
func TestStandaloneReplicasRefused(t *testing.T) {
	bin := findHelm(t)
	out, err := helm(t, bin, "template", "locus", ".", "--set", "scheduler.replicas=2")
	if err == nil {
		t.Fatal("helm template with scheduler.replicas=2 and no etcd succeeded; want a failure")
	}
	for _, want := range []string{"scheduler.replicas is 2", "scheduler.etcd.endpoints is empty", "own state"} {
		if !strings.Contains(out, want) {
			t.Errorf("error does not say %q:\n%s", want, out)
		}
	}
	// One replica without etcd and three with it render.
	for _, set := range [][]string{{"scheduler.replicas=1"}, {"scheduler.replicas=3", "scheduler.etcd.endpoints={http://etcd:2379}"}} {
		args := []string{"template", "locus", "."}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		if _, err := helm(t, bin, args...); err != nil {
			t.Errorf("%v: %v", set, err)
		}
	}
}

// TestBadValuesRefused: values the chart cannot turn into a working
// deployment fail rendering with a message that says what to change.
func TestBadValuesRefused(t *testing.T) {
	bin := findHelm(t)
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"cachenode.persistence.size=50Gi"}, "smaller than cachenode.cacheSize"},
		{[]string{"cachenode.cacheSize=1.5GiB"}, "integer with the unit MiB, GiB or TiB"},
		{[]string{"tls.enabled=true"}, "tls.secretName is empty"},
		{[]string{"scheduler.auth.enabled=true"}, "scheduler.auth.token nor scheduler.auth.existingSecret"},
		{[]string{"gossipKey.enabled=true"}, "gossipKey.key nor gossipKey.existingSecret"},
		// A key without enabled: the gossip would run unencrypted, silently.
		{[]string{"gossipKey.key=0123456789abcdef"}, "set gossipKey.enabled=true to use the key"},
		{[]string{"gossipKey.existingSecret=gk"}, "set gossipKey.enabled=true to use the key"},
		{[]string{"cachenode.origin.file.root=/data"}, "cachenode.origin.file.volume is empty"},
		// The RAM tier is the daemon's own memory: over the container's
		// limit (less the daemon's ~1GiB) the pod is OOM-killed once it
		// fills. (Was: rendered; the daemon checks only the machine's RAM.)
		{[]string{"cachenode.memorySize=8GiB"}, "cachenode.resources.limits.memory (4Gi) must hold"},
		{[]string{"cachenode.memorySize=4Gi", "cachenode.resources.limits.memory=4096Mi"}, "raise cachenode.resources.limits.memory"},
		{[]string{"cachenode.extraArgs={--memory-size=3.5g}"}, "cachenode.extraArgs (--memory-size)"},
		{[]string{"cachenode.memorySize=6GiB", "cachenode.resources.limits.memory=6.5G"}, "must hold"},
		// A scheduler whose block size is not the nodes' is never ready
		// (503 "this scheduler's block size is 256 MiB but the cache nodes
		// use 128 MiB"). (Was: rendered.)
		{[]string{"scheduler.blockSize=256MiB"}, "scheduler.blockSize is 256MiB but the cache nodes' block size is 128MiB"},
		{[]string{"cachenode.blockSize=256MiB", "scheduler.blockSize=128Mi"}, "leave scheduler.blockSize empty"},
		{[]string{"cachenode.extraArgs={--block-size=64MiB}", "scheduler.blockSize=128MiB"}, "cachenode.extraArgs (--block-size)"},
		// The pod must outlive the daemon's own bound on its shutdown.
		{[]string{"cachenode.drainTimeout=45s"}, "Raise cachenode.terminationGracePeriodSeconds above 60"},
		{[]string{"cachenode.extraArgs={--drain-timeout=1m}"}, "Raise cachenode.terminationGracePeriodSeconds above 75"},
		// Every form Go's flag package reads: one dash, and the value as
		// the next argument. (Was: only --drain-timeout=v was read, so
		// these rendered a pod killed mid-drain.)
		{[]string{"cachenode.extraArgs={-drain-timeout=1m}"}, "Raise cachenode.terminationGracePeriodSeconds above 75"},
		{[]string{"cachenode.extraArgs={--drain-timeout,1m}"}, "Raise cachenode.terminationGracePeriodSeconds above 75"},
		{[]string{"scheduler.extraArgs={-shutdown-timeout,2m}"}, "Raise scheduler.terminationGracePeriodSeconds above 120"},
		{[]string{"scheduler.shutdownTimeout=1m"}, "Raise scheduler.terminationGracePeriodSeconds above 60"},
		{[]string{"cachenode.drainTimeout=soon"}, "give a duration such as 45s"},
		{[]string{"ipFamily=v6"}, "want IPv4 or IPv6"},
		// With an etcd CA the scheduler dials every endpoint over TLS and
		// refuses an http:// one at start; the chart says so first.
		{[]string{"scheduler.etcd.endpoints={https://etcd-0:2379,http://etcd-1:2379}", "scheduler.etcd.tlsSecret=etcd-tls"}, "write it as https://"},
		// Non-forwarding followers are never ready: updates and drains hang.
		{[]string{"scheduler.replicas=2", "scheduler.etcd.endpoints={http://etcd:2379}", "scheduler.forwardToLeader=false"}, "Keep forwardToLeader true"},
	} {
		args := []string{"template", "locus", "."}
		for _, s := range tc.set {
			args = append(args, "--set", s)
		}
		out, err := helm(t, bin, args...)
		if err == nil {
			t.Errorf("%v: rendered; want a failure saying %q", tc.set, tc.want)
			continue
		}
		if !strings.Contains(out, tc.want) {
			t.Errorf("%v: error does not say %q:\n%s", tc.set, tc.want, out)
		}
	}
}

// TestObjectNamesAreLabels: Service names must be DNS-1035 labels, but
// Helm accepts release names with dots, and the overrides take anything.
// Was: "helm install lake.prod" rendered Services named
// lake.prod-locus-..., which the API server refuses mid-install. Now such
// names fail rendering with what to change; valid ones render.
func TestObjectNamesAreLabels(t *testing.T) {
	bin := findHelm(t)
	for _, tc := range []struct {
		release string
		set     []string
		ok      bool
	}{
		{"lake-prod", nil, true},
		{"locus", []string{"fullnameOverride=cache"}, true},
		{"lake.prod", nil, false},
		{"locus", []string{"fullnameOverride=Locus"}, false},
		{"locus", []string{"fullnameOverride=9lives"}, false},
		{"lake", []string{"nameOverride=lo.cus"}, false},
	} {
		args := []string{"template", tc.release, "."}
		for _, s := range tc.set {
			args = append(args, "--set", s)
		}
		out, err := helm(t, bin, args...)
		switch {
		case tc.ok && err != nil:
			t.Errorf("release %s %v: %v\n%s", tc.release, tc.set, err, out)
		case !tc.ok && err == nil:
			t.Errorf("release %s %v: rendered; want a failure naming the DNS-1035 label rule", tc.release, tc.set)
		case !tc.ok && !strings.Contains(out, "is not a DNS-1035 label"):
			t.Errorf("release %s %v: error does not name the rule:\n%s", tc.release, tc.set, out)
		}
	}
}

// TestVolumeSizedFromCacheSize: without persistence.size, the claim is
// --cache-size plus the headroom, rounded up to a MiB.
func TestVolumeSizedFromCacheSize(t *testing.T) {
	bin := findHelm(t)
	for _, tc := range []struct {
		cacheSize, headroom, want string
	}{
		{"100GiB", "10", "113664Mi"},
		{"100GiB", "15", "118784Mi"}, // the default
		{"1TiB", "0", "1049600Mi"},
		{"1000MiB", "5", "2074Mi"},
		{"999MiB", "10", "2123Mi"}, // 1098.9 rounded up, plus 1Gi
	} {
		m := render(t, bin, "", "--set", "cachenode.cacheSize="+tc.cacheSize, "--set", "cachenode.persistence.headroomPercent="+tc.headroom)
		got := m.one(t, "StatefulSet").claimSize(t)
		if got != tc.want {
			t.Errorf("cacheSize %s, headroom %s%%: claim %s, want %s", tc.cacheSize, tc.headroom, got, tc.want)
		}
	}
}

// fakeAPIServer answers what helm's lookup of the cache node StatefulSet
// asks a Kubernetes API server (discovery of apps/v1, then the object), on
// loopback: sts is the StatefulSet's JSON, or "" for none (404).
func fakeAPIServer(t *testing.T, sts string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/apis/apps/v1":
			fmt.Fprint(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"apps/v1","resources":[{"name":"statefulsets","singularName":"statefulset","namespaced":true,"kind":"StatefulSet","verbs":["get","list"]}]}`)
		case "/apis/apps/v1/namespaces/lake/statefulsets/locus-cachenode":
			if sts != "" {
				fmt.Fprint(w, sts)
				return
			}
			fallthrough
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// liveStatefulSet is the cache node StatefulSet as the API server returns
// it, with a cache claim template of the given size ("" for none).
func liveStatefulSet(claim string) string {
	vct := ""
	if claim != "" {
		vct = `,"volumeClaimTemplates":[{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"cache"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"` + claim + `"}},"volumeMode":"Filesystem"},"status":{"phase":"Pending"}}]`
	}
	return `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"locus-cachenode","namespace":"lake"},"spec":{"serviceName":"locus-cachenode-gossip"` + vct + `}}`
}

// TestClaimTemplateOnUpgrade: a StatefulSet's volumeClaimTemplates are
// immutable (the API server refuses the whole upgrade), and the claim's
// size follows cachenode.cacheSize. On an upgrade (helm's lookup finds the
// StatefulSet; here through a fake API server) the chart keeps the live
// claim size while the cache fits in it, and otherwise fails with the
// steps that apply the change; on an install it sizes the claim from the
// values.
func TestClaimTemplateOnUpgrade(t *testing.T) {
	bin := findHelm(t)
	for _, tc := range []struct {
		name, live string // live: the claim size of the running StatefulSet; "-": none; "none": no claim template
		set        []string
		want       string // the rendered claim size, or
		fails      string // a part of the error
	}{
		{name: "install", live: "-", want: "118784Mi"},
		{name: "unchanged", live: "110Gi", want: "110Gi"},
		{name: "smaller cache kept on the live claim", live: "110Gi", set: []string{"cachenode.cacheSize=90GiB"}, want: "110Gi"},
		{name: "image upgrade", live: "110Gi", set: []string{"image.tag=0.2.0"}, want: "110Gi"},
		{name: "cache outgrows the claim", live: "110Gi", set: []string{"cachenode.cacheSize=105GiB"}, fails: "--cascade=orphan"},
		{name: "explicit size differs", live: "110Gi", set: []string{"cachenode.persistence.size=200Gi"}, fails: "cachenode.persistence.size is 200Gi but the running StatefulSet locus-cachenode claims 110Gi"},
		{name: "explicit size equal", live: "110Gi", set: []string{"cachenode.persistence.size=110Gi"}, want: "110Gi"},
		{name: "persistence turned on", live: "none", fails: "has no cache claim template"},
		{name: "persistence turned off", live: "110Gi", set: []string{"cachenode.persistence.enabled=false"}, fails: "has claim templates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sts := ""
			switch tc.live {
			case "-":
			case "none":
				sts = liveStatefulSet("")
			default:
				sts = liveStatefulSet(tc.live)
			}
			args := []string{"template", "locus", ".", "--namespace", "lake", "--dry-run=server", "--kube-apiserver", fakeAPIServer(t, sts)}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			out, err := helm(t, bin, args...)
			if tc.fails != "" {
				if err == nil {
					t.Fatalf("rendered; want a failure saying %q", tc.fails)
				}
				if !strings.Contains(out, tc.fails) {
					t.Fatalf("error does not say %q:\n%s", tc.fails, out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			node := parseManifests(t, out).one(t, "StatefulSet")
			if tc.want == "" {
				return
			}
			if got := node.claimSize(t); got != tc.want {
				t.Errorf("claim size %s, want %s", got, tc.want)
			}
		})
	}
}

// TestStatefulSetImmutableFields: values an operator changes on a running
// release (ports, sizes, replicas, image, resources, flags) leave the
// StatefulSet's immutable fields as they were: serviceName, selector,
// podManagementPolicy and the claim templates (their size aside, which
// TestClaimTemplateOnUpgrade covers).
func TestStatefulSetImmutableFields(t *testing.T) {
	bin := findHelm(t)
	before := render(t, bin, "").one(t, "StatefulSet")
	after := render(t, bin, "", "--set", "cachenode.replicas=7", "--set", "image.tag=9.9.9", "--set", "cachenode.gossipPort=17946",
		"--set", "cachenode.httpPort=17080", "--set", "cachenode.slots=16", "--set", "cachenode.podLabels.team=lake",
		"--set", "cachenode.resources.limits.memory=8Gi", "--set", "cachenode.rack=r1", "--set", "logLevel=debug").one(t, "StatefulSet")
	immutable := func(o *object) string {
		vct, _ := json.Marshal(o.raw["spec"].(map[string]any)["volumeClaimTemplates"])
		vct = regexp.MustCompile(`"storage":"[^"]*"`).ReplaceAll(vct, []byte(`"storage":"-"`))
		return fmt.Sprintf("serviceName=%s selector=%s podManagementPolicy=%s volumeClaimTemplates=%s",
			o.Spec.ServiceName, o.Spec.RawSelector, o.Spec.PodManagementPolicy, vct)
	}
	if a, b := immutable(before), immutable(after); a != b {
		t.Errorf("an upgrade changing ordinary values changes immutable StatefulSet fields:\n before %s\n after  %s", a, b)
	}
}

// ---------------------------------------------------------------------
// Checks.

// podEnv is what Kubernetes substitutes for $(VAR) in the args: sample
// values of the downward-API variables the chart sets.
var podEnv = map[string]string{"POD_NAME": "locus-cachenode-0", "POD_IP": "10.1.2.3", "POD_RACK": "zone-a"}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand substitutes $(VAR) as kubelet does, failing on a variable the
// container does not define.
func expand(t *testing.T, c *container, s string) string {
	t.Helper()
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := varRef.FindStringSubmatch(ref)[1]
		if !c.hasEnv(name) {
			t.Errorf("%s: %q refers to $(%s), which the container does not define", c.Name, s, name)
		}
		v, ok := podEnv[name]
		if !ok {
			t.Errorf("%s: no sample value for $(%s)", c.Name, name)
		}
		return v
	})
}

var helpFlag = regexp.MustCompile(`(?m)^  --([a-z0-9-]+)`)

// checkDaemonFlags checks the container's args against the daemon's own
// flag set: each name is one --help lists, and the daemon parses them all
// (run with --help appended: the flag package parses every argument
// before it, values included, then prints the usage and exits 0). LOCUS_*
// variables in the container's env must name flags too.
func checkDaemonFlags(t *testing.T, daemonName string, c *container, run func(args []string) (int, string)) {
	t.Helper()
	code, help := run([]string{"--help"})
	if code != 0 {
		t.Fatalf("%s --help: exit %d\n%s", daemonName, code, help)
	}
	defined := map[string]bool{}
	for _, m := range helpFlag.FindAllStringSubmatch(help, -1) {
		defined[m[1]] = true
	}
	if len(defined) < 10 {
		t.Fatalf("%s --help lists %d flags; the parser of its output is out of date:\n%s", daemonName, len(defined), help)
	}
	var args []string
	for _, a := range c.Args {
		name, _, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok {
			t.Errorf("%s: argument %q is not --flag=value", daemonName, a)
			continue
		}
		if !defined[name] {
			t.Errorf("%s: the chart passes --%s, which %s does not define", daemonName, name, daemonName)
		}
		args = append(args, expand(t, c, a))
	}
	for _, e := range c.Env {
		if name, ok := strings.CutPrefix(e.Name, "LOCUS_"); ok {
			flag := strings.ReplaceAll(strings.ToLower(name), "_", "-")
			if !defined[flag] {
				t.Errorf("%s: env %s names no flag (--%s)", daemonName, e.Name, flag)
			}
		}
	}
	if code, out := run(append(args, "--help")); code != 0 {
		t.Errorf("%s refuses the chart's arguments (exit %d):\n  %s\n%s", daemonName, code, strings.Join(args, "\n  "), firstLines(out, 3))
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// checkListeners: every listener binds 0.0.0.0 (DESIGN.md: the chart
// does) on the port of the container port of the same name, and announces
// the pod IP on that port.
func checkListeners(t *testing.T, c *container, family string) {
	t.Helper()
	for _, l := range []struct{ flag, port string }{{"gossip-addr", "gossip-tcp"}, {"grpc-addr", "grpc"}, {"http-addr", "http"}} {
		addr, ok := c.flag(l.flag)
		if !ok {
			t.Errorf("%s: no --%s", c.Name, l.flag)
			continue
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host != "0.0.0.0" {
			t.Errorf("%s: --%s=%s, want 0.0.0.0:<port>", c.Name, l.flag, addr)
			continue
		}
		if want := c.port(t, l.port, "TCP"); port != strconv.Itoa(want) {
			t.Errorf("%s: --%s port %s, container port %s is %d", c.Name, l.flag, port, l.port, want)
		}
		// The announced address is the pod IP (of the cluster's family) on
		// that port, as the daemon parses it once kubelet substituted
		// $(POD_IP): an IPv6 address needs brackets.
		adv := strings.Replace(l.flag, "-addr", "-advertise-addr", 1)
		a, _ := c.flag(adv)
		if !strings.Contains(a, "$(POD_IP)") {
			t.Errorf("%s: --%s=%q does not announce $(POD_IP)", c.Name, adv, a)
			continue
		}
		sample := podEnv["POD_IP"]
		if family == "IPv6" {
			sample = "fd00:10:1::23"
		}
		h, p, err := net.SplitHostPort(strings.ReplaceAll(a, "$(POD_IP)", sample))
		if err != nil || h != sample || p != port {
			t.Errorf("%s: --%s=%q with a pod IP of %s (%s) is host %q port %q (%v); want the pod IP on port %s", c.Name, adv, a, family, sample, h, p, err, port)
		}
	}
	if g, u := c.port(t, "gossip-tcp", "TCP"), c.port(t, "gossip-udp", "UDP"); g != u {
		t.Errorf("%s: gossip TCP port %d, UDP port %d; memberlist uses one port for both", c.Name, g, u)
	}
}

// checkProbes: readiness is /readyz and liveness /healthz on the port
// --http-addr listens on, over HTTPS when TLS is on; under mTLS (kubelet has
// no client certificate) both are TCP checks of that port.
func checkProbes(t *testing.T, c *container, tls tlsMode) {
	t.Helper()
	httpPort := c.port(t, "http", "TCP")
	for _, p := range []struct {
		name  string
		probe *probe
		path  string
	}{{"readinessProbe", c.ReadinessProbe, "/readyz"}, {"livenessProbe", c.LivenessProbe, "/healthz"}} {
		if p.probe == nil {
			t.Errorf("%s: no %s", c.Name, p.name)
			continue
		}
		if tls == mutualTLS {
			if p.probe.TCPSocket == nil || c.resolvePort(t, p.probe.TCPSocket.Port) != httpPort {
				t.Errorf("%s: %s under mTLS is %+v, want a TCP check of port %d", c.Name, p.name, p.probe, httpPort)
			}
			continue
		}
		g := p.probe.HTTPGet
		if g == nil {
			t.Errorf("%s: %s is not an HTTP probe: %+v", c.Name, p.name, p.probe)
			continue
		}
		scheme := "HTTP"
		if tls == serverTLS {
			scheme = "HTTPS"
		}
		if g.Path != p.path || g.Scheme != scheme || c.resolvePort(t, g.Port) != httpPort {
			t.Errorf("%s: %s is %s %s on port %v, want %s %s on %d (--http-addr)", c.Name, p.name, g.Scheme, g.Path, g.Port, scheme, p.path, httpPort)
		}
	}
}

// pathFlag matches the daemons' flags that name a file or directory.
var pathFlag = regexp.MustCompile(`(-file|-dir|-root|tls-cert|tls-key|tls-ca)$`)

// checkFilesMounted: every flag naming a file or directory points into a
// volume mounted in the container (checkSecrets checks the keys).
func checkFilesMounted(t *testing.T, c *container) {
	t.Helper()
	for _, a := range c.Args {
		name, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !pathFlag.MatchString(name) {
			continue
		}
		if _, ok := c.mountFor(v); !ok {
			t.Errorf("%s: %s names a path no volume is mounted at", c.Name, a)
		}
	}
}

// checkJoin: both daemons --join the cache nodes' headless Service at the
// cache nodes' gossip port; that Service is the StatefulSet's, selects its
// pods and publishes not-ready ones (a starting node must find members
// that are still joining).
func checkJoin(t *testing.T, m *manifests, node *object, nc, sc *container) {
	t.Helper()
	svcName := node.Spec.ServiceName
	svc := m.named(t, "Service", svcName)
	if svc.Spec.ClusterIP != "None" || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("gossip Service %s: clusterIP %q, publishNotReadyAddresses %v; want None and true", svcName, svc.Spec.ClusterIP, svc.Spec.PublishNotReadyAddresses)
	}
	if !selects(svc.Spec.Selector, node.Spec.Template.Metadata.Labels) {
		t.Errorf("gossip Service %s selector %v does not select the cache node pods %v", svcName, svc.Spec.Selector, node.Spec.Template.Metadata.Labels)
	}
	want := fmt.Sprintf("%s.lake.svc:%d", svcName, nc.port(t, "gossip-tcp", "TCP"))
	for _, c := range []*container{nc, sc} {
		if j, _ := c.flag("join"); j != want {
			t.Errorf("%s: --join=%q, want %q", c.Name, j, want)
		}
	}
	if id, _ := nc.flag("node-id"); id != "$(POD_NAME)" {
		t.Errorf("cachenode: --node-id=%q, want $(POD_NAME) (stable per StatefulSet pod)", id)
	}
}

// checkCacheVolume: --cache-dir is the "cache" volume (a claim template, or
// an emptyDir), whose size is at least --cache-size.
func checkCacheVolume(t *testing.T, node *object, nc *container) {
	t.Helper()
	dir, _ := nc.flag("cache-dir")
	mount, ok := nc.mountFor(dir)
	if !ok || mount.Name != "cache" {
		t.Fatalf("cachenode: --cache-dir=%s is not on the cache volume (mount %+v)", dir, mount)
	}
	sizeFlag, _ := nc.flag("cache-size")
	cacheBytes, err := units.ParseBytes(sizeFlag)
	if err != nil {
		t.Fatalf("cachenode: --cache-size=%s: %v", sizeFlag, err)
	}
	var size string
	if len(node.Spec.VolumeClaimTemplates) > 0 {
		size = node.claimSize(t)
	} else {
		v := node.volume("cache")
		if v == nil || v.EmptyDir == nil {
			t.Fatalf("cachenode: no claim template and no emptyDir volume named cache")
		}
		size = v.EmptyDir.SizeLimit
	}
	volBytes, err := parseQuantity(size)
	if err != nil {
		t.Fatalf("cache volume size %q: %v", size, err)
	}
	if volBytes < cacheBytes {
		t.Errorf("cache volume %s (%d bytes) is smaller than --cache-size=%s (%d bytes)", size, volBytes, sizeFlag, cacheBytes)
	}
}

// checkSecrets: a Secret the chart renders holds the key its flag's file
// names.
func checkSecrets(t *testing.T, m *manifests, containers ...*container) {
	t.Helper()
	for _, c := range containers {
		for _, a := range c.Args {
			name, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			mount, ok := c.mountFor(v)
			if !pathFlag.MatchString(name) || !ok || !strings.HasPrefix(v, "/etc/locus/") {
				continue
			}
			vol := c.pod.volume(mount.Name)
			if vol == nil || vol.Secret == nil {
				t.Errorf("%s: %s is on volume %q, which is not a Secret", c.Name, a, mount.Name)
				continue
			}
			s := m.find("Secret", vol.Secret.SecretName)
			if s == nil {
				continue // the operator's own Secret (existingSecret, TLS)
			}
			key := strings.TrimPrefix(strings.TrimPrefix(v, mount.MountPath), "/")
			if _, ok := s.Data[key]; !ok {
				t.Errorf("%s: %s reads key %q of Secret %s, which has %v", c.Name, a, key, s.Metadata.Name, keys(s.Data))
			}
		}
	}
}

// checkSecretChecksums: a pod that reads a Secret the chart renders from a
// value carries a checksum of it, so that changing the value restarts
// every daemon that read the old one at start (a scheduler left with the
// old gossip key could not talk to the restarted cache nodes).
func checkSecretChecksums(t *testing.T, m *manifests, containers ...*container) {
	t.Helper()
	for _, c := range containers {
		tmeta, _ := c.pod.raw["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)
		annotations, _ := tmeta["annotations"].(map[string]any)
		for _, vm := range c.VolumeMounts {
			v := c.pod.volume(vm.Name)
			if v == nil || v.Secret == nil || m.find("Secret", v.Secret.SecretName) == nil {
				continue
			}
			if _, ok := annotations["checksum/"+vm.Name]; !ok {
				t.Errorf("%s: mounts the chart's Secret %s (volume %s) but its pod has no checksum/%s annotation: a new value would not restart it", c.Name, v.Secret.SecretName, vm.Name, vm.Name)
			}
		}
	}
}

// checkHighAvailability: several schedulers (etcd) are there to survive
// the loss of one. The pods are spread over hosts (anti-affinity or a
// topology spread on kubernetes.io/hostname; without either all could land
// on one node and go down with it), and a PodDisruptionBudget selecting
// them lets a node drain evict only some at a time.
func checkHighAvailability(t *testing.T, m *manifests, w *object) {
	t.Helper()
	if w.Spec.Replicas < 2 {
		return
	}
	podSpec, _ := w.raw["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	spread, _ := json.Marshal([]any{podSpec["affinity"], podSpec["topologySpreadConstraints"]})
	if !strings.Contains(string(spread), `"topologyKey":"kubernetes.io/hostname"`) {
		t.Errorf("%s %s: %d replicas with no spread over hosts (affinity/topologySpreadConstraints: %s)", w.Kind, w.Metadata.Name, w.Spec.Replicas, spread)
	}
	covered := false
	for _, pdb := range m.all("PodDisruptionBudget") {
		var sel struct {
			MatchLabels map[string]string `json:"matchLabels"`
		}
		_ = json.Unmarshal(pdb.Spec.RawSelector, &sel)
		covered = covered || selects(sel.MatchLabels, w.Spec.Template.Metadata.Labels)
	}
	if !covered {
		t.Errorf("%s %s: %d replicas and no PodDisruptionBudget selects them", w.Kind, w.Metadata.Name, w.Spec.Replicas)
	}
}

// checkSchedulerStrategy: a standalone scheduler is replaced with Recreate
// (two would place on the same slots); with etcd, a rolling update.
func checkSchedulerStrategy(t *testing.T, sched *object, sc *container) {
	t.Helper()
	_, etcd := sc.flag("etcd-endpoints")
	want := "Recreate"
	if etcd {
		want = "RollingUpdate"
	}
	if sched.Spec.Strategy.Type != want {
		t.Errorf("scheduler Deployment strategy %q, want %q (etcd: %v)", sched.Spec.Strategy.Type, want, etcd)
	}
	if !etcd && sched.Spec.Replicas != 1 {
		t.Errorf("standalone scheduler rendered with %d replicas", sched.Spec.Replicas)
	}
}

// checkServices: every Service port targets a named container port of the
// pods it selects, with the same protocol.
func checkServices(t *testing.T, m *manifests) {
	t.Helper()
	for _, svc := range m.all("Service") {
		var pod *object
		for _, w := range append(m.all("StatefulSet"), m.all("Deployment")...) {
			if selects(svc.Spec.Selector, w.Spec.Template.Metadata.Labels) {
				pod = w
			}
		}
		if pod == nil {
			t.Errorf("Service %s selects no workload", svc.Metadata.Name)
			continue
		}
		c := pod.Spec.Template.Spec.Containers[0]
		for _, p := range svc.Spec.Ports {
			found := false
			for _, cp := range c.Ports {
				if cp.Name == p.TargetPort && cp.Protocol == p.Protocol {
					found = true
				}
			}
			if !found {
				t.Errorf("Service %s port %s targets %q/%s, not a port of container %s", svc.Metadata.Name, p.Name, p.TargetPort, p.Protocol, c.Name)
			}
		}
	}
}

// checkDashboardConfigMap: the ConfigMap carries the dashboard byte for
// byte, with the Grafana sidecar's label.
func checkDashboardConfigMap(t *testing.T, m *manifests) {
	t.Helper()
	var cm *object
	for _, o := range m.all("ConfigMap") {
		if o.Metadata.Labels["grafana_dashboard"] == "1" {
			cm = o
		}
	}
	if cm == nil {
		t.Fatal("no ConfigMap with the label grafana_dashboard=1")
	}
	want, err := os.ReadFile(filepath.Join(moduleRoot(t), "dashboards", "locus.json"))
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["locus.json"] != strings.TrimRight(string(want), "\n") {
		t.Errorf("ConfigMap %s: locus.json (%d bytes) differs from dashboards/locus.json (%d bytes)", cm.Metadata.Name, len(cm.Data["locus.json"]), len(want))
	}
}

// checkServiceMonitors: off by default; when on, one per daemon, each
// selecting exactly one Service with an http port (no double scrape).
func checkServiceMonitors(t *testing.T, m *manifests, enabled bool) {
	t.Helper()
	sms := m.all("ServiceMonitor")
	if !enabled {
		if len(sms) != 0 {
			t.Errorf("%d ServiceMonitors rendered; want none unless serviceMonitor.enabled", len(sms))
		}
		return
	}
	if len(sms) != 2 {
		t.Fatalf("%d ServiceMonitors, want 2 (cache nodes, scheduler)", len(sms))
	}
	for _, sm := range sms {
		var matched []*object
		for _, svc := range m.all("Service") {
			if selects(sm.Spec.MatchLabels, svc.Metadata.Labels) {
				matched = append(matched, svc)
			}
		}
		if len(matched) != 1 {
			t.Errorf("ServiceMonitor %s selects %d Services, want 1", sm.Metadata.Name, len(matched))
			continue
		}
		hasHTTP := false
		for _, p := range matched[0].Spec.Ports {
			hasHTTP = hasHTTP || p.Name == "http"
		}
		if !hasHTTP || len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "http" || sm.Spec.Endpoints[0].Path != "/metrics" {
			t.Errorf("ServiceMonitor %s: endpoints %+v on Service %s; want /metrics on its http port", sm.Metadata.Name, sm.Spec.Endpoints, matched[0].Metadata.Name)
		}
	}
}

// checkVolumesAccessible: the daemon's user can read every Secret file it
// mounts and write the cache volume, as kubelet sets them up. A Secret
// volume's files are root's with defaultMode (0644 when unset); with a pod
// fsGroup they belong to that group, with group read added
// (pkg/volume/volume_linux.go). A claim's root directory is root's with
// mode 0755 on most provisioners: writable by another user only through
// fsGroup. A user that is not known (no runAsUser) counts as non-root when
// runAsNonRoot is set.
func checkVolumesAccessible(t *testing.T, c *container) {
	t.Helper()
	podSC := c.pod.Spec.Template.Spec.SecurityContext
	var uid *int64
	if podSC != nil && podSC.RunAsUser != nil {
		uid = podSC.RunAsUser
	}
	nonRoot := false
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		nonRoot = sc.RunAsNonRoot != nil && *sc.RunAsNonRoot
	}
	if uid != nil {
		nonRoot = *uid != 0
	}
	if !nonRoot {
		return
	}
	fsGroup := podSC != nil && podSC.FSGroup != nil
	for _, vm := range c.VolumeMounts {
		v := c.pod.volume(vm.Name)
		switch {
		case v != nil && v.Secret != nil:
			mode := 0o644
			if v.Secret.DefaultMode != nil {
				mode = *v.Secret.DefaultMode
			}
			if mode&0o004 == 0 && !fsGroup {
				t.Errorf("%s: Secret volume %s (mode %#o, owner root) at %s is unreadable by user %v: the pod has no fsGroup", c.Name, vm.Name, mode, vm.MountPath, describeUID(uid))
			}
		case v == nil && c.pod.hasClaimTemplate(vm.Name):
			if !fsGroup {
				t.Errorf("%s: claim %s at %s is not writable by user %v: the pod has no fsGroup", c.Name, vm.Name, vm.MountPath, describeUID(uid))
			}
		}
	}
}

func describeUID(uid *int64) string {
	if uid == nil {
		return "(non-root, image default)"
	}
	return strconv.FormatInt(*uid, 10)
}

// checkGracePeriod: the pod's terminationGracePeriodSeconds is longer than
// the daemon's bound on its own shutdown (the flag's last value, else its
// default, plus extra): shorter, kubelet kills it mid-drain.
func checkGracePeriod(t *testing.T, w *object, c *container, flag string, def, extra time.Duration) {
	t.Helper()
	d := def
	if v, ok := c.flag(flag); ok {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Errorf("%s: --%s=%s: %v", c.Name, flag, v, err)
			return
		}
	}
	g := w.Spec.Template.Spec.TerminationGracePeriodSeconds
	if g == nil {
		t.Errorf("%s %s: no terminationGracePeriodSeconds (Kubernetes' default is 30s)", w.Kind, w.Metadata.Name)
		return
	}
	grace := time.Duration(*g * float64(time.Second))
	if grace <= d+extra {
		t.Errorf("%s %s: terminationGracePeriodSeconds %v, but the daemon may take --%s=%v plus %v to stop", w.Kind, w.Metadata.Name, grace, flag, d, extra)
	}
}

// The API server's rules for the fields checkAPIFields looks at
// (k8s.io/apimachinery/pkg/util/validation), restated here so that the
// tests need nothing but helm.
var (
	dns1123Label   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dns1035Label   = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	ianaSvcName    = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	labelValue     = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)
	qualifiedName  = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
	envVarName     = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)
	quantityFormat = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?[0-9]+))?$`)
)

func isDNS1123Subdomain(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if !dns1123Label.MatchString(part) {
			return false
		}
	}
	return true
}

// checkLabels: keys are [prefix/]name (name at most 63 characters, prefix
// a DNS subdomain), values at most 63 characters of the label alphabet.
func checkLabels(t *testing.T, where string, labels map[string]any) {
	t.Helper()
	for k, v := range labels {
		prefix, name, hasPrefix := strings.Cut(k, "/")
		if !hasPrefix {
			prefix, name = "", k
		}
		if len(name) > 63 || !qualifiedName.MatchString(name) || (hasPrefix && !isDNS1123Subdomain(prefix)) {
			t.Errorf("%s: label key %q is not a qualified name", where, k)
		}
		s, ok := v.(string)
		if !ok {
			t.Errorf("%s: label %s=%v is not a string", where, k, v)
			continue
		}
		if len(s) > 63 || !labelValue.MatchString(s) {
			t.Errorf("%s: label %s=%q is not a valid label value (at most 63 characters, alphanumerics with -_. inside)", where, k, s)
		}
	}
}

// checkAPIFields checks what the API server validates and a typo in a
// template gets wrong without breaking the YAML: object names, labels,
// port names (IANA_SVC_NAME: at most 15 lowercase characters, for
// containers; DNS labels for Services), duplicate container ports, env
// variable names, and resource quantities.
func checkAPIFields(t *testing.T, m *manifests) {
	t.Helper()
	for _, o := range m.objs {
		where := o.Kind + " " + o.Metadata.Name
		if !isDNS1123Subdomain(o.Metadata.Name) {
			t.Errorf("%s: name is not a DNS-1123 subdomain", where)
		}
		if o.Kind == "Service" && (len(o.Metadata.Name) > 63 || !dns1035Label.MatchString(o.Metadata.Name)) {
			t.Errorf("%s: a Service's name must be a DNS-1035 label", where)
		}
		meta, _ := o.raw["metadata"].(map[string]any)
		labels, _ := meta["labels"].(map[string]any)
		checkLabels(t, where, labels)
		spec, _ := o.raw["spec"].(map[string]any)
		if o.Kind == "Service" {
			seen := map[string]bool{}
			for _, p := range asList(spec["ports"]) {
				name, _ := p["name"].(string)
				if len(name) > 63 || !dns1123Label.MatchString(name) || seen[name] {
					t.Errorf("%s: port name %q is not a unique DNS label", where, name)
				}
				seen[name] = true
			}
		}
		tmpl, _ := spec["template"].(map[string]any)
		if tmpl == nil {
			continue
		}
		tmeta, _ := tmpl["metadata"].(map[string]any)
		tlabels, _ := tmeta["labels"].(map[string]any)
		checkLabels(t, where+" pod template", tlabels)
		podSpec, _ := tmpl["spec"].(map[string]any)
		for _, c := range asList(podSpec["containers"]) {
			cw := fmt.Sprintf("%s container %v", where, c["name"])
			names := map[string]bool{}
			ports := map[string]bool{}
			for _, p := range asList(c["ports"]) {
				name, _ := p["name"].(string)
				if len(name) > 15 || !ianaSvcName.MatchString(name) || !regexp.MustCompile(`[a-z]`).MatchString(name) || strings.Contains(name, "--") {
					t.Errorf("%s: port name %q is not an IANA_SVC_NAME (at most 15 characters, lowercase letters, digits and inner single hyphens, one letter at least)", cw, name)
				}
				if names[name] {
					t.Errorf("%s: port name %q twice", cw, name)
				}
				names[name] = true
				key := fmt.Sprintf("%v/%v", p["containerPort"], p["protocol"])
				if ports[key] {
					t.Errorf("%s: container port %s twice", cw, key)
				}
				ports[key] = true
			}
			for _, e := range asList(c["env"]) {
				if name, _ := e["name"].(string); !envVarName.MatchString(name) {
					t.Errorf("%s: env name %q is not a C identifier-like name", cw, name)
				}
			}
			res, _ := c["resources"].(map[string]any)
			for _, kind := range []string{"requests", "limits"} {
				rl, _ := res[kind].(map[string]any)
				for r, q := range rl {
					if !quantityFormat.MatchString(fmt.Sprint(q)) {
						t.Errorf("%s: resources.%s.%s %v is not a quantity", cw, kind, r, q)
					}
				}
			}
		}
	}
}

// asList reads a JSON array of objects.
func asList(v any) []map[string]any {
	var out []map[string]any
	l, _ := v.([]any)
	for _, e := range l {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// ---------------------------------------------------------------------
// Manifests.

type manifests struct{ objs []*object }

type object struct {
	raw      map[string]any // the whole object, for checkAPIFields
	Kind     string         `json:"kind"`
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Data map[string]string `json:"data"`
	Spec struct {
		Replicas    int    `json:"replicas"`
		ServiceName string `json:"serviceName"`
		Strategy    struct {
			Type string `json:"type"`
		} `json:"strategy"`
		Template struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				TerminationGracePeriodSeconds *float64     `json:"terminationGracePeriodSeconds"`
				SecurityContext               *podSecCtx   `json:"securityContext"`
				Containers                    []*container `json:"containers"`
				Volumes                       []*volume    `json:"volumes"`
			} `json:"spec"`
		} `json:"template"`
		PodManagementPolicy  string `json:"podManagementPolicy"`
		VolumeClaimTemplates []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				Resources struct {
					Requests map[string]string `json:"requests"`
				} `json:"resources"`
			} `json:"spec"`
		} `json:"volumeClaimTemplates"`
		// Service
		ClusterIP                string            `json:"clusterIP"`
		PublishNotReadyAddresses bool              `json:"publishNotReadyAddresses"`
		Ports                    []servicePort     `json:"ports"`
		RawSelector              json.RawMessage   `json:"selector"`
		Selector                 map[string]string `json:"-"`
		MatchLabels              map[string]string `json:"-"`
		// ServiceMonitor
		Endpoints []struct {
			Port string `json:"port"`
			Path string `json:"path"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// podSecCtx is the part of a pod's securityContext that decides who may
// read and write its volumes.
type podSecCtx struct {
	FSGroup   *int64 `json:"fsGroup"`
	RunAsUser *int64 `json:"runAsUser"`
}

type servicePort struct {
	Name       string `json:"name"`
	Protocol   string `json:"protocol"`
	TargetPort string `json:"targetPort"`
}

type container struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
	Env  []struct {
		Name string `json:"name"`
	} `json:"env"`
	Ports []struct {
		Name          string `json:"name"`
		ContainerPort int    `json:"containerPort"`
		Protocol      string `json:"protocol"`
	} `json:"ports"`
	ReadinessProbe  *probe `json:"readinessProbe"`
	LivenessProbe   *probe `json:"livenessProbe"`
	SecurityContext *struct {
		RunAsUser    *int64 `json:"runAsUser"`
		RunAsNonRoot *bool  `json:"runAsNonRoot"`
	} `json:"securityContext"`
	VolumeMounts []struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
	} `json:"volumeMounts"`

	pod *object
}

type probe struct {
	HTTPGet *struct {
		Path   string `json:"path"`
		Port   any    `json:"port"`
		Scheme string `json:"scheme"`
	} `json:"httpGet"`
	TCPSocket *struct {
		Port any `json:"port"`
	} `json:"tcpSocket"`
}

type volume struct {
	Name   string `json:"name"`
	Secret *struct {
		SecretName  string `json:"secretName"`
		DefaultMode *int   `json:"defaultMode"`
	} `json:"secret"`
	EmptyDir *struct {
		SizeLimit string `json:"sizeLimit"`
	} `json:"emptyDir"`
}

// parseManifests splits helm template's output into objects.
func parseManifests(t *testing.T, out string) *manifests {
	t.Helper()
	m := &manifests{}
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(out, -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("rendered YAML does not parse: %v\n%s", err, doc)
		}
		o := &object{}
		if err := json.Unmarshal(js, o); err != nil {
			t.Fatalf("rendered object: %v\n%s", err, doc)
		}
		if err := json.Unmarshal(js, &o.raw); err != nil {
			t.Fatalf("rendered object: %v\n%s", err, doc)
		}
		// A Service's selector is a label map; a ServiceMonitor's has matchLabels.
		if o.Kind == "Service" && len(o.Spec.RawSelector) > 0 {
			if err := json.Unmarshal(o.Spec.RawSelector, &o.Spec.Selector); err != nil {
				t.Fatalf("Service %s selector: %v", o.Metadata.Name, err)
			}
		}
		if o.Kind == "ServiceMonitor" && len(o.Spec.RawSelector) > 0 {
			var sel struct {
				MatchLabels map[string]string `json:"matchLabels"`
			}
			if err := json.Unmarshal(o.Spec.RawSelector, &sel); err != nil {
				t.Fatalf("ServiceMonitor %s selector: %v", o.Metadata.Name, err)
			}
			o.Spec.MatchLabels = sel.MatchLabels
		}
		for _, c := range o.Spec.Template.Spec.Containers {
			c.pod = o
		}
		m.objs = append(m.objs, o)
	}
	return m
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func (m *manifests) all(kind string) []*object {
	var out []*object
	for _, o := range m.objs {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func (m *manifests) one(t *testing.T, kind string) *object {
	t.Helper()
	all := m.all(kind)
	if len(all) != 1 {
		t.Fatalf("%d objects of kind %s rendered, want 1", len(all), kind)
	}
	return all[0]
}

func (m *manifests) find(kind, name string) *object {
	for _, o := range m.all(kind) {
		if o.Metadata.Name == name {
			return o
		}
	}
	return nil
}

func (m *manifests) named(t *testing.T, kind, name string) *object {
	t.Helper()
	o := m.find(kind, name)
	if o == nil {
		t.Fatalf("no %s named %q rendered", kind, name)
	}
	return o
}

func (o *object) container(t *testing.T, name string) *container {
	t.Helper()
	for _, c := range o.Spec.Template.Spec.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("%s %s has no container %q", o.Kind, o.Metadata.Name, name)
	return nil
}

func (o *object) volume(name string) *volume {
	for _, v := range o.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return v
		}
	}
	return nil
}

func (o *object) hasClaimTemplate(name string) bool {
	for _, c := range o.Spec.VolumeClaimTemplates {
		if c.Metadata.Name == name {
			return true
		}
	}
	return false
}

func (o *object) claimSize(t *testing.T) string {
	t.Helper()
	for _, c := range o.Spec.VolumeClaimTemplates {
		if c.Metadata.Name == "cache" {
			return c.Spec.Resources.Requests["storage"]
		}
	}
	t.Fatalf("%s has no volume claim template named cache", o.Metadata.Name)
	return ""
}

// flag returns the value of --name in the args (the last one, as the flag
// package takes).
func (c *container) flag(name string) (string, bool) {
	v, ok := "", false
	for _, a := range c.Args {
		if rest, found := strings.CutPrefix(a, "--"+name+"="); found {
			v, ok = rest, true
		}
	}
	return v, ok
}

func (c *container) hasEnv(name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return true
		}
	}
	return false
}

func (c *container) port(t *testing.T, name, protocol string) int {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name && p.Protocol == protocol {
			return p.ContainerPort
		}
	}
	t.Fatalf("container %s has no %s port named %q", c.Name, protocol, name)
	return 0
}

// resolvePort turns a probe's port (a number or a port name) into a number.
func (c *container) resolvePort(t *testing.T, p any) int {
	t.Helper()
	switch v := p.(type) {
	case float64:
		return int(v)
	case string:
		return c.port(t, v, "TCP")
	}
	t.Fatalf("container %s: probe port %v", c.Name, p)
	return 0
}

type mount struct{ Name, MountPath string }

// mountFor returns the volume mount that holds path.
func (c *container) mountFor(path string) (mount, bool) {
	for _, m := range c.VolumeMounts {
		if path == m.MountPath || strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/") {
			return mount{m.Name, m.MountPath}, true
		}
	}
	return mount{}, false
}

func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// ---------------------------------------------------------------------
// Values.

type tlsMode int

const (
	noTLS tlsMode = iota
	serverTLS
	mutualTLS
)

type valuesFile struct {
	IPFamily string `json:"ipFamily"`
	TLS      *struct {
		Enabled bool  `json:"enabled"`
		CA      *bool `json:"ca"`
	} `json:"tls"`
}

// values reads the value set's file (the chart's defaults leave TLS off
// and tls.ca on).
func (m *manifests) values(t *testing.T, file string) valuesFile {
	t.Helper()
	var v valuesFile
	if file == "" {
		return v
	}
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), "internal", "chart", "testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}

// ipFamily is the value set's ipFamily (the chart's default: IPv4).
func (v valuesFile) ipFamily() string {
	if v.IPFamily == "" {
		return "IPv4"
	}
	return v.IPFamily
}

func (v valuesFile) tls() tlsMode {
	switch {
	case v.TLS == nil || !v.TLS.Enabled:
		return noTLS
	case v.TLS.CA != nil && !*v.TLS.CA:
		return serverTLS
	}
	return mutualTLS
}

// parseQuantity parses the Kubernetes quantities the chart renders for
// sizes: an integer with Ki, Mi, Gi, Ti or no suffix.
func parseQuantity(q string) (int64, error) {
	mult := map[string]int64{"": 1, "Ki": units.KiB, "Mi": units.MiB, "Gi": units.GiB, "Ti": units.TiB}
	m := regexp.MustCompile(`^([0-9]+)(Ki|Mi|Gi|Ti)?$`).FindStringSubmatch(q)
	if m == nil {
		return 0, fmt.Errorf("not an integer quantity with a binary suffix")
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, err
	}
	return n * mult[m[2]], nil
}
