package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/locuscache/locus/internal/units"
	"github.com/locuscache/locus/pkg/client"
	"github.com/locuscache/locus/pkg/origin"
)

const statUsage = `Usage: locusctl stat --node HOST:PORT URI [--columns] [--json] [--timeout D]
                     [--tls-ca F [--tls-cert F --tls-key F]]

Asks a cache node about one object (gRPC Stat): its size, version (the S3
ETag; for files size, mtime, inode and ctime: cached bytes are keyed by it, so a new
version is never served from old bytes) and modification time. For a
Parquet object, the node also returns its row groups from the footer (the
node keeps footers in memory): offset, length and rows of each, which are
the splits a query engine would plan; --columns adds each row group's
column chunks (leaf column path, offset, length), the ranges
'locusctl warm --columns' reads.

The node answers from the origin it is configured with (the same
credentials and --origin-file-root as its reads), so this is also a quick
check that a node can see an object.

Exits 1 if the node cannot be reached or the object does not exist (or is
outside the node's --origin-file-root), 2 for bad flags.

Flags:
  --node HOST:PORT  a cache node's gRPC address (its --grpc-addr). Required.
  --columns         also print the column chunks of every row group
  --json            print the answer as JSON
  --timeout D       bound on the call (default 10s)
  --tls-ca F        CA that signed the nodes' certificates (TLS clusters)
  --tls-cert F, --tls-key F
                    client certificate and key, for clusters with mTLS
                    (the nodes' --tls-ca set)

` + envHelp + `
Examples:
  locusctl stat --node 127.0.0.1:7070 s3://lake/events/part-00000.parquet
  locusctl stat --node 10.0.0.5:7070 --tls-ca ca.pem --tls-cert me.pem --tls-key me-key.pem \
      --columns s3://lake/events/part-00000.parquet
`

// statOptions are the parsed flags of locusctl stat.
type statOptions struct {
	node    string
	tls     tlsFlags
	uri     string
	columns bool
	asJSON  bool
	timeout time.Duration
}

func parseStat(args []string, stdout io.Writer) (statOptions, error) {
	var o statOptions
	fs := flag.NewFlagSet("stat", flag.ContinueOnError)
	fs.StringVar(&o.node, "node", "", "")
	o.tls.register(fs)
	fs.BoolVar(&o.columns, "columns", false, "")
	fs.BoolVar(&o.asJSON, "json", false, "")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "")
	// LOCUS_COLUMNS is warm's list of columns, not this switch.
	rest, _, err := parseFlagsGiven(fs, args, statUsage, stdout, "columns")
	if err != nil {
		return o, err
	}
	switch {
	case len(rest) == 0:
		return o, usageErrorf("missing URI: locusctl stat --node HOST:PORT s3://bucket/key (see --help)")
	case len(rest) > 1:
		return o, usageErrorf("one URI at a time, got %q", rest)
	case o.timeout <= 0:
		return o, usageErrorf("--timeout must be positive, got %v", o.timeout)
	}
	if err := checkNodeAddr(o.node); err != nil {
		return o, err
	}
	u, err := origin.ParseURI(rest[0])
	if err != nil {
		return o, usageErrorf("%v", err)
	}
	if u.IsPrefix() {
		return o, usageErrorf("%q names a prefix, not an object", rest[0])
	}
	o.uri = u.String()
	return o, nil
}

// runStat is "locusctl stat".
var runStat = withSignals(statMain)

// statJSON is the --json answer.
type statJSON struct {
	URI       string         `json:"uri"`
	Size      int64          `json:"size"`
	Version   string         `json:"version"`
	ModTime   *time.Time     `json:"mtime,omitempty"`
	Parquet   bool           `json:"parquet"`
	NumRows   int64          `json:"num_rows,omitempty"`
	RowGroups []rowGroupJSON `json:"row_groups,omitempty"`
}

type rowGroupJSON struct {
	Index   int          `json:"index"`
	Offset  int64        `json:"offset"`
	Length  int64        `json:"length"`
	NumRows int64        `json:"num_rows"`
	Columns []columnJSON `json:"columns,omitempty"`
}

type columnJSON struct {
	Path   string `json:"path"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
}

func statMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseStat(args, stdout)
	if err != nil {
		return err
	}
	cl, err := openNode(o.tls)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	st, err := cl.Stat(ctx, o.node, o.uri)
	if err != nil {
		if errors.Is(err, origin.ErrNotFound) {
			return fmt.Errorf("%s: no such object on the node's origin (node %s)", o.uri, o.node)
		}
		return nodeError(o.node, "stat "+o.uri, err)
	}
	if o.asJSON {
		return writeJSON(stdout, toStatJSON(st, o.columns))
	}
	printStat(stdout, st, o.columns)
	return nil
}

func toStatJSON(st client.ObjectInfo, columns bool) statJSON {
	out := statJSON{URI: st.URI, Size: st.Size, Version: st.Version, Parquet: st.Parquet, NumRows: st.NumRows}
	if !st.ModTime.IsZero() {
		t := st.ModTime.UTC()
		out.ModTime = &t
	}
	for _, rg := range st.RowGroups {
		g := rowGroupJSON{Index: rg.Index, Offset: rg.Offset, Length: rg.Length, NumRows: rg.NumRows}
		if columns {
			g.Columns = []columnJSON{}
			for _, c := range rg.Columns {
				g.Columns = append(g.Columns, columnJSON{Path: c.Path, Offset: c.Offset, Length: c.Length})
			}
		}
		out.RowGroups = append(out.RowGroups, g)
	}
	return out
}

func printStat(w io.Writer, st client.ObjectInfo, columns bool) {
	fmt.Fprintf(w, "uri        %s\n", st.URI)
	fmt.Fprintf(w, "size       %d (%s)\n", st.Size, units.HumanBytes(st.Size))
	fmt.Fprintf(w, "version    %s\n", dash(st.Version))
	mtime := "-"
	if !st.ModTime.IsZero() {
		mtime = st.ModTime.UTC().Format(time.RFC3339Nano)
	}
	fmt.Fprintf(w, "mtime      %s\n", mtime)
	if !st.Parquet {
		fmt.Fprintln(w, "parquet    no (not a Parquet object, or its footer did not parse)")
		return
	}
	fmt.Fprintf(w, "parquet    %d row groups, %d rows\n\n", len(st.RowGroups), st.NumRows)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if columns {
		fmt.Fprintln(tw, "ROW GROUP\tCOLUMN\tOFFSET\tLENGTH\tSIZE\tROWS")
	} else {
		fmt.Fprintln(tw, "ROW GROUP\tOFFSET\tLENGTH\tSIZE\tROWS")
	}
	for _, rg := range st.RowGroups {
		if !columns {
			fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%d\n", rg.Index, rg.Offset, rg.Length, units.HumanBytes(rg.Length), rg.NumRows)
			continue
		}
		fmt.Fprintf(tw, "%d\t(all)\t%d\t%d\t%s\t%d\n", rg.Index, rg.Offset, rg.Length, units.HumanBytes(rg.Length), rg.NumRows)
		for _, c := range rg.Columns {
			fmt.Fprintf(tw, "\t%s\t%d\t%d\t%s\n", c.Path, c.Offset, c.Length, units.HumanBytes(c.Length))
		}
	}
	tw.Flush()
}
