package rls

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The configuration format is envoyproxy/ratelimit's (its README's "The
// configuration format"), read key by key so that every refusal names the
// file and line. The reference decodes with gopkg.in/yaml.v2, which this
// reader follows where the two differ (YAML 1.1 booleans, numbers read as
// strings). Its messages follow the reference's wording after "file:line:".

// validKeys are the map keys the reference accepts anywhere in a file
// (it checks them as one flat set), plus this server's two.
var validKeys = map[string]bool{
	"domain": true, "key": true, "value": true, "descriptors": true,
	"rate_limit": true, "unit": true, "requests_per_unit": true,
	"unlimited": true, "shadow_mode": true, "quota_mode": true, "name": true,
	"replaces": true, "detailed_metric": true, "value_to_metric": true,
	"share_threshold": true,
	"algorithm":       true, "burst": true, "unit_multiplier": true, "calendar": true, // this server's extensions
}

// A ConfigError is a configuration refused: the file, the line (0 when it
// is about the whole file) and what is wrong.
type ConfigError struct {
	File string
	Line int
	Msg  string
}

func (e *ConfigError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// yamlRule is a rate_limit block.
type yamlRule struct {
	line            int
	requestsPerUnit uint32
	unit            string
	unitLine        int
	unlimited       bool
	name            string
	replaces        []string
	replacesLine    int
	algorithm       string
	algorithmLine   int
	burst           int64
	burstLine       int
	multiplier      uint32 // unit_multiplier; 0 when absent
	multiplierLine  int
	calendar        string // a time zone's name; "" when absent
	calendarLine    int
}

// yamlDescriptor is one entry of a descriptors list.
type yamlDescriptor struct {
	line                                                 int
	key, value                                           string
	rule                                                 *yamlRule
	descriptors                                          []yamlDescriptor
	shadowMode, quotaMode, detailedMetric, valueToMetric bool
	shareThreshold                                       bool
	shareThresholdLine                                   int
}

type yamlFile struct {
	keyLine     int // the line of the key whose value is being read
	name        string
	domain      string
	domainLine  int
	descriptors []yamlDescriptor
	warnings    []string // keys the reference accepts where they mean nothing
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// parseFile reads one configuration file.
func parseFile(name string, data []byte) (*yamlFile, error) {
	f := &yamlFile{name: name}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := err.Error()
		line := 0
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
		return nil, &ConfigError{name, line, "error loading config file: " + msg}
	}
	if len(doc.Content) == 0 {
		return nil, &ConfigError{name, 0, "config file cannot have empty domain"}
	}
	root := resolve(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		if root.Tag == "!!null" {
			return nil, &ConfigError{name, 0, "config file cannot have empty domain"}
		}
		return nil, f.errf(root, "error loading config file: cannot unmarshal %s into a map", describe(root))
	}
	if err := f.checkKeys(root); err != nil {
		return nil, err
	}
	err := f.fields(root, "the top level", map[string]func(*yaml.Node) error{
		"domain": func(n *yaml.Node) (err error) {
			f.domainLine = n.Line
			f.domain, err = f.str(n)
			return err
		},
		"descriptors": func(n *yaml.Node) (err error) {
			f.descriptors, err = f.descriptorList(n)
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// checkKeys is the reference's validateYamlKeys: every key anywhere must
// be a known string, every list a list of maps, every leaf a string, an
// integer, a boolean or null.
func (f *yamlFile) checkKeys(m *yaml.Node) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := resolve(m.Content[i]), resolve(m.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			return f.errf(k, "config error, key is not of type string: %s", k.Value)
		}
		if !validKeys[k.Value] {
			return f.errf(k, "config error, unknown key '%s'", k.Value)
		}
		switch v.Kind {
		case yaml.SequenceNode:
			for _, e := range v.Content {
				e = resolve(e)
				if e.Kind != yaml.MappingNode {
					return f.errf(e, "config error, yaml file contains list of type other than map: %s", e.Value)
				}
				if err := f.checkKeys(e); err != nil {
					return err
				}
			}
		case yaml.MappingNode:
			if err := f.checkKeys(v); err != nil {
				return err
			}
		case yaml.ScalarNode:
			if v.Tag == "!!float" {
				return f.errf(v, "error checking config (%s: %s is not an integer)", k.Value, v.Value)
			}
		}
	}
	return nil
}

// fields calls each handler with its key's value and notes the keys that
// are valid elsewhere but mean nothing here (the reference ignores them).
func (f *yamlFile) fields(m *yaml.Node, where string, handlers map[string]func(*yaml.Node) error) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := resolve(m.Content[i]), resolve(m.Content[i+1])
		h, ok := handlers[k.Value]
		if !ok {
			f.warnings = append(f.warnings, fmt.Sprintf("%s:%d: '%s' means nothing in %s and is ignored", f.name, k.Line, k.Value, where))
			continue
		}
		f.keyLine = k.Line
		if err := h(v); err != nil {
			return err
		}
	}
	return nil
}

func (f *yamlFile) descriptorList(n *yaml.Node) ([]yamlDescriptor, error) {
	if n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, f.errf(n, "error loading config file: cannot unmarshal %s into a list of descriptors", describe(n))
	}
	var ds []yamlDescriptor
	for _, e := range n.Content {
		d, err := f.descriptor(resolve(e))
		if err != nil {
			return nil, err
		}
		ds = append(ds, d)
	}
	return ds, nil
}

func (f *yamlFile) descriptor(m *yaml.Node) (yamlDescriptor, error) {
	d := yamlDescriptor{line: m.Line}
	flag := func(p *bool) func(*yaml.Node) error {
		return func(n *yaml.Node) (err error) { *p, err = f.boolean(n); return err }
	}
	err := f.fields(m, "a descriptor", map[string]func(*yaml.Node) error{
		"key":   func(n *yaml.Node) (err error) { d.key, err = f.str(n); return err },
		"value": func(n *yaml.Node) (err error) { d.value, err = f.str(n); return err },
		"rate_limit": func(n *yaml.Node) (err error) {
			d.rule, err = f.rule(n)
			return err
		},
		"descriptors": func(n *yaml.Node) (err error) {
			d.descriptors, err = f.descriptorList(n)
			return err
		},
		"shadow_mode":     flag(&d.shadowMode),
		"quota_mode":      flag(&d.quotaMode),
		"detailed_metric": flag(&d.detailedMetric),
		"value_to_metric": flag(&d.valueToMetric),
		"share_threshold": func(n *yaml.Node) (err error) {
			d.shareThresholdLine = n.Line
			d.shareThreshold, err = f.boolean(n)
			return err
		},
	})
	return d, err
}

func (f *yamlFile) rule(m *yaml.Node) (*yamlRule, error) {
	if m.Tag == "!!null" {
		return nil, nil // as yaml.v2 leaves a nil pointer
	}
	if m.Kind != yaml.MappingNode {
		return nil, f.errf(m, "error loading config file: cannot unmarshal %s into a rate_limit", describe(m))
	}
	r := &yamlRule{line: f.keyLine}
	err := f.fields(m, "a rate_limit", map[string]func(*yaml.Node) error{
		"requests_per_unit": func(n *yaml.Node) error {
			v, err := f.uint(n, 32)
			r.requestsPerUnit = uint32(v)
			return err
		},
		"unit":      func(n *yaml.Node) (err error) { r.unitLine = n.Line; r.unit, err = f.str(n); return err },
		"unlimited": func(n *yaml.Node) (err error) { r.unlimited, err = f.boolean(n); return err },
		"name":      func(n *yaml.Node) (err error) { r.name, err = f.str(n); return err },
		"replaces": func(n *yaml.Node) error {
			r.replacesLine = n.Line
			if n.Tag == "!!null" {
				return nil
			}
			if n.Kind != yaml.SequenceNode {
				return f.errf(n, "error loading config file: cannot unmarshal %s into a list of replaces", describe(n))
			}
			for _, e := range n.Content {
				e = resolve(e)
				var name string
				err := f.fields(e, "a replaces entry", map[string]func(*yaml.Node) error{
					"name": func(n *yaml.Node) (err error) { name, err = f.str(n); return err },
				})
				if err != nil {
					return err
				}
				r.replaces = append(r.replaces, name)
			}
			return nil
		},
		"algorithm": func(n *yaml.Node) (err error) {
			r.algorithmLine = n.Line
			r.algorithm, err = f.str(n)
			return err
		},
		"calendar": func(n *yaml.Node) (err error) {
			r.calendarLine = n.Line
			r.calendar, err = f.str(n)
			if err == nil && r.calendar == "" {
				err = f.errf(n, "calendar is empty: name a time zone (UTC, Europe/Berlin) or leave it out")
			}
			return err
		},
		"unit_multiplier": func(n *yaml.Node) error {
			r.multiplierLine = n.Line
			v, err := f.uint(n, 32)
			if err == nil && v == 0 {
				err = f.errf(n, "unit_multiplier 0: a multiplier must be at least 1 (leave it out for one unit)")
			}
			r.multiplier = uint32(v)
			return err
		},
		"burst": func(n *yaml.Node) error {
			r.burstLine = n.Line
			v, err := f.uint(n, 63)
			if err == nil && v == 0 {
				err = f.errf(n, "burst 0: a burst must be at least 1 (leave it out for requests_per_unit)")
			}
			r.burst = int64(v)
			return err
		},
	})
	return r, err
}

// str reads a scalar as yaml.v2 reads it into a string: any scalar's text.
func (f *yamlFile) str(n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", f.errf(n, "error loading config file: cannot unmarshal %s into string", describe(n))
	}
	if n.Tag == "!!null" {
		return "", nil
	}
	return n.Value, nil
}

// boolean reads a YAML 1.1 boolean, as yaml.v2 does.
func (f *yamlFile) boolean(n *yaml.Node) (bool, error) {
	if n.Kind == yaml.ScalarNode {
		switch n.Value {
		case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
			return true, nil
		case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
			return false, nil
		}
		if n.Tag == "!!null" {
			return false, nil
		}
	}
	return false, f.errf(n, "error loading config file: cannot unmarshal %s into bool", describe(n))
}

// uint reads an unsigned integer of at most bits bits.
func (f *yamlFile) uint(n *yaml.Node, bits int) (uint64, error) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return 0, nil
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		if v, err := strconv.ParseUint(strings.ReplaceAll(n.Value, "_", ""), 0, bits); err == nil {
			return v, nil
		}
	}
	return 0, f.errf(n, "error loading config file: cannot unmarshal %s into uint%d", describe(n), bits)
}

func (f *yamlFile) errf(n *yaml.Node, format string, args ...any) error {
	return &ConfigError{f.name, n.Line, fmt.Sprintf(format, args...)}
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// describe names a node as yaml.v2's errors do: "!!str `abc`", "!!seq".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return fmt.Sprintf("%s `%s`", n.Tag, n.Value)
	case yaml.SequenceNode:
		return "!!seq"
	case yaml.MappingNode:
		return "!!map"
	}
	return "a document"
}
