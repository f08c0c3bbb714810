// Command benchtable turns the raw output of make bench (the decision
// benchmark's passes, the memory benchmark and the accuracy test, all in
// one file) into the tables of BENCHMARKS.md and the chart beside it, so a
// rerun regenerates every number:
//
//	go run ./cmd/benchtable -md ../BENCHMARKS.md -svg ../benchmarks.svg results/latest.txt
//
// Each table replaces the text between <!-- benchtable:NAME --> and
// <!-- /benchtable:NAME --> in the Markdown file; the prose around them is
// left alone. Without -md the tables are printed.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"regexp"
)

// sections are the generated parts of BENCHMARKS.md, by marker name.
var sections = []struct {
	name   string
	render func(*results) string
}{
	{"env", envSection},
	{"targets", targetsSection},
	{"summary", summarySection},
	{"decision", decisionSection},
	{"memory", memorySection},
	{"anatomy", anatomySection},
	{"accuracy", accuracySection},
	{"http", httpSection},
	{"outbound", outboundSection},
}

func main() {
	md := flag.String("md", "", "the Markdown file whose benchtable sections to rewrite")
	svg := flag.String("svg", "", "where to write the chart")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: benchtable [-md BENCHMARKS.md] [-svg chart.svg] raw.txt")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *md, *svg); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func run(raw, md, svg string) error {
	f, err := os.Open(raw)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := parse(f)
	if err != nil {
		return err
	}
	if err := complete(r); err != nil {
		return fmt.Errorf("%s: %w", raw, err)
	}
	if svg != "" {
		if err := os.WriteFile(svg, []byte(chart(r)), 0o644); err != nil {
			return err
		}
	}
	if md == "" {
		for _, s := range sections {
			fmt.Printf("## %s\n\n%s\n", s.name, s.render(r))
		}
		return nil
	}
	doc, err := os.ReadFile(md)
	if err != nil {
		return err
	}
	for _, s := range sections {
		if doc, err = replace(doc, s.name, s.render(r)); err != nil {
			return fmt.Errorf("%s: %w", md, err)
		}
	}
	return os.WriteFile(md, doc, 0o644)
}

// replace puts body between the markers of section name.
func replace(doc []byte, name, body string) ([]byte, error) {
	re := regexp.MustCompile(`(?s)(<!-- benchtable:` + regexp.QuoteMeta(name) + ` -->\n).*?(<!-- /benchtable:` + regexp.QuoteMeta(name) + ` -->)`)
	if !re.Match(doc) {
		return nil, fmt.Errorf("no <!-- benchtable:%s --> ... <!-- /benchtable:%s --> markers", name, name)
	}
	var out bytes.Buffer
	loc := re.FindSubmatchIndex(doc)
	out.Write(doc[:loc[3]])
	out.WriteString("\n" + body + "\n")
	out.Write(doc[loc[4]:])
	return out.Bytes(), nil
}
