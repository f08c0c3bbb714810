package rls

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testBind checks limits as the server does (no Redis is asked).
func testBind(t testing.TB) func(*Rule) error {
	t.Helper()
	ls, err := newLimiters(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), limiterOptions{timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return ls.bind
}

// load builds a configuration from files named as given, in name order.
func load(t testing.TB, files map[string]string, merge bool) (*Config, error) {
	t.Helper()
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var sf []sourceFile
	for _, n := range names {
		sf = append(sf, sourceFile{name: n, data: []byte(files[n])})
	}
	return buildConfig(sf, merge, testBind(t))
}

// TestReferenceRefusals: every configuration of the reference's own
// test/config that its config_test.go expects refused is refused here
// too, with the reference's words after the file and line.
func TestReferenceRefusals(t *testing.T) {
	src := readReferenceFile(t, "test/config/config_test.go")
	// expectConfigPanic(t, func() { ... loadFile("a.yaml") ... }, "a.yaml: message")
	call := regexp.MustCompile(`(?s)expectConfigPanic\(\s*t,\s*func\(\) \{(.*?)\},\s*"((?:[^"\\]|\\.)*)"\)`)
	loadFile := regexp.MustCompile(`loadFile\("([^"]+)"\)`)
	// Where each refusal points: its file's line (0: the whole file).
	lines := map[string]int{
		"empty_domain.yaml": 0, "duplicate_domain.yaml": 1, "empty_key.yaml": 3,
		"duplicate_key.yaml": 6, "merge_domain_key1.yaml": 5, "bad_limit_unit.yaml": 6,
		"replaces_self.yaml": 10, "replaces_empty.yaml": 10, "bad_yaml.yaml": 2,
		"misspelled_key.yaml": 5, "misspelled_key2.yaml": 7, "non_string_key.yaml": 1,
		"non_map_list.yaml": 3, "unlimited_with_unit.yaml": 6,
	}
	found := 0
	for _, m := range call.FindAllStringSubmatch(src, -1) {
		var files []string
		for _, f := range loadFile.FindAllStringSubmatch(m[1], -1) {
			files = append(files, f[1])
		}
		want := strings.ReplaceAll(m[2], `\"`, `"`)
		merge := strings.Contains(m[1], ", true)")
		found++
		t.Run(want, func(t *testing.T) {
			var sf []sourceFile
			for _, f := range files {
				sf = append(sf, sourceFile{name: f, data: []byte(readReferenceFile(t, "test/config/"+f))})
			}
			_, err := buildConfig(sf, merge, testBind(t))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("loading %v: %v, want a ConfigError", files, err)
			}
			file, msg, _ := strings.Cut(want, ": ")
			if ce.File != file || ce.Line != lines[file] {
				t.Errorf("%v: at %s:%d, want %s:%d", err, ce.File, ce.Line, file, lines[file])
			}
			if ce.Msg != msg {
				t.Errorf("%v: want the reference's %q", err, msg)
			}
		})
	}
	if found != len(lines) {
		t.Errorf("found %d refusals in the reference's config_test.go, want %d: the pattern no longer matches it", found, len(lines))
	}
}

// TestReferenceConfigsLoad: the reference's own accepted test/config files
// load here.
func TestReferenceConfigsLoad(t *testing.T) {
	for _, f := range []string{"basic_config.yaml", "wildcard.yaml", "share_threshold.yaml", "shadowmode_config.yaml"} {
		c, err := load(t, map[string]string{f: readReferenceFile(t, "test/config/"+f)}, false)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(c.Warnings) != 0 {
			t.Errorf("%s: warnings %q", f, c.Warnings)
		}
	}
	_, err := load(t, map[string]string{
		"merge_domain_key1.yaml": readReferenceFile(t, "test/config/merge_domain_key1.yaml"),
		"merge_domain_key2.yaml": readReferenceFile(t, "test/config/merge_domain_key2.yaml"),
	}, true)
	if err != nil {
		t.Errorf("merged: %v", err)
	}
}

// refusals are configurations the reference refuses (its config_check_cmd
// says so, below) beyond its test/config files, and this server's
// extension's own.
var refusals = []struct {
	name, yaml, want string
	line             int
	reference        bool // the reference accepts it (only this server's bounds refuse it)
}{
	{"negative requests_per_unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: -1\n", "cannot unmarshal !!int `-1` into uint32", 6, false},
	{"requests_per_unit above uint32", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 4294967296\n", "into uint32", 6, false},
	{"a float requests_per_unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1.5\n", "error checking config", 6, false},
	{"a string requests_per_unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: many\n", "cannot unmarshal !!str `many` into uint32", 6, false},
	{"unit unknown", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: unknown\n      requests_per_unit: 1\n", "invalid rate limit unit 'unknown'", 5, false},
	{"no unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      requests_per_unit: 1\n", "invalid rate limit unit ''", 4, false},
	{"a boolean that is not", "domain: d\ndescriptors:\n  - key: k\n    shadow_mode: maybe\n", "cannot unmarshal !!str `maybe` into bool", 4, false},
	{"share_threshold without a wildcard", "domain: d\ndescriptors:\n  - key: k\n    value: v\n    share_threshold: true\n", "share_threshold can only be used with wildcard values", 5, false},
	{"descriptors not a list", "domain: d\ndescriptors: many\n", "cannot unmarshal !!str `many` into a list", 2, false},
	{"a composite key twice", "domain: d\ndescriptors:\n  - key: a_b\n  - key: a\n    value: b\n", "duplicate descriptor composite key 'd.a_b'", 4, false},
	{"metadata (a later reference's key)", "domain: d\ndescriptors:\n  - key: k\n    metadata: {a: 1}\n", "unknown key 'metadata'", 4, false},
	{"an unknown algorithm", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      algorithm: leaky\n", "unknown algorithm 'leaky'", 7, false},
	{"a burst for a window", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 5\n      burst: 10\n", "Burst must equal Rate", 4, false},
	{"a burst of 0", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 5\n      algorithm: gcra\n      burst: 0\n", "burst 0", 8, false},
	{"the sliding log above its size", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 20000\n      algorithm: sliding_window_log\n", "at most 10000", 4, false},
	{"GCRA faster than a µs", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 2000000\n      algorithm: gcra\n", "one per µs", 4, false},
	{"an unlimited with an algorithm", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unlimited: true\n      algorithm: gcra\n", "takes no algorithm", 6, false},
	{"a unit_multiplier of 0", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: minute\n      requests_per_unit: 5\n      unit_multiplier: 0\n", "unit_multiplier 0", 7, false},
	{"a unit_multiplier past the scripts' period", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: year\n      requests_per_unit: 5\n      unit_multiplier: 4\n", "longer than the scripts take", 7, false},
	{"an unlimited with a unit_multiplier", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unlimited: true\n      unit_multiplier: 5\n", "takes no unit_multiplier", 6, false},
	{"a calendar that is not a zone", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: day\n      requests_per_unit: 5\n      calendar: Mars/Olympus\n", "not a time zone", 7, false},
	{"a calendar of minutes", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: minute\n      requests_per_unit: 5\n      calendar: UTC\n", "takes unit day, week, month or year", 5, false},
	{"a calendar with a unit_multiplier", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: day\n      requests_per_unit: 5\n      unit_multiplier: 2\n      calendar: UTC\n", "takes no unit_multiplier", 7, false},
	{"a calendar with GCRA", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: month\n      requests_per_unit: 5\n      algorithm: gcra\n      calendar: Europe/Berlin\n", "counts in a fixed window, not gcra", 7, false},
	{"an empty calendar", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: day\n      requests_per_unit: 5\n      calendar: \"\"\n", "calendar is empty", 7, false},
	{"an unlimited with a calendar", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unlimited: true\n      calendar: UTC\n", "takes no calendar", 6, false},
	{"above the scripts' range", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 2000000000\n", "Rate must be from 1 to 1e9", 4, true},
}

func TestRefusals(t *testing.T) {
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(t, map[string]string{"c.yaml": c.yaml}, false)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Line != c.line || !strings.Contains(ce.Msg, c.want) {
				t.Fatalf("got %v, want c.yaml:%d: …%s…", err, c.line, c.want)
			}
			// The reference refuses every row but those only this
			// server's bounds refuse, and a row that uses this server's
			// extension (algorithm, burst) for an unknown key.
			accepted, out := referenceAccepts(t, map[string]string{"c.yaml": c.yaml}, false)
			if accepted != c.reference {
				t.Errorf("the reference accepts it: %t, want %t:\n%s", accepted, c.reference, out)
			}
		})
	}
}

// TestReadmeExamples: each configuration example of the reference's README
// loads here and there, and means here what the README says it means
// (each example's behaviour is tested in TestReadmeExampleBehaviour).
func TestReadmeExamples(t *testing.T) {
	ex := readmeExamples(t)
	if len(ex) < 7 {
		t.Fatalf("found %d examples in the reference's README, want at least 7", len(ex))
	}
	for n := 1; n <= len(ex); n++ {
		for i, y := range ex[n] {
			t.Run(fmt.Sprintf("example %d.%d", n, i+1), func(t *testing.T) {
				if _, err := load(t, map[string]string{"e.yaml": y}, false); err != nil {
					t.Errorf("%v\n%s", err, y)
				}
				if ok, out := referenceAccepts(t, map[string]string{"e.yaml": y}, false); !ok {
					t.Errorf("the reference refuses it:\n%s", out)
				}
			})
		}
	}
}

func TestWarnings(t *testing.T) {
	c, err := load(t, map[string]string{"w.yaml": "domain: d\nunit: second\ndescriptors:\n  - key: k\n    requests_per_unit: 5\n"}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"w.yaml:2: 'unit' means nothing in the top level and is ignored", "w.yaml:5: 'requests_per_unit' means nothing in a descriptor and is ignored"}
	if strings.Join(c.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings %q, want %q", c.Warnings, want)
	}
}
