package tier

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"time"
)

// Reflected is a Tier's Typed over bindings luagen generated for another
// client (luagen -client rueidis, valkey): calls maps each script to its
// generated function (bindings.GCRA...), client is what they take, and
// argError reports the package's *ArgError, a call refused before sending
// (that step then goes raw, as the go-redis tier does). It reads a step's
// ARGV into the function's keys and Params by the manifest
// (bindings/scripts.json): the Params fields are in ARGV order, each of its
// header type; and the Result back into the script's reply. A step the
// typed API cannot express is ErrNotTyped.
func Reflected(calls map[string]any, client any, argError func(error) bool) func(ctx context.Context, script string, keys, argv []string) ([]any, error) {
	m := loadManifest()
	return func(ctx context.Context, script string, keys, argv []string) ([]any, error) {
		fn, ok := calls[script]
		spec, ok2 := m[script]
		if !ok || !ok2 {
			return nil, fmt.Errorf("tier: no generated call of %s", script)
		}
		f := reflect.ValueOf(fn)
		ft := f.Type()
		in := []reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(client)}
		rest := keys
		for i := 2; i < ft.NumIn(); i++ {
			switch t := ft.In(i); {
			case t.Kind() == reflect.String:
				if len(rest) == 0 {
					return nil, ErrNotTyped
				}
				in = append(in, reflect.ValueOf(rest[0]))
				rest = rest[1:]
			case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
				in = append(in, reflect.ValueOf(rest))
				rest = nil
			case t.Kind() == reflect.Struct:
				p := reflect.New(t).Elem()
				if !fill(p, spec.Args, argv) {
					return nil, ErrNotTyped
				}
				in = append(in, p)
			default:
				return nil, fmt.Errorf("tier: %s takes a %s", script, t)
			}
		}
		if len(rest) > 0 {
			return nil, ErrNotTyped
		}
		out := f.Call(in)
		if err, _ := out[1].Interface().(error); err != nil {
			if argError(err) {
				return nil, ErrNotTyped
			}
			return nil, err
		}
		return unfill(out[0], spec.Returns), nil
	}
}

type manifestField struct {
	Name     string          `json:"name"`
	Type     string          `json:"type"`
	Unit     string          `json:"unit"`
	Variadic bool            `json:"variadic"`
	Fields   []manifestField `json:"fields"`
}

type manifestScript struct {
	Args    []manifestField `json:"args"`
	Returns []manifestField `json:"returns"`
}

func loadManifest() map[string]manifestScript {
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "bindings", "scripts.json"))
	if err != nil {
		panic(err)
	}
	var m struct {
		Scripts []struct {
			Name string `json:"name"`
			manifestScript
		} `json:"scripts"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		panic(err)
	}
	out := map[string]manifestScript{}
	for _, s := range m.Scripts {
		out[s.Name] = s.manifestScript
	}
	return out
}

var units = map[string]time.Duration{"milliseconds": time.Millisecond, "microseconds": time.Microsecond, "seconds": time.Second}

// fill sets the fields of p (a Params struct) from argv, in order.
func fill(p reflect.Value, fields []manifestField, argv []string) bool {
	i := 0
	for k, f := range fields {
		v := p.Field(k)
		if !f.Variadic {
			if i >= len(argv) || !set(v, f, argv[i]) {
				return false
			}
			i++
			continue
		}
		size := 1
		if f.Type == "record" {
			size = len(f.Fields)
		}
		if (len(argv)-i)%size != 0 {
			return false
		}
		s := reflect.MakeSlice(v.Type(), 0, 0)
		for ; i < len(argv); i += size {
			e := reflect.New(v.Type().Elem()).Elem()
			if f.Type == "record" {
				for j, sub := range f.Fields {
					if !set(e.Field(j), sub, argv[i+j]) {
						return false
					}
				}
			} else if !set(e, f, argv[i]) {
				return false
			}
			s = reflect.Append(s, e)
		}
		v.Set(s)
	}
	return i == len(argv)
}

func set(v reflect.Value, f manifestField, text string) bool {
	switch f.Type {
	case "string", "enum":
		v.SetString(text)
		return true
	case "bool":
		if text != "0" && text != "1" {
			return false
		}
		v.SetBool(text == "1")
		return true
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return false
	}
	switch unit := units[f.Unit]; {
	case f.Type == "int":
		v.SetInt(n)
	case unit != 0 && f.Type[0] == 'u': // an instant
		if n != 0 {
			per := int64(time.Second / unit)
			v.Set(reflect.ValueOf(time.Unix(n/per, n%per*int64(unit))))
		}
	case unit != 0:
		if n > int64(1<<63-1)/int64(unit) || n < -int64(1<<63-1)/int64(unit) {
			return false
		}
		v.SetInt(n * int64(unit))
	default:
		return false
	}
	return true
}

// unfill is a Result as the script's reply.
func unfill(r reflect.Value, fields []manifestField) []any {
	var out []any
	for k, f := range fields {
		v := r.Field(k)
		if !f.Variadic {
			out = append(out, wire(v, f))
			continue
		}
		for i := 0; i < v.Len(); i++ {
			if f.Type == "record" {
				for j, sub := range f.Fields {
					out = append(out, wire(v.Index(i).Field(j), sub))
				}
			} else {
				out = append(out, wire(v.Index(i), f))
			}
		}
	}
	return out
}

func wire(v reflect.Value, f manifestField) any {
	switch f.Type {
	case "string", "enum":
		return v.String()
	case "bool":
		if v.Bool() {
			return int64(1)
		}
		return int64(0)
	case "int":
		return v.Int()
	}
	unit := units[f.Unit]
	if t, ok := v.Interface().(time.Time); ok {
		if t.IsZero() {
			return int64(0)
		}
		per := int64(time.Second / unit)
		return t.Unix()*per + int64(t.Nanosecond())/int64(unit)
	}
	return v.Int() / int64(unit)
}
