package clientip

// The Forwarded header (RFC 7239), read the only way a client cannot steer:
// element by element from the right end, where the trusted proxies wrote.
//
// A proxy may append its element to the client's own field line (RFC 9110
// section 5.3: "for=9.9.9.9;x=\"" from the client becomes
// "for=9.9.9.9;x=\", for=192.0.2.7"), so a reader that parses the line from
// the left lets the client's open quote swallow the proxy's element. Read
// from the right, each element a trusted proxy wrote is well formed, so its
// bounds are found exactly whatever stands to its left; each element found
// is then held to the grammar (RFC 7239 section 4 over RFC 9110's token,
// quoted-string, quoted-pair and obs-text). What lies left of the first
// element that fails is never read.

import (
	"net/netip"
	"strings"
)

// A hop is what one forwarding element says: the address in its for=, or
// ok false when the element fails the grammar or names no address
// ("unknown", an obfuscated node, no for= at all). raw is the element, for
// error messages.
type hop struct {
	addr netip.Addr
	ok   bool
	raw  string
}

// forwardedHops returns the hops of Forwarded field lines, nearest first:
// the last line's last element first. Empty list elements are skipped, as
// RFC 9110 section 5.6.1 tells recipients to. It stops after the first hop
// that is not ok: nothing left of it can be told apart.
func forwardedHops(lines []string) []hop {
	var hops []hop
	for i := len(lines) - 1; i >= 0; i-- {
		line := lines[i]
		for end := len(line); end > 0; {
			start := elementStart(line, end)
			elem := trimOWS(line[start:end])
			end = start - 1 // the comma before the element, if any
			if elem == "" {
				continue
			}
			h := hop{raw: elem}
			if node, ok := forwardedElement(elem); ok {
				h.addr, h.ok = forwardedNode(node)
			}
			hops = append(hops, h)
			if !h.ok {
				return hops
			}
		}
	}
	return hops
}

// elementStart returns where the element that ends at end begins: just
// after the nearest comma to its left that is outside a quoted-string, or
// 0. Scanning leftwards, a '"' opens or closes a quoted-string unless an odd
// number of backslashes precede it (a quoted-pair), which in well-formed
// text is exactly the forward reading. Text that is not well formed ends
// somewhere; forwardedElement then refuses what was cut.
func elementStart(s string, end int) int {
	quoted := false
	for i := end - 1; i >= 0; i-- {
		switch s[i] {
		case '"':
			n := 0
			for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
				n++
			}
			if n%2 == 0 {
				quoted = !quoted
			}
		case ',':
			if !quoted {
				return i + 1
			}
		}
	}
	return 0
}

// forwardedElement checks one forwarded-element,
//
//	forwarded-element = [ forwarded-pair ] *( ";" [ forwarded-pair ] )
//	forwarded-pair    = token "=" value
//	value             = token / quoted-string
//
// in which no parameter may occur twice (RFC 7239 section 4), and returns
// its for= value, unquoted. ok is false when the element fails the
// grammar or has no for=.
func forwardedElement(e string) (node string, ok bool) {
	var seen []string
	hasFor := false
	for i := 0; i < len(e); {
		if e[i] == ';' { // an empty pair
			i++
			continue
		}
		n := tokenEnd(e, i)
		if n == i || n == len(e) || e[n] != '=' {
			return "", false
		}
		name := strings.ToLower(e[i:n])
		for _, s := range seen {
			if s == name {
				return "", false
			}
		}
		seen = append(seen, name)
		i = n + 1
		var val string
		if i < len(e) && e[i] == '"' {
			var end int
			if val, end, ok = quotedString(e, i); !ok {
				return "", false
			}
			i = end
		} else {
			end := tokenEnd(e, i)
			if end == i {
				return "", false
			}
			val, i = e[i:end], end
		}
		if i < len(e) {
			if e[i] != ';' {
				return "", false
			}
			i++
		}
		if name == "for" {
			node, hasFor = val, true
		}
	}
	return node, hasFor
}

// tokenEnd returns the end of the token (RFC 9110 section 5.6.2) that
// starts at i: i itself when there is none.
func tokenEnd(s string, i int) int {
	for i < len(s) && isTchar(s[i]) {
		i++
	}
	return i
}

func isTchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// quotedString reads the quoted-string that opens at s[i] (RFC 9110 section
// 5.6.4) and returns its content unescaped and the index after its closing
// quote:
//
//	quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE
//	qdtext        = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text
//	quoted-pair   = "\" ( HTAB / SP / VCHAR / obs-text )
func quotedString(s string, i int) (string, int, bool) {
	var b strings.Builder
	for i++; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			return b.String(), i + 1, true
		case c == '\\':
			if i+1 == len(s) || !(s[i+1] == '\t' || s[i+1] >= ' ' && s[i+1] != 0x7f) {
				return "", 0, false
			}
			i++
			b.WriteByte(s[i])
		case c == '\t' || c >= ' ' && c != 0x7f:
			b.WriteByte(c)
		default:
			return "", 0, false
		}
	}
	return "", 0, false // no closing quote
}

// forwardedNode reads a for= node (RFC 7239 section 6):
//
//	node     = nodename [ ":" node-port ]
//	nodename = IPv4address / "[" IPv6address "]" / "unknown" / obfnode
//	node-port = port / obfport
//
// and returns its address; ok is false for "unknown", an obfuscated node,
// or anything that is not a node. An IPv6 address must be bracketed, and
// may have no zone.
func forwardedNode(s string) (netip.Addr, bool) {
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return netip.Addr{}, false
		}
		host, port = s[1:end], s[end+1:]
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" || !nodePort(port) {
			return netip.Addr{}, false
		}
		return a.Unmap(), true
	}
	if i := strings.IndexByte(s, ':'); i >= 0 {
		host, port = s[:i], s[i:]
	}
	a, err := netip.ParseAddr(host)
	if err != nil || !a.Is4() || !nodePort(port) {
		return netip.Addr{}, false
	}
	return a, true
}

// nodePort checks an optional ":" node-port, where
//
//	port    = 1*5DIGIT
//	obfport = "_" 1*(ALPHA / DIGIT / "." / "_" / "-")
func nodePort(p string) bool {
	if p == "" {
		return true
	}
	if p[0] != ':' || len(p) == 1 {
		return false
	}
	p = p[1:]
	if p[0] == '_' {
		if len(p) == 1 {
			return false
		}
		for i := 1; i < len(p); i++ {
			c := p[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
				return false
			}
		}
		return true
	}
	if len(p) > 5 {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
	}
	return true
}

// trimOWS drops optional whitespace (SP, HTAB) around a list element.
func trimOWS(s string) string {
	return strings.Trim(s, " \t")
}
