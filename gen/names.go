package gen

import "strings"

// Initialisms kept upper case in Go names, as golint wants.
var initialisms = map[string]bool{
	"id": true, "ttl": true, "url": true, "uri": true, "http": true, "json": true,
	"api": true, "ip": true, "uuid": true, "sha": true, "lua": true, "db": true,
	"cpu": true, "tcp": true, "udp": true, "utc": true, "gcra": true,
}

// exported turns retry_after into RetryAfter and user_id into UserID.
func exported(name string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(name, func(c rune) bool { return c == '_' || c == '-' }) {
		if initialisms[w] {
			b.WriteString(strings.ToUpper(w))
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}

// unexported turns retry_after into retryAfter and id into id.
func unexported(name string) string {
	e := exported(name)
	first, _, _ := strings.Cut(strings.ReplaceAll(name, "-", "_"), "_")
	if initialisms[first] {
		return first + e[len(first):]
	}
	return strings.ToLower(e[:1]) + e[1:]
}

// Words an error code is split at when it has no underscores, so BADARG
// gives ErrBadArg. The list is short and fixed so the rule stays
// predictable: a code that cannot be spelled entirely from these words is
// title-cased as one word (OVERDRAWN gives ErrOverdrawn).
var codeWords = []string{
	"ARGS", "ARG", "BAD", "BIG", "BUSY", "CLOCK", "CONFIG", "COST", "DENIED",
	"EMPTY", "EXISTS", "FOUND", "FULL", "INVALID", "KEYS", "KEY", "LIMIT",
	"LIMITED", "MANY", "MISSING", "NO", "NOT", "OUT", "OF", "OVER", "PERM",
	"RANGE", "RATE", "READ", "ONLY", "SCRIPT", "SMALL", "STATE", "TOO",
	"TYPE", "UNKNOWN", "VALUE", "WRONG",
}

// errName names the sentinel of an @error code: Err, then the code in
// CamelCase, split at underscores and, within a part, at codeWords.
func errName(code string) string {
	var b strings.Builder
	b.WriteString("Err")
	for _, part := range strings.Split(code, "_") {
		if part == "" {
			continue
		}
		words := splitWords(part)
		if words == nil {
			words = []string{part}
		}
		for _, w := range words {
			b.WriteString(w[:1] + strings.ToLower(w[1:]))
		}
	}
	return b.String()
}

// splitWords spells s from codeWords with as few words as possible, or
// returns nil. Ties go to the longer first word, so the result is stable.
func splitWords(s string) []string {
	best := make([][]string, len(s)+1)
	best[len(s)] = []string{}
	for i := len(s) - 1; i >= 0; i-- {
		for _, w := range codeWords {
			if !strings.HasPrefix(s[i:], w) || best[i+len(w)] == nil {
				continue
			}
			cand := append([]string{w}, best[i+len(w)]...)
			if best[i] == nil || len(cand) < len(best[i]) ||
				(len(cand) == len(best[i]) && len(w) > len(best[i][0])) {
				best[i] = cand
			}
		}
	}
	return best[0]
}
