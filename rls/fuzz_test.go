package rls

import (
	"errors"
	"testing"

	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
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

// FuzzXDSConfig: any bytes as a RateLimitConfig resource either load or
// are refused (a ConfigError naming the resource when they decode);
// nothing panics. The seeds are TestXDS's resources.
func FuzzXDSConfig(f *testing.F) {
	for _, cs := range append([][]*rlsconf.RateLimitConfig{xdsInitial, xdsUpdate, xdsRestarted}, xdsBadConfigs()...) {
		for _, c := range cs {
			b, err := proto.Marshal(c)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	bind := testBind(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		res := &anypb.Any{TypeUrl: rateLimitConfigType, Value: data}
		c, err := xdsConfig([]*anypb.Any{res}, false, bind)
		pb := &rlsconf.RateLimitConfig{}
		decodes := proto.Unmarshal(data, pb) == nil
		var ce *ConfigError
		switch {
		case err == nil && c == nil:
			t.Fatal("no configuration and no error")
		case err != nil && decodes && (!errors.As(err, &ce) || ce.File != pb.Name):
			t.Fatalf("%v: not a ConfigError of the resource %q", err, pb.Name)
		}
	})
}

func xdsBadConfigs() [][]*rlsconf.RateLimitConfig {
	var cs [][]*rlsconf.RateLimitConfig
	for _, b := range xdsBad {
		cs = append(cs, b.configs)
	}
	return cs
}
