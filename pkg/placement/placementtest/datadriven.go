package placementtest

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

// Rewrite, set by the -rewrite test flag, makes RunScript rewrite the golden
// outputs of script files instead of comparing them.
var Rewrite = flag.Bool("rewrite", false, "rewrite the expected output of placement scripts (testdata/*.txt)")

// Command is one directive of a script, in the style of
// cockroachdb/datadriven as used by etcd-io/raft's testdata:
//
//	# comment
//	verb arg key=value key=v1,v2
//	optional input lines
//	----
//	expected output
//	(blank line)
type Command struct {
	Pos   string // file:line
	Verb  string
	Args  []string          // positional arguments
	Keys  map[string]string // key=value arguments
	Input []string          // lines between the directive and ----
}

type block struct {
	pre    []string // comments and blank lines before the directive
	cmd    Command
	header []string // the directive and input lines, verbatim
	output []string
}

func parseScript(path string) ([]block, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot open %q: %w", path, err)
	}
	defer f.Close()
	var (
		blocks []block
		pre    []string
		lines  []string
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("cannot read %q: %w", path, err)
	}
	for i := 0; i < len(lines); {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			pre = append(pre, l)
			i++
			continue
		}
		b := block{pre: pre}
		pre = nil
		b.cmd = parseDirective(l)
		b.cmd.Pos = fmt.Sprintf("%s:%d", path, i+1)
		b.header = append(b.header, l)
		i++
		for i < len(lines) && lines[i] != "----" {
			b.header = append(b.header, lines[i])
			b.cmd.Input = append(b.cmd.Input, lines[i])
			i++
		}
		if i == len(lines) {
			return nil, nil, fmt.Errorf("%s: directive without ----", b.cmd.Pos)
		}
		i++ // ----
		for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
			b.output = append(b.output, lines[i])
			i++
		}
		blocks = append(blocks, b)
	}
	return blocks, pre, nil
}

func parseDirective(l string) Command {
	fields := strings.Fields(l)
	c := Command{Verb: fields[0], Keys: map[string]string{}}
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok {
			c.Keys[k] = v
		} else {
			c.Args = append(c.Args, f)
		}
	}
	return c
}

// RunScript runs every directive of the script at path through run and
// compares its output with the golden output (or rewrites the file under
// -rewrite). Output lines must not be blank.
func RunScript(t *testing.T, path string, run func(c Command) string) {
	t.Helper()
	blocks, trailer, err := parseScript(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, b := range blocks {
		got := strings.TrimRight(run(b.cmd), "\n")
		var gotLines []string
		if got != "" {
			gotLines = strings.Split(got, "\n")
		}
		for _, l := range gotLines {
			if strings.TrimSpace(l) == "" {
				t.Fatalf("%s: %s: output has a blank line", b.cmd.Pos, b.cmd.Verb)
			}
		}
		if !*Rewrite && strings.Join(gotLines, "\n") != strings.Join(b.output, "\n") {
			t.Errorf("%s: %s\ngot:\n%s\nwant:\n%s", b.cmd.Pos, b.header[0],
				strings.Join(gotLines, "\n"), strings.Join(b.output, "\n"))
		}
		for _, l := range b.pre {
			out.WriteString(l + "\n")
		}
		for _, l := range b.header {
			out.WriteString(l + "\n")
		}
		out.WriteString("----\n")
		for _, l := range gotLines {
			out.WriteString(l + "\n")
		}
	}
	for _, l := range trailer {
		out.WriteString(l + "\n")
	}
	if *Rewrite {
		s := strings.TrimRight(out.String(), "\n") + "\n"
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
