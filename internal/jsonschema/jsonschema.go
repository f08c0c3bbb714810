// Package jsonschema validates JSON documents against the part of JSON
// Schema (draft 2020-12) that bindings/scripts.schema.json uses, for the
// tests of every manifest luagen writes. A keyword it does not know is an
// error, never silently ignored, so the schema cannot outgrow the checks.
package jsonschema

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
)

// Schema is a parsed schema.
type Schema struct{ root map[string]any }

// Load reads and parses the schema in path.
func Load(path string) (*Schema, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &Schema{root: root}, nil
}

// Validate returns every violation of doc (JSON text), each with its JSON
// path, or an error when doc is not JSON or the schema uses a keyword
// Validate does not know.
func (s *Schema) Validate(doc []byte) ([]string, error) {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, err
	}
	var errs []string
	if err := s.validate(s.root, v, "$", &errs); err != nil {
		return nil, err
	}
	return errs, nil
}

var known = map[string]bool{
	"$schema": true, "$id": true, "title": true, "description": true, "$defs": true, "$ref": true,
	"type": true, "const": true, "enum": true, "required": true, "properties": true,
	"additionalProperties": true, "items": true, "pattern": true, "minItems": true, "maxItems": true,
	"minimum": true, "oneOf": true,
}

func (s *Schema) validate(schema map[string]any, v any, path string, errs *[]string) error {
	bad := func(format string, args ...any) { *errs = append(*errs, path+": "+fmt.Sprintf(format, args...)) }
	for kw := range schema {
		if !known[kw] {
			return fmt.Errorf("%s: the validator does not know keyword %q", path, kw)
		}
	}
	if ref, ok := schema["$ref"].(string); ok {
		defs, _ := s.root["$defs"].(map[string]any)
		def, ok := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		if !ok {
			return fmt.Errorf("%s: unresolved $ref %s", path, ref)
		}
		if err := s.validate(def, v, path, errs); err != nil {
			return err
		}
	}
	if alts, ok := schema["oneOf"].([]any); ok {
		matched := 0
		for _, alt := range alts {
			var sub []string
			m, _ := alt.(map[string]any)
			if err := s.validate(m, v, path, &sub); err != nil {
				return err
			}
			if len(sub) == 0 {
				matched++
			}
		}
		if matched != 1 {
			bad("matches %d of the oneOf alternatives, want exactly 1", matched)
		}
	}
	if typ, ok := schema["type"].(string); ok {
		var okType bool
		switch typ {
		case "object":
			_, okType = v.(map[string]any)
		case "array":
			_, okType = v.([]any)
		case "string":
			_, okType = v.(string)
		case "boolean":
			_, okType = v.(bool)
		case "number":
			_, okType = v.(float64)
		case "integer":
			f, isNum := v.(float64)
			okType = isNum && f == math.Trunc(f)
		default:
			return fmt.Errorf("%s: unknown type %s", path, typ)
		}
		if !okType {
			bad("want %s, got %T", typ, v)
			return nil
		}
	}
	if c, ok := schema["const"]; ok && fmt.Sprint(c) != fmt.Sprint(v) {
		bad("want %v, got %v", c, v)
	}
	if enum, ok := schema["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			found = found || fmt.Sprint(e) == fmt.Sprint(v)
		}
		if !found {
			bad("%v is not one of %v", v, enum)
		}
	}
	if p, ok := schema["pattern"].(string); ok {
		re, err := regexp.Compile(p)
		if err != nil {
			return fmt.Errorf("%s: pattern %q: %v", path, p, err)
		}
		if str, isStr := v.(string); isStr && !re.MatchString(str) {
			bad("%q does not match %s", str, p)
		}
	}
	if min, ok := schema["minimum"].(float64); ok {
		if f, isNum := v.(float64); isNum && f < min {
			bad("%v is below the minimum %v", f, min)
		}
	}
	if obj, ok := v.(map[string]any); ok {
		props, _ := schema["properties"].(map[string]any)
		req, _ := schema["required"].([]any)
		for _, r := range req {
			if _, ok := obj[r.(string)]; !ok {
				bad("missing %s", r)
			}
		}
		for k, val := range obj {
			sub, known := props[k].(map[string]any)
			if !known {
				if schema["additionalProperties"] == false {
					bad("unknown property %s", k)
				}
				continue
			}
			if err := s.validate(sub, val, path+"."+k, errs); err != nil {
				return err
			}
		}
	}
	if arr, ok := v.([]any); ok {
		if n, ok := schema["minItems"].(float64); ok && float64(len(arr)) < n {
			bad("want at least %v items", n)
		}
		if n, ok := schema["maxItems"].(float64); ok && float64(len(arr)) > n {
			bad("want at most %v items", n)
		}
		if items, ok := schema["items"].(map[string]any); ok {
			for i, e := range arr {
				if err := s.validate(items, e, fmt.Sprintf("%s[%d]", path, i), errs); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
