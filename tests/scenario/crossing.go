package scenario

// Crossing is one script's part in the cross-script matrix (issue 15.1):
// its first call writes its state on an empty key, and every call, made on
// a key that another script wrote, must be refused (BADSTATE when both keep
// the same Redis type, WRONGTYPE otherwise) and leave the key exactly as it
// was, value and TTL, unless both scripts are of one family and share that
// state on purpose. Every call uses the server's clock and no deadline.
type Crossing struct {
	Script string
	// Family names the scripts that share one state (gcra and multi:
	// GCRA's); "" for a script alone.
	Family string
	Kind   string     // the Redis type of the state: "string" or "zset"
	Calls  [][]string // ARGV; the first admits on an empty key
}

// Crossings lists every script's part, in the order of Scripts.
func Crossings() []Crossing {
	return []Crossing{
		{"concurrency", "", "zset", [][]string{
			{"acquire", "x1", "5", "60000", "0", "0"}, {"renew", "x1", "5", "60000", "0", "0"}, {"release", "x1", "5", "60000", "0", "0"},
			{"acquire", "x2", "1", "60000", "0", "0"}}},
		{"fixed_window", "", "string", [][]string{{"10", "60000", "1", "0", "0"}, {"10", "60000", "0", "0", "0"}, {"1", "60000", "5", "0", "0"}}},
		{"gcra", "gcra", "string", [][]string{{"10", "1", "60000", "0", "all", "1", "0"}, {"10", "1", "60000", "0", "all", "0", "0"},
			{"1", "1", "60000", "0", "all", "5", "0"}, {"10", "1", "60000", "0", "at_most", "3", "0", "0", "0"}}},
		{"leaky_bucket", "", "string", [][]string{{"10", "1", "60000", "1", "0", "0"}, {"10", "1", "60000", "0", "0", "0"}, {"1", "1", "60000", "5", "0", "0"}}},
		{"multi", "gcra", "string", [][]string{{"1", "0", "0", "10", "1", "60000"}, {"0", "0", "0", "10", "1", "60000"}, {"5", "0", "0", "1", "1", "60000"}}},
		{"sliding_window_counter", "", "string", [][]string{{"10", "60000", "1", "0", "0"}, {"10", "60000", "0", "0", "0"}, {"1", "60000", "5", "0", "0"}}},
		{"sliding_window_log", "", "zset", [][]string{{"10", "60000", "1", "0", "0"}, {"10", "60000", "0", "0", "0"}, {"1", "60000", "5", "0", "0"}}},
		{"token_bucket", "", "string", [][]string{
			{"10", "1", "60000", "0", "smooth", "1", "0"}, {"10", "1", "60000", "0", "interval", "1", "0", "1", "0"},
			{"10", "1", "60000", "0", "smooth", "0", "0"}, {"1", "1", "60000", "0", "smooth", "5", "0"}}},
	}
}

// CrossCode is the error a call of reader must answer on a key writer
// wrote, or "" when the two share that state.
func CrossCode(writer, reader Crossing) string {
	switch {
	case writer.Family != "" && writer.Family == reader.Family:
		return ""
	case writer.Kind != reader.Kind:
		return "WRONGTYPE"
	}
	return "BADSTATE"
}
