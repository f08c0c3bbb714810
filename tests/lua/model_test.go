package luatest

import (
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// The models below restate each script from its header in Go, with exact
// integer arithmetic (math/big wherever a product could pass 2^63), and act
// on the same in-memory Redis the scripts run against. A model returns what
// the script must reply and leaves the state the script must leave, TTL
// included, so any difference between the two — a rounding in Lua's
// doubles, a lost write, a bad bound — shows up as a diff.

// maxSkew is how far a caller clock may be from the server's TIME, in µs.
const maxSkew = 60_000_000

// maxTime bounds every clock the scripts take and every time they store.
const maxTime = 1 << 52

// model is one script restated: it reads and writes r as the script would
// and returns its reply or its error reply.
type model func(r *Redis, keys, argv []string) ([]int64, error)

var decimalRE = regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`)

// decimal reads s as the scripts read integers: "0" or an optional '-' and
// digits without a leading zero, from lo to hi.
func decimal(s string, lo, hi int64) (int64, bool) {
	if !decimalRE.MatchString(s) {
		return 0, false
	}
	v, ok := new(big.Int).SetString(s, 10)
	if !ok || !v.IsInt64() || v.Int64() < lo || v.Int64() > hi {
		return 0, false
	}
	return v.Int64(), true
}

// args reads ARGV the way the prologue's int does and keeps the first error.
type args struct {
	argv []string
	bad  string
}

func (a *args) int(i int, name string, lo, hi int64) int64 {
	if i < len(a.argv) {
		if v, ok := decimal(a.argv[i], lo, hi); ok {
			return v
		}
	}
	if a.bad == "" {
		got := "nothing"
		if i < len(a.argv) {
			s := a.argv[i]
			if len(s) > 40 {
				s = s[:40]
			}
			b := []byte(s)
			for j, c := range b {
				if c < ' ' || c > '~' {
					b[j] = '?'
				}
			}
			got = "'" + string(b) + "'"
		}
		a.bad = fmt.Sprintf("BADARG %s must be an integer from %d to %d, got %s", name, lo, hi, got)
	}
	return 0
}

func (a *args) str(i int) (string, bool) {
	if i < len(a.argv) {
		return a.argv[i], true
	}
	return "", false
}

func (a *args) fail(msg string) {
	if a.bad == "" {
		a.bad = msg
	}
}

// finish checks the key and the counts, as each script does after its
// arguments, and returns the error reply, if any.
func (a *args) finish(keys []string, keyName string, nargs int) error {
	if len(keys) == 0 {
		a.fail("BADARG " + keyName + " key is missing")
	}
	if len(keys) != 1 || len(a.argv) != nargs {
		a.fail(fmt.Sprintf("BADARG takes 1 key(s) and %d arguments, got %d and %d", nargs, len(keys), len(a.argv)))
	}
	return a.err()
}

func (a *args) err() error {
	if a.bad != "" {
		return ErrorReply(a.bad)
	}
	return nil
}

// clock is the prologue's clock: the instant to judge at, and whether it is
// the caller's; a caller clock too far from TIME is BADARG, and then a
// deadline that TIME has reached is EXPIRED.
func clock(r *Redis, now, deadline int64) (int64, bool, error) {
	if now != 0 && (now < r.now-maxSkew || now > r.now+maxSkew) {
		return 0, false, ErrorReply(fmt.Sprintf("BADARG now must be 0 (the server's clock) or within %d µs of the server's TIME, got '%d'", maxSkew, now))
	}
	if deadline > 0 && r.now >= deadline {
		return 0, false, ErrorReply(fmt.Sprintf("EXPIRED the server's TIME %d is past the call's deadline %d; nothing changed", r.now, deadline))
	}
	if now == 0 {
		return r.now, false, nil
	}
	return now, true, nil
}

// latest is the latest instant a write can date state at: its clock, no
// more than maxSkew past TIME.
func latest(r *Redis) int64 { return r.now + maxSkew }

const (
	wrongType = "WRONGTYPE the key holds another type of value; it is left untouched"
)

// stringState reads a string state that must match re in full, and returns
// re's submatches as integers; nil for a missing key, WRONGTYPE for a key of
// another type, and badState when the string does not match or a number
// does not fit an int64 (every bound the scripts check is far below that).
func stringState(r *Redis, key string, re *regexp.Regexp, badState string) ([]int64, error) {
	v := r.get(key)
	if v == nil {
		return nil, nil
	}
	if v.kind != "string" {
		return nil, ErrorReply(wrongType)
	}
	m := re.FindStringSubmatch(v.str)
	if m == nil {
		return nil, ErrorReply(badState)
	}
	out := make([]int64, len(m)-1)
	for i, f := range m[1:] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, ErrorReply(badState)
		}
		out[i] = n
	}
	return out, nil
}

// writeString stores a string state and a TTL as SET ... PX would.
func writeString(r *Redis, key string, ttlUs int64, str string) {
	r.data[key] = &value{kind: "string", str: str, expireAt: r.now + 1000*max(1, ceilDiv(ttlUs, 1000))}
}

// floorDiv is floor(a / b) for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// mulDiv is floor(a*b/c) and a*b mod c, exactly; ok is false when the
// quotient does not fit an int64.
func mulDiv(a, b, c int64) (q, rem int64, ok bool) {
	x := new(big.Int).Mul(big.NewInt(a), big.NewInt(b))
	qq, rr := new(big.Int).QuoRem(x, big.NewInt(c), new(big.Int))
	return qq.Int64(), rr.Int64(), qq.IsInt64()
}

// mulDivCeil is ceil(a*b/c), or a number above 2^62 when it does not fit.
func mulDivCeil(a, b, c int64) int64 {
	q, rem, ok := mulDiv(a, b, c)
	if !ok {
		return 1 << 62
	}
	if rem > 0 {
		q++
	}
	return q
}

func ms(us int64) int64 { return ceilDiv(us, 1000) }

// mulSat is a*b for a, b >= 0, or 2^62 when that would overflow: bounds
// checks stay right where the product is far too large.
func mulSat(a, b int64) int64 {
	if a != 0 && b > (1<<62)/a {
		return 1 << 62
	}
	return a * b
}

// ttl is a write's TTL in µs: to the instant its state is spent by the
// server's clock, and maxSkew more for a caller's clock.
func ttl(r *Redis, spentAt int64, caller bool) int64 {
	if caller {
		return spentAt - r.now + maxSkew
	}
	return spentAt - r.now
}

func badState(what string) string {
	return "BADSTATE the key is not " + what + "; it is left untouched"
}

var models = map[string]model{}

// sameReply reports whether two error replies are the same reply.
func sameReply(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return strings.TrimSpace(a.Error()) == strings.TrimSpace(b.Error())
}
