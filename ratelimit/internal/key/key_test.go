package key

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// hashTag is the part of a key Redis Cluster hashes (keyHashSlot in Redis's
// cluster.c): between the first '{' and the first '}' after it, if that is
// not empty; else the whole key.
func hashTag(key string) string {
	s := strings.IndexByte(key, '{')
	if s < 0 {
		return key
	}
	e := strings.IndexByte(key[s+1:], '}')
	if e <= 0 {
		return key
	}
	return key[s+1 : s+1+e]
}

// slot is Redis Cluster's slot of a key: CRC16 (XMODEM) of its tag, mod 16384.
func slot(key string) int {
	var crc uint16
	for _, c := range []byte(hashTag(key)) {
		crc ^= uint16(c) << 8
		for i := 0; i < 8; i++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

// unescapeTag inverts escapeTag's percent-encoding; ok is false for a tag
// escapeTag cannot have produced.
func unescapeTag(tag string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(tag); i++ {
		switch {
		case tag[i] == '{' || tag[i] == '}':
			return "", false
		case tag[i] != '%':
			b.WriteByte(tag[i])
		case strings.HasPrefix(tag[i:], "%25"):
			b.WriteByte('%')
			i += 2
		case strings.HasPrefix(tag[i:], "%7B"):
			b.WriteByte('{')
			i += 2
		case strings.HasPrefix(tag[i:], "%7D"):
			b.WriteByte('}')
			i += 2
		default:
			return "", false
		}
	}
	return b.String(), true
}

// checkKey asserts what RedisKey promises for one prefix and key, and
// returns the key read back from the Redis key.
func checkKey(t *testing.T, prefix, key string) {
	t.Helper()
	rk := Redis(prefix, key)
	if !strings.HasPrefix(rk, prefix+"{") || !strings.HasSuffix(rk, "}") {
		t.Fatalf("Redis(%q, %q) = %q", prefix, key, rk)
	}
	tag := rk[len(prefix)+1 : len(rk)-1]
	if got := hashTag(rk); got != tag {
		t.Fatalf("Redis(%q, %q) = %q: Redis hashes %q, not the escaped key %q", prefix, key, rk, got, tag)
	}
	if strings.HasPrefix(tag, "%#") {
		sum := sha256.Sum256([]byte(key))
		if tag != "%#"+hex.EncodeToString(sum[:]) || len(key) <= MaxTagLen/3 {
			t.Fatalf("Redis(%q, %q): hashed tag %q", prefix, key, tag)
		}
		return
	}
	if len(tag) > MaxTagLen {
		t.Fatalf("Redis(%q, %q): tag of %d bytes", prefix, key, len(tag))
	}
	if back, ok := unescapeTag(tag); !ok || back != key {
		t.Fatalf("Redis(%q, %q): tag %q reads back as %q, %v", prefix, key, tag, back, ok)
	}
}

func TestRedisKeyHostile(t *testing.T) {
	for _, key := range []string{
		"a", "}", "{", "{}", "}{", "a}b{c", "%7D", "%", "%%7B", "%#abc", "\\", ":", "a:b",
		"user}:{other-user", "\x00\xff", strings.Repeat("}", 100), strings.Repeat("x", MaxTagLen),
		strings.Repeat("x", MaxTagLen+1), strings.Repeat("{", 67), strings.Repeat("é", 300),
	} {
		checkKey(t, "rl:api:", key)
		checkKey(t, "", key)
		// Every limiter keeps one caller's state in the same slot.
		if a, b := slot(Redis("rl:a:", key)), slot(Redis("rl:second-limiter:", key)); a != b {
			t.Errorf("%q: slots %d and %d", key, a, b)
		}
	}
	if Redis("p:", "}") == Redis("p:", "%7D") {
		t.Error("'}' and its escape share a key")
	}
}

func FuzzRedis(f *testing.F) {
	for _, s := range []string{"a", "}", "{x}", "%7D", "%#", strings.Repeat("{", 80)} {
		f.Add("rl:x:", s, "rl:y:", s+"}")
	}
	f.Fuzz(func(t *testing.T, p1, k1, p2, k2 string) {
		if CheckPrefix(p1) != nil || CheckPrefix(p2) != nil || k1 == "" || k2 == "" {
			return // New refuses such prefixes, and decide such keys
		}
		checkKey(t, p1, k1)
		checkKey(t, p2, k2)
		// Injective: one Redis key, one (prefix, key) pair. The prefix
		// holds no brace, so it is everything before the first '{'.
		if Redis(p1, k1) == Redis(p2, k2) && (p1 != p2 || k1 != k2) {
			t.Fatalf("(%q, %q) and (%q, %q) share %q", p1, k1, p2, k2, Redis(p1, k1))
		}
	})
}

// splitKey inverts JoinKey.
func splitKey(k string) []string {
	var parts []string
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		switch {
		case k[i] == '\\' && i+1 < len(k):
			i++
			b.WriteByte(k[i])
		case k[i] == ':':
			parts = append(parts, b.String())
			b.Reset()
		default:
			b.WriteByte(k[i])
		}
	}
	return append(parts, b.String())
}

func FuzzJoin(f *testing.F) {
	f.Add("a:b", "c", "a", "b:c")
	f.Add(`a\`, ":b", `a\:`, "b")
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		for _, parts := range [][]string{{a}, {a, b}, {a, b, c}, {a, b, c, d}} {
			got := splitKey(Join(parts[0], parts[1:]...))
			if strings.Join(got, "\x00") != strings.Join(parts, "\x00") || len(got) != len(parts) {
				t.Fatalf("Join(%q) reads back as %q", parts, got)
			}
		}
		if Join(a, b) == Join(c, d) && (a != c || b != d) {
			t.Fatalf("Join(%q, %q) == Join(%q, %q)", a, b, c, d)
		}
	})
}
