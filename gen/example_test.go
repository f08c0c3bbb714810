package gen_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/redlimit/redlimit/gen"
)

// Generate is pure: script bytes in, file contents out. cmd/luagen reads
// the files and writes what comes back.
func ExampleGenerate() {
	src := []byte(`--- Counts a hit against a quota of limit hits per window.
--- @key    counter  string counter; expires with its window
--- @arg    limit    int[1..1e9]  hits allowed per window
--- @arg    window   s[1..]       window length
--- @return allowed  bool
--- @return used     int          hits counted in this window
--- @error  BADARG   limit or window is out of range
local counter = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local used = redis.call('INCR', counter)
if used == 1 then
  redis.call('EXPIRE', counter, ARGV[2])
end
return {used <= limit and 1 or 0, used}
`)
	out, err := gen.Generate([]gen.Input{{Path: "scripts/quota.lua", Src: src}}, gen.Options{Package: "limits", Manifest: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range out.Files {
		fmt.Println(f.Name)
	}
	fmt.Println(len(out.Manifest) > 0)
	// Output:
	// luagen.go
	// quota.lua.go
	// true
}

// A script whose header and body disagree is refused with file:line
// messages, and nothing is generated.
func ExampleDiagnostics() {
	src := []byte(`--- Reads a counter.
--- @key    counter  string counter
--- @arg    limit    int
--- @return count    int
local counter = KEYS[1]
local max = ARGV[1]
return redis.call('GET', counter)
`)
	_, err := gen.Generate([]gen.Input{{Path: "scripts/count.lua", Src: src}}, gen.Options{Package: "limits"})
	var diags gen.Diagnostics
	if errors.As(err, &diags) {
		for _, d := range diags {
			fmt.Println(d)
		}
	}
	// Output:
	// scripts/count.lua:6: ARGV[1] is bound to local "max", but @arg 1 is "limit"
}
