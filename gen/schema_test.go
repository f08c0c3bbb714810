package gen

import (
	"os"
	"testing"

	"github.com/redlimit/redlimit/internal/jsonschema"
)

// schemaPath is the manifest's JSON Schema: one file, next to the bundle's
// own manifest, for every manifest luagen writes.
const schemaPath = "../bindings/scripts.schema.json"

// checkManifest fails t for every way manifest breaks the schema.
func checkManifest(t *testing.T, name string, manifest []byte) {
	t.Helper()
	schema, err := jsonschema.Load(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	errs, err := schema.Validate(manifest)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, e := range errs {
		t.Errorf("%s: %s", name, e)
	}
}

// Every manifest luagen writes validates against the schema: the golden
// ones (every type, bounds, enums, variadics, flags, errors, with and
// without a Functions library), the bundle's bindings/scripts.json, and
// the manifests of the hostile corpus and the test scripts as Generate
// writes them now.
func TestManifestsMatchSchema(t *testing.T) {
	for _, path := range []string{"testdata/golden/scripts.json.golden", "testdata/golden/functions/scripts.json.golden", "../bindings/scripts.json"} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		checkManifest(t, path, raw)
	}
	out, err := Generate(goldenInputs(t), Options{Package: "golden", Manifest: true, Functions: "lib"})
	if err != nil {
		t.Fatal(err)
	}
	checkManifest(t, "Generate(testdata/scripts)", out.Manifest)
}

// The manifest's wire text says what each sentinel means, in the words of
// the header's sentinel, never one field's meaning for another's: a
// deadline's 0 is no deadline, a clock's 0 the server's clock.
func TestWireSentinels(t *testing.T) {
	for _, tt := range []struct {
		field Field
		arg   bool
		want  string
	}{
		{Field{Name: "now", Type: UnixUs, Sentinels: []Sentinel{{Name: "server_clock"}}}, true,
			"decimal integer string: microseconds since the Unix epoch; 0 means the server's clock (TIME)"},
		{Field{Name: "deadline", Type: UnixUs, Sentinels: []Sentinel{{Name: "none"}}}, true,
			"decimal integer string: microseconds since the Unix epoch; 0 means no deadline"},
		{Field{Name: "retry_after", Type: Millis, Sentinels: []Sentinel{{Name: "never", Value: Bound{Int: -1}}}}, false,
			"integer count of milliseconds; -1 means never"},
		{Field{Name: "at", Type: UnixMs}, false,
			"integer count of milliseconds since the Unix epoch; the zero time is 0, which means what the doc says"},
		{Field{Name: "n", Type: Int, Sentinels: []Sentinel{{Name: "no_limit"}}}, true, "decimal integer string; 0 means no limit"},
	} {
		if got := wire(tt.field, tt.arg); got != tt.want {
			t.Errorf("%s: wire %q, want %q", tt.field.Name, got, tt.want)
		}
	}
}
