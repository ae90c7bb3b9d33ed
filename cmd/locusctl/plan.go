package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"sort"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/locuscache/locus/internal/units"
	"github.com/locuscache/locus/pkg/client"
	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/origin"
	"github.com/locuscache/locus/pkg/parquetx"
	"github.com/locuscache/locus/pkg/ring"
)

const planUsage = `Usage: locusctl plan URI [--scheduler URL | --join HOST:PORT | --nodes N]
                      [--block-size SIZE] [--replication N] [--json] [--sniff]
                      [--origin-s3-endpoint URL] [--origin-s3-region R] [--origin-s3-path-style]
                      [--origin-file-root DIR]

Split planning, as a query engine integration does it: lists the Parquet
objects under URI (s3://bucket/prefix or file:///dir/), reads each footer
with arrow-go, and prints one split per row group with its placement key
(the block holding most of its bytes: "URI#block") and the node that owns
that key on the ring, which is where the scheduler will want to run it.

Where the ring comes from (at most one):
  --scheduler URL     the scheduler's GET /v1/ring (http://host:port): its
                      members, block size and replication. The ring is
                      rebuilt here from the member list, as every member
                      builds it, and checked against the scheduler's epoch
                      (a mismatch is a warning). Simplest and read-only:
                      the recommended source.
  --join HOST:PORT    join the cluster's gossip as an observer (owning
                      nothing) at a member's --gossip-addr, read the view,
                      and leave. Needs the gossip port reachable both ways:
                      bind with --gossip-addr (default 127.0.0.1:0) and
                      pass --gossip-key-file if the cluster encrypts.
  --nodes N           a simulated ring of N nodes named node-0000, ...
                      (capacity planning: how would these splits spread?)
  (none)              owner and rack are "-".

The block size is the ring source's (the scheduler's or the gossip's),
else --block-size (default 128MiB); --block-size overrides both.
--replication N (default: the cluster's, from the scheduler or the
gossip, else 1) prints the first N nodes of each preference list; a task
on any of them is DATA_LOCAL.

Output: a table on stdout (uri, row group, offset, length, rows,
placement key, owner, rack, and replicas with --replication > 1), or with
--json one JSON object per line (JSON Lines: uri, version, row_group,
offset, length, num_rows, block, placement_key, owner, rack, replicas).
Progress and a summary go to stderr.

Errors: a bad URI or flags exit 2; a listing that fails, or finds no
Parquet object under URI, exits 1. A file
whose footer cannot be read (not Parquet, corrupt, encrypted, vanished,
unreadable) is skipped with a warning on stderr; the others are printed,
and the exit status is 1 at the end.

Origin flags (the cache node's names; S3 credentials from the standard AWS
chain: AWS_ACCESS_KEY_ID, ~/.aws, roles):
  --origin-s3-endpoint URL   S3-compatible endpoint (default: AWS)
  --origin-s3-region R       region (default: the AWS configuration's, else us-east-1)
  --origin-s3-path-style     path-style bucket addressing (most S3-compatible stores)
  --origin-file-root DIR     the directory file:// URIs may name (default: the
                             URI's own directory)

Other flags:
  --sniff            also take objects without a .parquet name whose bytes
                     start and end with the Parquet magic (Hive's 000000_0)
  --concurrency N    footers read in parallel (default 8)
  --token-file F     bearer token for --scheduler (only needed if its reads
                     are protected by a proxy; the scheduler's are open)
  --timeout D        bound on the whole command (default 10m)

Example (the listing and footers through a cache node's S3 gateway, its
--http-addr; an S3-compatible store's own endpoint works as well):
  locusctl plan s3://lake/events/ --scheduler http://127.0.0.1:8080 \
      --origin-s3-endpoint http://127.0.0.1:7080 --origin-s3-path-style
`

// planOptions are the parsed flags of locusctl plan.
type planOptions struct {
	uri                   string
	schedulerURL, join    string
	tokenFile             string
	gossipAddr, keyFile   string
	nodes                 int
	nodesSet              bool
	blockSize             int64
	replication           int
	asJSON, sniff         bool
	concurrency           int
	timeout               time.Duration
	s3Endpoint, s3Region  string
	s3PathStyle           bool
	fileRoot              string
	blockSizeSet, replSet bool
}

func parsePlan(args []string, stdout io.Writer) (planOptions, error) {
	var o planOptions
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.StringVar(&o.schedulerURL, "scheduler", "", "")
	fs.StringVar(&o.tokenFile, "token-file", "", "")
	fs.StringVar(&o.join, "join", "", "")
	fs.StringVar(&o.gossipAddr, "gossip-addr", "127.0.0.1:0", "")
	fs.StringVar(&o.keyFile, "gossip-key-file", "", "")
	fs.IntVar(&o.nodes, "nodes", 0, "")
	fs.Var(units.Flag(&o.blockSize), "block-size", "")
	fs.IntVar(&o.replication, "replication", 0, "")
	fs.BoolVar(&o.asJSON, "json", false, "")
	fs.BoolVar(&o.sniff, "sniff", false, "")
	fs.IntVar(&o.concurrency, "concurrency", 8, "")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "")
	fs.StringVar(&o.s3Endpoint, "origin-s3-endpoint", "", "")
	fs.StringVar(&o.s3Region, "origin-s3-region", "", "")
	fs.BoolVar(&o.s3PathStyle, "origin-s3-path-style", false, "")
	fs.StringVar(&o.fileRoot, "origin-file-root", "", "")
	// The URI may come before or after the flags.
	var rest []string
	err := parseHelp(fs, planUsage, stdout, func() error {
		for {
			if err := fs.Parse(args); err != nil {
				return err
			}
			if fs.NArg() == 0 {
				return nil
			}
			rest = append(rest, fs.Arg(0))
			args = fs.Args()[1:]
		}
	})
	if err != nil {
		return o, err
	}
	fs.Visit(func(f *flag.Flag) {
		o.blockSizeSet = o.blockSizeSet || f.Name == "block-size"
		o.replSet = o.replSet || f.Name == "replication"
		o.nodesSet = o.nodesSet || f.Name == "nodes"
	})
	sources := 0
	for _, set := range []bool{o.schedulerURL != "", o.join != "", o.nodesSet} {
		if set {
			sources++
		}
	}
	switch {
	case len(rest) == 0:
		return o, usageErrorf("missing URI: locusctl plan s3://bucket/prefix/ or file:///dir/ (see --help)")
	case len(rest) > 1:
		return o, usageErrorf("one URI at a time, got %q", rest)
	case sources > 1:
		return o, usageErrorf("give at most one of --scheduler, --join and --nodes")
	case o.nodesSet && (o.nodes < 1 || o.nodes > ring.MaxNodes):
		return o, usageErrorf("--nodes must be 1 to %d, got %d", ring.MaxNodes, o.nodes)
	case o.blockSizeSet && o.blockSize <= 0:
		return o, usageErrorf("--block-size must be positive")
	case o.replSet && (o.replication < 1 || o.replication > 16):
		return o, usageErrorf("--replication must be 1 to 16, got %d", o.replication)
	case o.concurrency < 1 || o.concurrency > 256:
		return o, usageErrorf("--concurrency must be 1 to 256, got %d", o.concurrency)
	case o.timeout <= 0:
		return o, usageErrorf("--timeout must be positive")
	}
	o.uri = rest[0]
	u, err := origin.ParseURI(o.uri)
	if err != nil {
		return o, usageErrorf("%v", err)
	}
	o.uri = u.String()
	return o, nil
}

var runPlan = withSignals(planMain)

// errSkipped marks a plan that printed what it could but skipped files.
var errSkipped = errors.New("some files were skipped")

// planRow is one split as printed (and the --json object).
type planRow struct {
	URI          string   `json:"uri"`
	Version      string   `json:"version,omitempty"`
	RowGroup     int      `json:"row_group"`
	Offset       int64    `json:"offset"`
	Length       int64    `json:"length"`
	NumRows      int64    `json:"num_rows"`
	Block        int64    `json:"block"`
	PlacementKey string   `json:"placement_key"`
	Owner        string   `json:"owner,omitempty"`
	Rack         string   `json:"rack,omitempty"`
	Replicas     []string `json:"replicas,omitempty"`
}

// ringSource is where owners come from: a ring, the block size and the
// preference-list length, and a name for the summary.
type ringSource struct {
	ring        *ring.Ring // nil: no owners
	blockSize   int64
	replication int
	name        string
}

func planMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parsePlan(args, stdout)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	store, err := planOrigin(ctx, o)
	if err != nil {
		return err
	}
	src, err := planRing(ctx, o, stderr)
	if err != nil {
		return err
	}
	prog := newProgress(stderr, "locusctl plan", 2*time.Second)

	var infos []origin.Info
	err = parquetx.ListParquet(ctx, store, o.uri, parquetx.ListOptions{Sniff: o.sniff}, func(info origin.Info) error {
		infos = append(infos, info)
		prog.report("listed %d Parquet objects", len(infos))
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing %s: %w", o.uri, err)
	}
	if len(infos) == 0 {
		// As warm does: an empty plan is most often a mistyped prefix.
		return noParquetError(o.uri, o.sniff)
	}

	// Read the footers in parallel; each goroutine writes only its own slot.
	footers := make([]*parquetx.Footer, len(infos))
	ferrs := make([]error, len(infos))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.concurrency)
	var read atomic.Int64
	for i, info := range infos {
		g.Go(func() error {
			footers[i], ferrs[i] = parquetx.ReadObjectFooter(gctx, store, info)
			prog.report("read %d of %d footers", read.Add(1), len(infos))
			return nil
		})
	}
	g.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}

	var out planOutput
	if o.asJSON {
		out = &jsonOutput{enc: json.NewEncoder(stdout)}
	} else {
		out = newTableOutput(stdout, src.replication > 1)
	}
	owned := map[string]int{}
	var skipped, splits int
	var rows, bytes int64
	for i, info := range infos {
		if ferrs[i] != nil {
			skipped++
			fmt.Fprintf(stderr, "locusctl plan: warning: skipping %s: %v\n", info.URI, ferrs[i])
			continue
		}
		for _, s := range parquetx.PlanSplits(info, footers[i]) {
			r, err := src.row(s)
			if err != nil {
				_ = out.flush() // the rows so far, before the error
				return err
			}
			if err := out.write(r); err != nil {
				return err
			}
			owned[r.Owner]++
			splits++
			rows += s.NumRows
			bytes += s.Length
		}
	}
	if err := out.flush(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%d splits in %d files (%d rows, %s), block size %s, ring: %s%s\n",
		splits, len(infos)-skipped, rows, units.HumanBytes(bytes), units.FormatBytes(src.blockSize), src.name, ownersSummary(src, owned))
	if skipped > 0 {
		return fmt.Errorf("%w: %d of %d files had no readable footer (see the warnings above)", errSkipped, skipped, len(infos))
	}
	return nil
}

// row computes a split's placement key and owners.
func (src *ringSource) row(s parquetx.Split) (planRow, error) {
	r := planRow{URI: s.URI, Version: s.Version, RowGroup: s.RowGroup, Offset: s.Offset, Length: s.Length, NumRows: s.NumRows}
	b, err := ring.PlacementBlock(s.Offset, s.Length, src.blockSize)
	if err != nil {
		return r, fmt.Errorf("%s row group %d: %w", s.URI, s.RowGroup, err)
	}
	r.Block, r.PlacementKey = b, ring.BlockKey(s.URI, b)
	if src.ring != nil {
		owners := src.ring.Owners(r.PlacementKey, src.replication)
		if len(owners) > 0 {
			r.Owner, r.Rack = owners[0].ID, owners[0].Rack
			for _, n := range owners[1:] {
				r.Replicas = append(r.Replicas, n.ID)
			}
		}
	}
	return r, nil
}

func ownersSummary(src ringSource, owned map[string]int) string {
	if src.ring == nil || len(owned) == 0 {
		return ""
	}
	ids := make([]string, 0, len(owned))
	for id := range owned {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%s %d", id, owned[id])
	}
	return "; splits per owner: " + strings.Join(parts, ", ")
}

// planOrigin builds the store for the URI's scheme from the origin flags.
func planOrigin(ctx context.Context, o planOptions) (origin.Store, error) {
	u, _ := origin.ParseURI(o.uri)
	switch u.Scheme {
	case origin.SchemeS3:
		s, err := origin.NewS3Store(ctx, origin.S3Config{Endpoint: o.s3Endpoint, Region: o.s3Region, PathStyle: o.s3PathStyle})
		if err != nil {
			return nil, fmt.Errorf("S3 origin: %w", err)
		}
		return s, nil
	case origin.SchemeFile:
		root := o.fileRoot
		if root == "" {
			root = u.Path
			if !strings.HasSuffix(root, "/") {
				root = path.Dir(root)
			}
		}
		s, err := origin.NewFileStore(origin.FileConfig{Root: root})
		if err != nil {
			return nil, fmt.Errorf("file origin (--origin-file-root %s): %w", root, err)
		}
		return s, nil
	}
	return nil, usageErrorf("unsupported URI scheme %q", u.Scheme)
}

// planRing returns the ring source the flags ask for.
func planRing(ctx context.Context, o planOptions, stderr io.Writer) (ringSource, error) {
	src := ringSource{blockSize: membership.DefaultBlockSize, replication: 1, name: "none (owners are \"-\")"}
	switch {
	case o.schedulerURL != "":
		cfg := client.SchedulerConfig{URL: o.schedulerURL, Timeout: 30 * time.Second}
		if o.tokenFile != "" {
			b, err := os.ReadFile(o.tokenFile)
			if err != nil {
				return src, usageErrorf("--token-file: %v", err)
			}
			cfg.Token = strings.TrimSpace(string(b))
		}
		sc, err := client.NewScheduler(cfg)
		if err != nil {
			return src, usageErrorf("--scheduler: %v", err)
		}
		defer sc.Close()
		rs, err := sc.Ring(ctx)
		if err != nil {
			return src, fmt.Errorf("reading the ring from the scheduler: %w", err)
		}
		var members []membership.Member
		for _, m := range rs.Members {
			if m.Role != string(membership.RoleCache) || (m.State != string(membership.StateAlive) && m.State != string(membership.StateDraining)) {
				continue // observers own nothing; "dead" is the placer's memory, not the ring
			}
			grpc := m.Address
			if grpc == "" {
				grpc = "unknown:0"
			}
			members = append(members, membership.Member{NodeMeta: membership.NodeMeta{
				ID: m.Node, Rack: m.Rack, GRPCAddr: grpc, HTTPAddr: m.HTTPAddress, Slots: m.Slots,
				CapacityBytes: m.CapacityBytes, State: membership.State(m.State), BlockSize: rs.BlockSize,
			}})
		}
		v, err := membership.NewView(members, ring.Config{})
		if err != nil {
			return src, fmt.Errorf("rebuilding the ring from the scheduler's members: %w", err)
		}
		if v.Epoch != rs.Epoch {
			fmt.Fprintf(stderr, "locusctl plan: warning: the ring rebuilt from %d members has epoch %016x, the scheduler's is %016x: owners may differ from the scheduler's\n",
				len(members), v.Epoch, rs.Epoch)
		}
		src.ring, src.name = v.Ring, fmt.Sprintf("the scheduler at %s (%d nodes, epoch %016x)", o.schedulerURL, len(members), rs.Epoch)
		if rs.BlockSize > 0 {
			src.blockSize = rs.BlockSize
		}
		if rs.Replication > 0 {
			src.replication = rs.Replication
		}
	case o.join != "":
		v, err := observeGossip(ctx, o)
		if err != nil {
			return src, err
		}
		n := 0
		if v.Ring != nil {
			n = v.Ring.Len()
		}
		src.ring, src.name = v.Ring, fmt.Sprintf("the gossip at %s (%d nodes, epoch %016x)", o.join, n, v.Epoch)
		if bs := v.BlockSize(); bs > 0 {
			src.blockSize = bs
		}
		if r := v.Replication(); r > 0 {
			src.replication = r
		}
	case o.nodes > 0:
		nodes := make([]ring.Node, o.nodes)
		for i := range nodes {
			nodes[i] = ring.Node{ID: fmt.Sprintf("node-%04d", i), Weight: 1}
		}
		r, err := ring.New(nodes, ring.Config{})
		if err != nil {
			return src, err
		}
		src.ring, src.name = r, fmt.Sprintf("simulated, %d nodes", o.nodes)
	}
	if o.blockSizeSet {
		if src.ring != nil && o.nodes == 0 && src.blockSize != o.blockSize {
			fmt.Fprintf(stderr, "locusctl plan: warning: --block-size %s differs from the cluster's %s: these keys and owners are not the ones the cluster uses\n",
				units.FormatBytes(o.blockSize), units.FormatBytes(src.blockSize))
		}
		src.blockSize = o.blockSize
	}
	if o.replSet {
		src.replication = o.replication
	}
	return src, nil
}

// observeGossip joins the gossip at o.join as an observer, waits for a
// ring, and leaves, returning the view.
func observeGossip(ctx context.Context, o planOptions) (*membership.View, error) {
	host, _ := os.Hostname()
	id := fmt.Sprintf("locusctl-plan-%d", os.Getpid())
	if host != "" {
		id = sanitizeID(host) + "-" + id
	}
	m, err := membership.New(membership.Config{
		Meta:     membership.NodeMeta{ID: id, Role: membership.RoleObserver},
		BindAddr: o.gossipAddr,
		KeyFile:  o.keyFile,
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return nil, fmt.Errorf("joining the gossip: %w", err)
	}
	defer func() {
		lctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = m.Leave(lctx)
	}()
	if _, err := m.Join(strings.Split(o.join, ",")); err != nil {
		return nil, fmt.Errorf("joining the gossip at %s: %w", o.join, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := m.WaitFor(wctx, func(v *membership.View) bool { return v.Ring != nil })
	if err != nil {
		return nil, fmt.Errorf("no cache node in the gossip at %s: %w", o.join, err)
	}
	return v, nil
}

// sanitizeID maps a host name onto the membership id alphabet.
func sanitizeID(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}

// planOutput writes rows as a table or JSON lines.
type planOutput interface {
	write(planRow) error
	flush() error
}

type jsonOutput struct{ enc *json.Encoder }

func (j *jsonOutput) write(r planRow) error { return j.enc.Encode(r) }
func (j *jsonOutput) flush() error          { return nil }

type tableOutput struct {
	tw       *tabwriter.Writer
	replicas bool
	n        int
}

func newTableOutput(w io.Writer, replicas bool) *tableOutput {
	t := &tableOutput{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0), replicas: replicas}
	fmt.Fprint(t.tw, "URI\tROW GROUP\tOFFSET\tLENGTH\tROWS\tPLACEMENT KEY\tOWNER\tRACK")
	if replicas {
		fmt.Fprint(t.tw, "\tREPLICAS")
	}
	fmt.Fprintln(t.tw)
	return t
}

func (t *tableOutput) write(r planRow) error {
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	fmt.Fprintf(t.tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s", r.URI, r.RowGroup, r.Offset, r.Length, r.NumRows, r.PlacementKey, dash(r.Owner), dash(r.Rack))
	if t.replicas {
		fmt.Fprintf(t.tw, "\t%s", dash(strings.Join(r.Replicas, ",")))
	}
	fmt.Fprintln(t.tw)
	// Flush in chunks: tabwriter aligns what it holds, and a long listing
	// should not wait for its end.
	if t.n++; t.n%1000 == 0 {
		return t.tw.Flush()
	}
	return nil
}

func (t *tableOutput) flush() error { return t.tw.Flush() }

// noParquetError is plan's and warm's error for a prefix that lists no
// Parquet object: it says which names count, and suggests --sniff unless
// it was given.
func noParquetError(prefix string, sniffed bool) error {
	if sniffed {
		return fmt.Errorf("no Parquet objects under %s (no object named *.parquet or *.parq, nor one that starts with the Parquet magic)", prefix)
	}
	return fmt.Errorf("no Parquet objects under %s (objects named *.parquet or *.parq; --sniff for others)", prefix)
}
