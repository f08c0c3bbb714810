package rls

import (
	"fmt"
	"sort"
	"strings"
	"time"
	// A calendar's zone loads on any machine, whether or not it has a
	// zoneinfo database (a distroless image has none): about 450 KB.
	_ "time/tzdata"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/redlimit/redlimit/ratelimit"
)

// A Rule is one rate_limit of a configuration, or a limit an Envoy sent
// with its descriptor.
type Rule struct {
	// FullKey is the descriptor's path as the reference names it in its
	// statistics: "domain.key_value.key".
	FullKey         string
	Name            string
	Replaces        []string
	Unit            rlpb.RateLimitResponse_RateLimit_Unit
	Period          time.Duration // the unit times UnitMultiplier
	RequestsPerUnit uint32
	// UnitMultiplier is the rule's unit_multiplier (5 with unit minute:
	// 5 minutes), or an override's; 0 when it names none (one unit).
	UnitMultiplier uint32
	// Calendar is the time zone of a quota by the calendar (a unit of day,
	// week, month or year counted from 0 at each period's start there, a
	// week from Monday; calendar: Europe/Berlin); "" for the reference's
	// epoch-aligned units.
	Calendar string
	// Algorithm is one of Algorithms; Burst is 0 when the rule names none.
	Algorithm      string
	Burst          int64
	Unlimited      bool
	ShadowMode     bool
	QuotaMode      bool
	DetailedMetric bool
	File           string // the file, or the xDS resource's name; "" for a limit an Envoy sent
	Line           int    // 0 where there are no lines (xDS, a limit an Envoy sent)

	loc  *time.Location // Calendar's; nil without one
	lim  *limiter       // set by the limiters that decide for it; nil when unlimited or 0 per unit
	sent bool           // a limit an Envoy sent, bound per request
}

// Algorithms are the names a rate_limit's algorithm may take; the first is
// the default, the reference's own.
var Algorithms = []string{"fixed_window", "gcra", "token_bucket", "sliding_window_counter", "sliding_window_log", "leaky_bucket"}

// unitPeriods are the reference's units (utils.UnitToDivider): a month is
// 30 days, a year 365.
var unitPeriods = map[rlpb.RateLimitResponse_RateLimit_Unit]time.Duration{
	rlpb.RateLimitResponse_RateLimit_SECOND: time.Second,
	rlpb.RateLimitResponse_RateLimit_MINUTE: time.Minute,
	rlpb.RateLimitResponse_RateLimit_HOUR:   time.Hour,
	rlpb.RateLimitResponse_RateLimit_DAY:    24 * time.Hour,
	rlpb.RateLimitResponse_RateLimit_WEEK:   7 * 24 * time.Hour,
	rlpb.RateLimitResponse_RateLimit_MONTH:  30 * 24 * time.Hour,
	rlpb.RateLimitResponse_RateLimit_YEAR:   365 * 24 * time.Hour,
}

// calendarUnits are the units a calendar takes: package ratelimit's
// quotas of n in a time zone.
var calendarUnits = map[rlpb.RateLimitResponse_RateLimit_Unit]func(n int64, loc *time.Location) ratelimit.Limit{
	rlpb.RateLimitResponse_RateLimit_DAY:   ratelimit.Daily,
	rlpb.RateLimitResponse_RateLimit_WEEK:  ratelimit.Weekly,
	rlpb.RateLimitResponse_RateLimit_MONTH: ratelimit.Monthly,
	rlpb.RateLimitResponse_RateLimit_YEAR:  ratelimit.Yearly,
}

// A Config is the rules of every domain, as loaded from a set of files.
// It does not change once loaded; a reload builds a new one.
type Config struct {
	domains map[string]*node
	// Files are the files read, in the order they were loaded.
	Files []string
	// Warnings name what the files hold that means nothing and is ignored
	// (the reference ignores it too).
	Warnings []string
}

// A node is one level of a domain's descriptor tree.
type node struct {
	children map[entry]*node
	// composite holds the reference's names of the children ("key" or
	// "key_value"): it refuses two children with one name, and so must
	// this loader, or a configuration would load here and not there.
	composite map[string]bool
	wildcards []wildcard // values ending in '*', in file order
	rule      *Rule
	// valueToMetric and shareThreshold are the flags of the descriptor
	// this node is; pattern is its value when it shares a threshold.
	valueToMetric  bool
	shareThreshold bool
	pattern        string
}

type entry struct{ key, value string }

type wildcard struct {
	key, value, prefix string
	n                  *node
}

func newNode() *node { return &node{children: map[entry]*node{}, composite: map[string]bool{}} }

// sourceFile is a configuration file's name and contents.
type sourceFile struct {
	name string
	data []byte
}

// buildConfig loads files in order. merge lets several files add to one
// domain (MERGE_DOMAIN_CONFIG). bind checks a rule's limit and prepares
// its decisions; its error refuses the rule.
func buildConfig(files []sourceFile, merge bool, bind func(*Rule) error) (*Config, error) {
	parsed := make([]*yamlFile, 0, len(files))
	for _, sf := range files {
		f, err := parseFile(sf.name, sf.data)
		if err != nil {
			return nil, err
		}
		parsed = append(parsed, f)
	}
	return assemble(parsed, merge, bind)
}

// assemble builds the Config of parsed files, in order, with the
// reference's checks: every source of rules (files, xDS) ends here.
func assemble(files []*yamlFile, merge bool, bind func(*Rule) error) (*Config, error) {
	c := &Config{domains: map[string]*node{}}
	for _, f := range files {
		if f.domain == "" {
			return nil, &ConfigError{f.name, f.domainLine, "config file cannot have empty domain"}
		}
		c.Files = append(c.Files, f.name)
		c.Warnings = append(c.Warnings, f.warnings...)
		root, ok := c.domains[f.domain]
		if ok && !merge {
			return nil, &ConfigError{f.name, f.domainLine, fmt.Sprintf("duplicate domain '%s' in config file", f.domain)}
		}
		if !ok {
			root = newNode()
			c.domains[f.domain] = root
		}
		if err := loadDescriptors(f, root, f.domain+".", f.descriptors, bind); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// loadDescriptors is the reference's loadDescriptors, with its checks.
func loadDescriptors(f *yamlFile, parent *node, parentKey string, ds []yamlDescriptor, bind func(*Rule) error) error {
	for _, d := range ds {
		if d.key == "" {
			return &ConfigError{f.name, d.line, "descriptor has empty key"}
		}
		name := d.key
		if d.value != "" {
			name += "_" + d.value
		}
		fullKey := parentKey + name
		if parent.composite[name] {
			return &ConfigError{f.name, d.line, fmt.Sprintf("duplicate descriptor composite key '%s'", fullKey)}
		}
		n := newNode()
		n.valueToMetric = d.valueToMetric
		if d.rule != nil {
			r, err := newRule(f, d, fullKey)
			if err != nil {
				return err
			}
			if err := bind(r); err != nil {
				return &ConfigError{f.name, r.Line, err.Error()}
			}
			n.rule = r
		}
		wild := strings.HasSuffix(d.value, "*")
		if d.shareThreshold {
			if !wild {
				return &ConfigError{f.name, d.shareThresholdLine, fmt.Sprintf("share_threshold can only be used with wildcard values (ending with '*'), but found key '%s'", name)}
			}
			n.shareThreshold, n.pattern = true, d.value
		}
		if wild {
			parent.wildcards = append(parent.wildcards, wildcard{key: d.key, value: d.value, prefix: strings.TrimSuffix(d.value, "*"), n: n})
		}
		if err := loadDescriptors(f, n, fullKey+".", d.descriptors, bind); err != nil {
			return err
		}
		parent.composite[name] = true
		parent.children[entry{d.key, d.value}] = n
	}
	return nil
}

func newRule(f *yamlFile, d yamlDescriptor, fullKey string) (*Rule, error) {
	y := d.rule
	r := &Rule{
		FullKey: fullKey, Name: y.name, Replaces: y.replaces, RequestsPerUnit: y.requestsPerUnit,
		Unlimited: y.unlimited, ShadowMode: d.shadowMode, QuotaMode: d.quotaMode,
		DetailedMetric: d.detailedMetric, File: f.name, Line: y.line,
		Algorithm: y.algorithm, Burst: y.burst,
	}
	unit, ok := rlpb.RateLimitResponse_RateLimit_Unit_value[strings.ToUpper(y.unit)]
	valid := ok && unit != int32(rlpb.RateLimitResponse_RateLimit_UNKNOWN)
	line := max(y.unitLine, y.line)
	switch {
	case y.unlimited && valid:
		return nil, &ConfigError{f.name, line, "should not specify rate limit unit when unlimited"}
	case !y.unlimited && !valid:
		return nil, &ConfigError{f.name, line, fmt.Sprintf("invalid rate limit unit '%s'", y.unit)}
	}
	r.Unit = rlpb.RateLimitResponse_RateLimit_Unit(unit)
	r.Period = unitPeriods[r.Unit]
	if m := y.multiplier; m != 0 {
		switch {
		case y.unlimited:
			return nil, &ConfigError{f.name, y.multiplierLine, "an unlimited rate_limit takes no unit_multiplier"}
		case uint64(m) > uint64(maxPeriod/r.Period):
			return nil, &ConfigError{f.name, y.multiplierLine, fmt.Sprintf("unit_multiplier %d makes a period of %d %ss, longer than the scripts take (1e11 ms)", m, m, strings.ToLower(r.Unit.String()))}
		}
		r.UnitMultiplier = m
		r.Period *= time.Duration(m)
	}
	if y.calendar != "" {
		loc, err := time.LoadLocation(y.calendar)
		switch {
		case y.unlimited:
			return nil, &ConfigError{f.name, y.calendarLine, "an unlimited rate_limit takes no calendar"}
		case err != nil:
			return nil, &ConfigError{f.name, y.calendarLine, fmt.Sprintf("calendar '%s' is not a time zone this server knows (want an IANA name such as Europe/Berlin, or UTC)", y.calendar)}
		case calendarUnits[r.Unit] == nil:
			return nil, &ConfigError{f.name, line, fmt.Sprintf("a calendar takes unit day, week, month or year, not %s", strings.ToLower(r.Unit.String()))}
		case y.multiplier != 0:
			return nil, &ConfigError{f.name, y.multiplierLine, "a calendar takes no unit_multiplier: its periods are the calendar's"}
		case y.algorithm != "" && y.algorithm != "fixed_window":
			return nil, &ConfigError{f.name, y.algorithmLine, fmt.Sprintf("a calendar counts in a fixed window, not %s", y.algorithm)}
		}
		r.Calendar, r.loc = y.calendar, loc
	}
	for _, name := range y.replaces {
		if name == "" {
			return nil, &ConfigError{f.name, y.replacesLine, "should not have an empty replaces entry"}
		}
		if name == y.name {
			return nil, &ConfigError{f.name, y.replacesLine, "replaces should not contain name of same descriptor"}
		}
	}
	if y.unlimited && (y.algorithm != "" || y.burst != 0) {
		return nil, &ConfigError{f.name, max(y.algorithmLine, y.burstLine), "an unlimited rate_limit takes no algorithm or burst"}
	}
	if y.algorithm != "" && !knownAlgorithm(y.algorithm) {
		return nil, &ConfigError{f.name, y.algorithmLine, fmt.Sprintf("unknown algorithm '%s'; want one of %s", y.algorithm, strings.Join(Algorithms, ", "))}
	}
	if r.Algorithm == "" {
		r.Algorithm = Algorithms[0]
	}
	return r, nil
}

func knownAlgorithm(a string) bool {
	for _, k := range Algorithms {
		if a == k {
			return true
		}
	}
	return false
}

// Dump lists every rule, one a line, sorted: its statistics key, then its
// limit, as the reference's /rlconfig does.
func (c *Config) Dump() string {
	var lines []string
	var walk func(n *node)
	walk = func(n *node) {
		if r := n.rule; r != nil {
			line := r.FullKey + ": unlimited"
			if !r.Unlimited {
				line = fmt.Sprintf("%s: unit=%s requests_per_unit=%d algorithm=%s", r.FullKey, r.Unit, r.RequestsPerUnit, r.Algorithm)
				if r.UnitMultiplier != 0 {
					line += fmt.Sprintf(" unit_multiplier=%d", r.UnitMultiplier)
				}
				if r.Calendar != "" {
					line += " calendar=" + r.Calendar
				}
				if r.Burst != 0 {
					line += fmt.Sprintf(" burst=%d", r.Burst)
				}
			}
			where := r.File
			if r.Line > 0 {
				where += fmt.Sprintf(":%d", r.Line)
			}
			lines = append(lines, line+fmt.Sprintf(", shadow_mode: %t, quota_mode: %t (%s)", r.ShadowMode, r.QuotaMode, where))
		}
		for _, ch := range n.children {
			walk(ch)
		}
	}
	for _, n := range c.domains {
		walk(n)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}
