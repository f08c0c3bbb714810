// Package gen is luagen's library: it parses the header of annotated Redis
// Lua scripts, checks the header against the script body, lints the Lua, and
// renders typed Go wrappers over go-redis v9. It is pure: bytes in, file
// contents out. It never touches the filesystem, and its output depends only
// on its input (no timestamps; scripts and names sorted).
//
// # Header
//
// A script starts with --- comment lines (after an optional #! line). Free
// text lines form the summary; tagged lines declare the interface, and order
// is position: the k-th @key is KEYS[k], the k-th @arg is ARGV[k], the k-th
// @return is element k of the reply.
//
//	--- Takes cost tokens from a bucket.
//	--- @key    bucket       hash {tokens, ts}
//	--- @arg    capacity     int[1..1e9]            maximum tokens
//	--- @arg    period       ms[1..]                refill period
//	--- @arg    refill       enum(smooth|interval)  how tokens come back
//	--- @arg    now          unix_us[0..2^52]       caller clock; 0 uses the server's
//	--- @return allowed      bool
//	--- @return retry_after  ms    0 when allowed
//	--- @error  BADARG       an argument is out of range
//
// @flags takes Redis's flag words (no-writes, allow-oom, allow-stale,
// no-cluster, allow-cross-slot-keys).
//
// Types are int (int64), float (float64, sent in plain decimal, never with
// an exponent; return it as a string), bool (1/0), string, the durations
// ms, us and s (time.Duration in Go, an integer in that unit on the wire),
// the instants unix_ms, unix_us and unix_s (time.Time, an integer count of
// that unit since the epoch, rounded down; the zero time is 0 both ways),
// and enum(a|b) (a named Go string type with one constant per word).
// Numbers, durations and instants may carry bounds, int[1..1e9] or
// unix_us[..2^52] (no spaces, either side open, in the wire unit), checked
// in Go before the call and on the reply. A ... before the last @key or
// @arg name makes it variadic (a []string or slice parameter); before the
// last @return name it collects the rest of the reply. A script with a
// single non-variadic @return may reply with the bare value instead of a
// one-element array.
//
// The body must bind each KEYS[i] and ARGV[i], with a literal i, once in
// "local name = <expression>", where name is the i-th declared name; later
// reads of the same index may be anywhere. Every declared key and argument
// must be read. A #! line must list the same flags as @flags.
//
// # Generated Go
//
// For x_y.lua: XYParams (one field per @arg; none without @arg), XYResult
// (one per @return, returned by value), XY(ctx, c redis.Scripter, keys...,
// p) whose doc starts with the summary, (*Batch).XY for pipelines,
// XYScript (a *redis.Script) and XYSource() (the script byte for byte), and
// a named type XY<Name> per enum. Calls run EVALSHA with a fallback to
// EVAL; @flags no-writes scripts run EVALSHA_RO/EVAL_RO, falling back to
// EVALSHA/EVAL on servers without them. A call on a redis.Pipeliner returns
// ErrPipeline and queues nothing. Arguments out of bounds, not one of their
// words, or durations that are not a whole number of the wire unit are
// rejected with *ArgError before anything is sent. Each @error CODE becomes
// a sentinel Err + CamelCase(CODE), splitting at underscores and at a short
// fixed list of words (BADARG gives ErrBadArg, TOO_MANY gives ErrTooMany,
// OVERDRAWN gives ErrOverdrawn); an error reply whose first word (after an
// optional ERR) is a code of the package comes back as *ScriptError, which
// matches its sentinel with errors.Is. A reply of the wrong shape, or a
// value that does not fit its type or bounds, is a *ReplyError.
//
// What every package shares (the calls, Batch, the encoders and decoders,
// the errors, the Functions client) is ordinary Go in gen/runtime, built,
// vetted and tested there on its own; only the per-script code is a
// template. luagen writes the runtime declarations a package reaches (from
// its scripts' code, its exported API, and transitively) into luagen.go,
// and the Functions client into luagen_functions.go, after the few
// declarations that depend on the scripts, so generated code depends only
// on go-redis and holds no code it does not use.
//
// # Redis Functions
//
// Options.Functions (luagen -functions NAME) also writes a Redis Functions
// library of every script, NAME.functions.lua next to the Go files, and
// luagen_functions.go. Decisions, and why:
//
//   - The library is made from the same .lua files: each script's text,
//     unchanged, is the body of a callback whose parameters are named KEYS
//     and ARGV, so it reads its keys and arguments as under EVAL. A #! line
//     becomes a comment (--#!lua ...); its flags are @flags, which go to
//     redis.register_function (no-writes: FCALL_RO). What a callback cannot
//     run is refused with file:line, and only with -functions: ... at chunk
//     level (the callback is no vararg function), more than 198 locals
//     active at once in the chunk (the two parameters count against Lua's
//     200), and redis.replicate_commands, redis.breakpoint and redis.debug,
//     which Functions lack. Every script, library or not, is refused past
//     200 locals in one function, and for ... in a function that does not
//     take it; gopher-lua accepts both, Redis does not.
//   - Function names are NAME_script (a script x.lua in the library redlimit
//     is redlimit_x): Redis has one namespace of functions per server, so
//     the library's name is the prefix that keeps libraries apart. NAME is
//     letters, digits and _, as Redis requires.
//   - The Go file declares FunctionsLibrary, FunctionsCode() (the library
//     byte for byte; the constant is built from the scripts' own constants,
//     so the package holds each script once), WithFunctions(c), which
//     returns a *FunctionsClient: a redis.Scripter and PipelineClient, so the
//     existing calls and Batch.Exec take it unchanged and send FCALL or
//     FCALL_RO instead of EVALSHA. A call whose function the server does not
//     hold did not run, so the library is loaded (FUNCTION LOAD, on every
//     primary) and the call sent again, once, as EVALSHA falls back to EVAL.
//   - A stale library (other code under NAME) is never replaced by a call:
//     FUNCTION LOAD fails with "already exists", the code read back with
//     FUNCTION LIST differs, and the call returns ErrFunctionsStale.
//     LoadFunctions, run when a service deploys, replaces it (FUNCTION LOAD
//     REPLACE, only where the code differs), and CheckFunctions reports
//     ErrFunctionsMissing or ErrFunctionsStale per primary. A stale library
//     that has the same function names runs until then: checking the code
//     on every call would cost a round trip.
//   - Function names are one namespace per server, compared without regard
//     to case: another library can hold NAME_x while NAME is not loaded, and
//     FCALL would run it. A FunctionsClient checks, before a call first
//     reaches a primary and then at most once per FunctionsRecheck (1 s),
//     that the primary's functions of these names belong to NAME (FUNCTION
//     LIST LIBRARYNAME NAME); each primary on its own, so a dead one costs
//     only its own keys (its failed check is remembered for 100 ms);
//     LoadFunctions and CheckFunctions look at every library. Where
//     another holds one, all of them return a *FunctionsConflictError
//     (ErrFunctionsConflict) naming it, and nothing runs or loads. Checking
//     on every call would cost a round trip; between checks a call costs a
//     map lookup and a clock read.
//   - go-redis v9.7.3 sends FUNCTION LOAD from a *redis.ClusterClient to the
//     one node that owns the slot of the word "load", so the generated code
//     loads and checks on each master itself (MasterForKey for a call's,
//     ForEachMaster for LoadFunctions; ForEachShard on a *redis.Ring);
//     replicas get the library from their master.
//   - The manifest gains "functions" {library, file} and, per script,
//     "function" {name, command}; both are optional, so it stays version 2.
//
// Functions need Redis 7.0 or later; miniredis has none.
//
// Generated names follow fixed patterns; a key parameter that would be a Go
// keyword, a predeclared name, an import or a generated helper gets the
// suffix Key, and names that would still collide are refused with
// file:line. The manifest (Options.Manifest) is described by the JSON
// Schema in bindings/scripts.schema.json.
//
// # Lint
//
// Every script is linted in the same walk as the binding check. A finding
// of severity error is one where the script provably breaks on Redis, or
// answers there otherwise than in gopher-lua (and so miniredis and the
// tests): Generate refuses the script. A warning is advice about a script
// that works: it is reported (file:line: warning: ..., Output.Warnings)
// and the code is generated, unless Options.Strict (luagen -strict) makes
// it an error. The checks (Checks lists them):
//
//	global         error    assignment to a global, or a function declared without local: Redis 7 refuses it
//	undefined      error    a read of a global Redis's Lua does not have (a typo, or a local declared later): Redis raises an error, gopher-lua reads nil
//	goto           error    goto or a label: Lua 5.2; Redis runs Lua 5.1 and cannot parse it
//	shebang        error    a #! line: miniredis, gopher-lua and Redis before 7.0 cannot parse it
//	no-writes      error    a write command in a script with @flags no-writes: EVALSHA_RO and replicas refuse it
//	library        error    os, io, debug, package, require, module, load, loadstring, dofile, loadfile: Redis's Lua has none of them
//	multi-assign   error    a, b = b, a: Lua 5.1 evaluates every value first, gopher-lua (miniredis) assigns as it goes
//	key-arg        warning  a redis.call/pcall key argument not taken from KEYS (KEYS[i] or a local bound from it): a cluster cannot route it
//	keys-scan      warning  the KEYS or SCAN command: walks the keyspace, blocks Redis, misses keys on a cluster
//	number-string  warning  tostring, .., %s or a %g without precision on a number expression: Redis prints %.14g, gopher-lua the shortest form
//	number-arg     warning  a computed number passed to redis.call/pcall: Redis formats it, not always as an integer
//	error-code     warning  redis.error_reply('CODE ...') with a CODE the header does not declare with @error
//
// To keep a finding on purpose, end the line the message names with a
// comment naming the check (only a Lua comment counts, never text inside a
// string):
//
//	redis.call('GET', prefix .. id) -- luagen:ignore key-arg
//
// Several checks may be listed, separated by commas or spaces. The #! line
// cannot carry a comment, so "-- luagen:ignore shebang" works on any line.
package gen
