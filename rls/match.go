package rls

import (
	"fmt"
	"strings"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlpb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// A match is the rule a descriptor meets, with the name its statistics go
// under and the values its counter is kept for.
type match struct {
	rule    *Rule
	statKey string
	// values are the descriptor's values, except that an entry matched by
	// a wildcard with share_threshold counts under the wildcard's value.
	values []string
}

// match finds the rule for descriptor d of domain, as the reference's
// GetLimit does: at each level the entry's key and value, then the
// wildcards in file order, then the key alone; a rule applies only at the
// descriptor's last entry. Unlike the reference it compares keys and
// values as they are, never as "key_value" strings, so the key "a_b"
// never meets the entry ("a", "b"). It returns nil when no rule applies
// (the domain is unknown, or nothing matches). A limit Envoy sent with
// the descriptor overrides the configuration (in a known domain).
func (c *Config) match(domain string, d *rlcommon.RateLimitDescriptor) (*match, error) {
	root := c.domains[domain]
	if root == nil {
		return nil, nil
	}
	if o := d.GetLimit(); o != nil {
		return override(domain, d, o)
	}
	var (
		rule          *Rule
		level         = root
		detailed      strings.Builder
		valueToMetric strings.Builder
		shared        map[int]string
	)
	detailed.WriteString(domain)
	valueToMetric.WriteString(domain)
	last := len(d.Entries) - 1
	for i, e := range d.Entries {
		detailed.WriteString("." + e.Key + "_" + e.Value)
		var next *node
		if e.Value != "" {
			next = level.children[entry{e.Key, e.Value}]
		}
		wildValue := "" // the value of the wildcard that matched
		if next == nil {
			for _, w := range level.wildcards {
				if w.key == e.Key && strings.HasPrefix(e.Value, w.prefix) {
					next, wildValue = w.n, w.value
					break
				}
			}
		}
		byValue := next != nil
		if next == nil {
			next = level.children[entry{e.Key, ""}]
		}
		if wildValue != "" && next.shareThreshold {
			if shared == nil {
				shared = map[int]string{}
			}
			shared[i] = next.pattern
		}
		valueToMetric.WriteString(".")
		valueToMetric.WriteString(e.Key)
		if next != nil {
			v := ""
			switch {
			case wildValue != "" && shared[i] != "":
				v = shared[i]
			case wildValue != "" && next.valueToMetric:
				v = e.Value
			case wildValue != "":
				v = wildValue
			case byValue || next.valueToMetric:
				v = e.Value
			}
			if v != "" {
				valueToMetric.WriteString("_" + v)
			}
		}
		if next != nil && next.rule != nil && i == last {
			rule = next.rule
		}
		if next == nil || len(next.children) == 0 {
			break
		}
		level = next
	}
	if rule == nil {
		return nil, nil
	}
	m := &match{rule: rule, statKey: rule.FullKey, values: make([]string, len(d.Entries))}
	for i, e := range d.Entries {
		m.values[i] = e.Value
		if p := shared[i]; p != "" {
			m.values[i] = p
		}
	}
	switch {
	case rule.DetailedMetric && len(shared) > 0:
		var b strings.Builder
		b.WriteString(domain)
		for i, e := range d.Entries {
			b.WriteString("." + e.Key)
			if v := m.values[i]; v != "" {
				b.WriteString("_" + v)
			}
		}
		m.statKey = b.String()
	case rule.DetailedMetric:
		m.statKey = detailed.String()
	default:
		m.statKey = valueToMetric.String()
	}
	return m, nil
}

// maxPeriod is the longest period the scripts take.
const maxPeriod = 1e11 * time.Millisecond

// override is the rule of a limit Envoy sent with a descriptor: a fixed
// window, as in the reference, with neither shadow mode nor a name.
func override(domain string, d *rlcommon.RateLimitDescriptor, o *rlcommon.RateLimitDescriptor_RateLimitOverride) (*match, error) {
	unit := rlpb.RateLimitResponse_RateLimit_Unit(o.GetUnit())
	period, ok := unitPeriods[unit]
	if !ok {
		return nil, fmt.Errorf("the limit override's unit %v is not a unit (want SECOND to YEAR)", o.GetUnit())
	}
	var mult uint32
	if m := o.GetUnitMultiplier(); m != nil {
		if m.GetValue() == 0 {
			return nil, fmt.Errorf("the limit override's unit_multiplier is 0")
		}
		if uint64(m.GetValue()) > uint64(maxPeriod/period) {
			return nil, fmt.Errorf("the limit override's unit_multiplier %d makes a period longer than the scripts take (1e11 ms)", m.GetValue())
		}
		period *= time.Duration(m.GetValue())
		mult = m.GetValue()
	}
	var key strings.Builder
	m := &match{values: make([]string, len(d.Entries))}
	for i, e := range d.Entries {
		if i > 0 {
			key.WriteString(".")
		}
		key.WriteString(e.Key)
		if e.Value != "" {
			key.WriteString("_" + e.Value)
		}
		m.values[i] = e.Value
	}
	m.statKey = domain + "." + key.String()
	m.rule = &Rule{FullKey: m.statKey, Unit: unit, Period: period, RequestsPerUnit: o.GetRequestsPerUnit(), UnitMultiplier: mult, Algorithm: Algorithms[0], sent: true}
	return m, nil
}
