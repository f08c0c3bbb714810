package rls

import (
	"errors"
	"testing"
)

// FuzzConfig: any bytes either load or are refused with a ConfigError
// naming the file; nothing panics. The seeds are the refusals' files.
func FuzzConfig(f *testing.F) {
	for _, c := range refusals {
		f.Add([]byte(c.yaml))
	}
	f.Add([]byte(serviceConfig))
	f.Add([]byte(diffConfig))
	bind := testBind(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := buildConfig([]sourceFile{{name: "f.yaml", data: data}}, false, bind)
		var ce *ConfigError
		switch {
		case err == nil && c == nil:
			t.Fatal("no configuration and no error")
		case err != nil && (!errors.As(err, &ce) || ce.File != "f.yaml"):
			t.Fatalf("%v: not a ConfigError of f.yaml", err)
		}
	})
}
