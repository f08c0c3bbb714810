// Package key builds the Redis keys of every limiter in ratelimit and its
// subpackages: one place that places the {hash tag} and escapes it.
package key

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/redlimit/redlimit/ratelimit/internal/call"
)

// Keys. A limiter keeps the state of key in the Redis key
//
//	prefix + "{" + escaped key + "}"
//
// The escaping percent-encodes '%', '{' and '}', so the escaped key holds no
// brace: the {hash tag} Redis Cluster hashes is always exactly the escaped
// key, whatever the input, and one caller's state under every limiter (each
// with its own prefix) lands in one slot, which an Atomic rule's atomic check of
// several limits needs. Prefixes hold no brace either (New refuses one), so
// the first '{' of a Redis key is always where the tag starts: no input can
// end the tag early, move it, or reach another prefix's or another key's
// state. A key whose escaped form passes MaxTagLen bytes is stored by its
// SHA-256 ("%#" and 64 hex digits, a form escaping never produces), so a
// hostile multi-kilobyte header cannot bloat Redis.

// MaxTagLen is the longest escaped key kept as it is.
const MaxTagLen = 200

// Redis is the Redis key a limiter with this prefix keeps key's state in.
// The key must not be empty (limiters refuse an empty key: "{}" is no hash
// tag).
func Redis(prefix, key string) string {
	return prefix + "{" + escapeTag(key) + "}"
}

func escapeTag(key string) string {
	if !strings.ContainsAny(key, "%{}") && len(key) <= MaxTagLen {
		return key
	}
	var b strings.Builder
	b.Grow(len(key) + 8)
	for i := 0; i < len(key); i++ {
		switch c := key[i]; c {
		case '%':
			b.WriteString("%25")
		case '{':
			b.WriteString("%7B")
		case '}':
			b.WriteString("%7D")
		default:
			b.WriteByte(c)
		}
	}
	if b.Len() > MaxTagLen {
		sum := sha256.Sum256([]byte(key))
		return "%#" + hex.EncodeToString(sum[:])
	}
	return b.String()
}

// Join builds one key from several parts, such as a route and a user, so
// that no part can pose as another: it escapes '\' as `\\` and ':' as `\:`
// in each part and joins them with ':'. Join("a:b", "c") and Join("a",
// "b:c") differ.
func Join(part string, more ...string) string {
	var b strings.Builder
	writeKeyPart(&b, part)
	for _, p := range more {
		b.WriteByte(':')
		writeKeyPart(&b, p)
	}
	return b.String()
}

func writeKeyPart(b *strings.Builder, p string) {
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' || p[i] == ':' {
			b.WriteByte('\\')
		}
		b.WriteByte(p[i])
	}
}

// CheckPrefix refuses a prefix that would let the first '{' of a key be
// somewhere other than the start of the tag.
func CheckPrefix(p string) error {
	if strings.ContainsAny(p, "{}") {
		return fmt.Errorf("%w: prefix %q holds a brace; the hash tag is the limiter's to place", call.ErrInvalid, p)
	}
	return nil
}

// CheckName keeps names fit for a Redis prefix, a log line and the quoted
// policy name of the RateLimit header fields.
func CheckName(n string) error {
	if n == "" || len(n) > 64 {
		return fmt.Errorf("%w: name %q must have 1 to 64 characters", call.ErrInvalid, n)
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("%w: name %q may hold only letters, digits, '_', '-' and '.'", call.ErrInvalid, n)
		}
	}
	return nil
}
