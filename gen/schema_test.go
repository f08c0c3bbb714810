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
