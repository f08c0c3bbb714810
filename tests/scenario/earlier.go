package scenario

import "fmt"

// An Earlier is a state that an earlier version of a script wrote (the
// git history of lua/): a key of 10 a minute after one request. Every
// script of this version must refuse it, BADSTATE where it keeps the same
// Redis type and WRONGTYPE where not, and leave it exactly as it was,
// value and TTL: upgraded keys are refused until they expire, never
// rewritten (docs/scripts.md). multi.lua wrote gcra.lua's states;
// gcra_at_most.lua and concurrency.lua wrote no other layout than today's.
type Earlier struct {
	Name string // the script and the layout
	Kind string // the Redis type: "string", "hash" or "zset"
	// Commands write the state at key as that version did at the server
	// clock us (µs since the epoch), TTL included.
	Commands func(key string, us int64) [][]string
}

// Earliers lists the layouts of every earlier version.
func Earliers() []Earlier {
	const (
		window   = 60000000        // µs
		interval = window / 10     // µs per request at 10 a minute
		ttl      = interval / 1000 // ms until one request has come back
	)
	d := func(n int64) string { return fmt.Sprint(n) }
	hash := func(key string, ttl int64, fields ...string) [][]string {
		return [][]string{append([]string{"HSET", key}, fields...), {"PEXPIRE", key, d(ttl)}}
	}
	set := func(key, v string, ttl int64) [][]string { return [][]string{{"SET", key, v, "PX", d(ttl)}} }
	windowLeft := func(us int64) int64 { return (window - us%window + 999) / 1000 }
	return []Earlier{
		// Until the states were one string (f4e8b2b): hashes.
		{"token_bucket hash {tokens, ts}", "hash", func(k string, us int64) [][]string {
			return hash(k, ttl, "tokens", "9", "ts", d(us))
		}},
		{"fixed_window hash {n, w}", "hash", func(k string, us int64) [][]string {
			return hash(k, windowLeft(us), "n", "1", "w", d(us/window))
		}},
		{"fixed_window hash {n, t}", "hash", func(k string, us int64) [][]string {
			return hash(k, windowLeft(us), "n", "1", "t", d(us))
		}},
		{"leaky_bucket hash {level, ts}", "hash", func(k string, us int64) [][]string {
			return hash(k, ttl, "level", d(interval), "ts", d(us))
		}},
		{"leaky_bucket hash {level, ts, unit}", "hash", func(k string, us int64) [][]string {
			return hash(k, ttl, "level", d(interval), "ts", d(us), "unit", d(interval))
		}},
		{"sliding_window_counter hash {w, cur, prev}", "hash", func(k string, us int64) [][]string {
			return hash(k, 2*window/1000, "w", d(us/window), "cur", "1", "prev", "0")
		}},
		{"sliding_window_counter hash {s, t, cur, prev}", "hash", func(k string, us int64) [][]string {
			return hash(k, 2*window/1000, "s", d(us-us%window), "t", d(us), "cur", "1", "prev", "0")
		}},
		// GCRA's strings before the tags (1a37816).
		{"gcra '<tat>'", "string", func(k string, us int64) [][]string {
			return set(k, d(us+interval), ttl)
		}},
		{"gcra '<tat>/<interval>'", "string", func(k string, us int64) [][]string {
			return set(k, fmt.Sprintf("%d/%d", us+interval, interval), ttl)
		}},
		{"gcra, multi '<tat>/<interval>/<at>'", "string", func(k string, us int64) [][]string {
			return set(k, fmt.Sprintf("%d/%d/%d", us+interval, interval, us), ttl)
		}},
		// The untagged strings of digits (f4e8b2b to 1a37816).
		{"gcra, multi '<tat><interval>/<lead>'", "string", func(k string, us int64) [][]string {
			return set(k, fmt.Sprintf("%016d%d/%d", us+interval, interval, interval), ttl)
		}},
		{"token_bucket '<ts><tokens>'", "string", func(k string, us int64) [][]string {
			return set(k, fmt.Sprintf("%016d%d", us, 9), ttl)
		}},
		{"fixed_window '<t><n>'", "string", func(k string, us int64) [][]string {
			return set(k, fmt.Sprintf("%013d%d", us/1000, 1), windowLeft(us))
		}},
		{"leaky_bucket '<ts><unit>/<level>'", "string", func(k string, us int64) [][]string {
			return set(k, fmt.Sprintf("%016d%d/%d", us, interval, interval), ttl)
		}},
		{"sliding_window_counter '<s><d>/<cur>/<prev>'", "string", func(k string, us int64) [][]string {
			start := us - us%window
			return set(k, fmt.Sprintf("%013d%d/%d/%d", start/1000, (us-start)/1000, 1, 0), 2*window/1000)
		}},
		// The log's members before they took a ':' (1a37816): they look
		// like lease ids.
		{"sliding_window_log members '<us>-<n>'", "zset", func(k string, us int64) [][]string {
			return [][]string{
				{"ZADD", k, d(us - 2000), fmt.Sprintf("%d-1", us-2000), d(us - 1000), fmt.Sprintf("%d-1", us-1000), d(us), fmt.Sprintf("%d-1", us)},
				{"PEXPIRE", k, d(window / 1000)},
			}
		}},
	}
}

// EarlierCode is the error a call of reader must answer on an earlier
// layout: no script of this version shares one.
func EarlierCode(e Earlier, reader Crossing) string {
	if e.Kind == reader.Kind {
		return "BADSTATE"
	}
	return "WRONGTYPE"
}
