// Package runtime is the code every package luagen generates for go-redis
// shares: the calls (EVALSHA with the EVAL fallback), Batch, the encoders
// and decoders of each header type, the typed errors and, with -functions,
// the Redis Functions client. It is ordinary Go, built, vetted and tested
// here on its own; luagen embeds these files and writes the ones a package
// needs into its luagen.go and luagen_functions.go, under the package's own
// name, after the few declarations that depend on the scripts (the @error
// sentinels, errorCodes, allScripts, the library's name and code).
//
// This file and standin.go are not emitted: standin.go declares what the
// generated part would, for two small scripts, so that the package builds
// and its tests run.
package runtime
