// Command benchtable turns the raw output of make bench (the decision
// benchmark's passes, the memory benchmark and the accuracy test, all in
// one file) into the tables of BENCHMARKS.md and the chart beside it, so a
// rerun regenerates every number:
//
//	go run ./cmd/benchtable -md ../BENCHMARKS.md -svg ../benchmarks.svg results/latest.txt
//
// Each table replaces the text between <!-- benchtable:NAME --> and
// <!-- /benchtable:NAME --> in the Markdown file; the prose around them is
// left alone. Without -md the tables are printed; -sections keys,targets
// prints those alone, from a raw output that need hold only their parts
// (make bench-keys).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// sections are the generated parts of BENCHMARKS.md, by marker name.
// Each has the parts of the raw output it is made of (see complete).
var sections = []section{
	{"env", envSection, nil},
	{"targets", targetsSection, nil}, // whatever the run measured
	{"summary", summarySection, []string{partDecision}},
	{"decision", decisionSection, []string{partDecision}},
	{"keys", keysSection, []string{partDecision, partHTTP}},
	{"memory", memorySection, []string{partMemory}},
	{"anatomy", anatomySection, []string{partAnatomy}},
	{"accuracy", accuracySection, []string{partAccuracy}},
	{"http", httpSection, []string{partHTTP}},
	{"outbound", outboundSection, []string{partOutbound}},
}

type section struct {
	name   string
	render func(*results) string
	parts  []string
}

func main() {
	md := flag.String("md", "", "the Markdown file whose benchtable sections to rewrite")
	svg := flag.String("svg", "", "where to write the chart")
	only := flag.String("sections", "", "print only these sections, comma-separated (not with -md or -svg)")
	flag.Parse()
	if flag.NArg() != 1 || *only != "" && (*md != "" || *svg != "") {
		fmt.Fprintln(os.Stderr, "usage: benchtable [-md BENCHMARKS.md] [-svg chart.svg] raw.txt\n       benchtable -sections NAME,... raw.txt")
		os.Exit(2)
	}
	var err error
	if *only != "" {
		err = printSections(flag.Arg(0), strings.Split(*only, ","))
	} else {
		err = run(flag.Arg(0), *md, *svg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

// read parses raw and checks that it holds every row it announced and
// every one of parts.
func read(raw string, parts []string) (*results, error) {
	f, err := os.Open(raw)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := parse(f)
	if err != nil {
		return nil, err
	}
	if err := complete(r, parts); err != nil {
		return nil, fmt.Errorf("%s: %w", raw, err)
	}
	return r, nil
}

// printSections prints the named sections, from a raw output that need
// hold only the parts they are made of.
func printSections(raw string, names []string) error {
	var parts []string
	var render []func(*results) string
	for _, name := range names {
		i := slices.IndexFunc(sections, func(s section) bool { return s.name == name })
		if i < 0 {
			return fmt.Errorf("no section %q", name)
		}
		parts = append(parts, sections[i].parts...)
		render = append(render, sections[i].render)
	}
	r, err := read(raw, parts)
	if err != nil {
		return err
	}
	for i, name := range names {
		fmt.Printf("## %s\n\n%s\n", name, render[i](r))
	}
	return nil
}

func run(raw, md, svg string) error {
	r, err := read(raw, allParts)
	if err != nil {
		return err
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
