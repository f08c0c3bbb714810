package clientip

import (
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

var trustedNets = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}

// request makes a request from peer with the given header lines (name,
// value pairs, in order).
func request(peer string, lines ...string) *http.Request {
	r, _ := http.NewRequest("GET", "http://example.com/", nil)
	r.RemoteAddr = peer
	for i := 0; i+1 < len(lines); i += 2 {
		r.Header.Add(lines[i], lines[i+1])
	}
	return r
}

// What a client sends in Forwarded never chooses its key: a proxy at
// 10.0.0.1 (trusted) appends its element to the client's own line (RFC
// 9110 section 5.3), and the key is the address the proxy saw.
func TestForwardedSpoofing(t *testing.T) {
	fwd := Resolver{TrustedProxies: trustedNets, Header: "Forwarded"}
	xff := Resolver{TrustedProxies: trustedNets}
	const peer = "10.0.0.1:4711"
	tests := []struct {
		name  string
		c     Resolver
		lines []string
		want  string // "" for ErrNoAddr
	}{
		// The cases: an open quote in any parameter.
		{"open quote in an extension", fwd, []string{"Forwarded", `for=9.9.9.9;x=", for=192.0.2.7`}, "ip:192.0.2.7"},
		{"open quote in by", fwd, []string{"Forwarded", `for=9.9.9.9;by=", for=192.0.2.7`}, "ip:192.0.2.7"},
		{"open quote in proto", fwd, []string{"Forwarded", `for=9.9.9.9;proto=", for=192.0.2.7`}, "ip:192.0.2.7"},
		{"open quote in host", fwd, []string{"Forwarded", `for=9.9.9.9;host=", for=192.0.2.7`}, "ip:192.0.2.7"},
		{"open quote naming a trusted address", fwd, []string{"Forwarded", `for=198.51.100.9, for=10.0.0.5;x=", for=192.0.2.7`}, "ip:192.0.2.7"},
		{"open quote in for", fwd, []string{"Forwarded", `for="9.9.9.9, for=192.0.2.7`}, "ip:192.0.2.7"},
		{"an escaped quote", fwd, []string{"Forwarded", `for=9.9.9.9;x="\", for=192.0.2.7`}, "ip:192.0.2.7"},
		{"a trailing backslash", fwd, []string{"Forwarded", `for=9.9.9.9;x="\, for=192.0.2.7`}, "ip:192.0.2.7"},
		{"a quote the proxy closes", fwd, []string{"Forwarded", `x=", for="[2001:db8:cafe::7]:443"`}, "ip:2001:db8:cafe::/64"},
		{"the proxy's own line", fwd, []string{"Forwarded", `for=9.9.9.9;x="`, "Forwarded", "for=192.0.2.7"}, "ip:192.0.2.7"},
		{"two trusted proxies", fwd, []string{"Forwarded", `for=9.9.9.9;x=", for=192.0.2.7;proto=https, for=10.0.0.2;by="[fd00::1]"`}, "ip:192.0.2.7"},
		{"forged trusted hops", fwd, []string{"Forwarded", `for=6.6.6.6, for=10.0.0.9, for=192.0.2.7`}, "ip:192.0.2.7"},
		{"a host that the proxy quoted", fwd, []string{"Forwarded", `for=192.0.2.7;host="a, for=6.6.6.6;x=\""`}, "ip:192.0.2.7"},
		// A client inside the trusted network: its own element is read, as
		// a trusted proxy's would be; garbage or "unknown" there is
		// distrusted, and the key is what the proxy saw.
		{"trusted client, garbage", fwd, []string{"Forwarded", `x=", for=10.0.0.7`}, "ip:10.0.0.7"},
		{"trusted client, unknown", fwd, []string{"Forwarded", `for=unknown, for=10.0.0.7`}, "ip:10.0.0.7"},
		{"trusted client, forwarding", fwd, []string{"Forwarded", `for=198.51.100.3, for=10.0.0.7`}, "ip:198.51.100.3"},
		// The peer's own element must parse: else its proxy is broken.
		{"peer's element, parameter twice", fwd, []string{"Forwarded", `for=192.0.2.7;for=6.6.6.6`}, ""},
		{"peer's element, space before ;", fwd, []string{"Forwarded", `for=192.0.2.7 ;proto=https`}, ""},
		{"peer's element, unquoted port", fwd, []string{"Forwarded", `for=192.0.2.7:80`}, ""},
		{"peer's element, unbracketed IPv6", fwd, []string{"Forwarded", `for="2001:db8::1"`}, ""},
		{"peer's element, control byte", fwd, []string{"Forwarded", "for=\"192.0.2.7\x01\""}, ""},
		// Empty list elements are ignored (RFC 9110 section 5.6.1).
		{"empty elements", fwd, []string{"Forwarded", `, for=192.0.2.7 ,, `}, "ip:192.0.2.7"},
		{"obfuscated port", fwd, []string{"Forwarded", `for="192.0.2.7:_p0rt"`}, "ip:192.0.2.7"},
		{"escapes in a quoted for", fwd, []string{"Forwarded", `for="\1\9\2.0.2.7"`}, "ip:192.0.2.7"},
		{"obs-text in an extension", fwd, []string{"Forwarded", "for=192.0.2.7;x=\"\xff\xfe\""}, "ip:192.0.2.7"},
		// X-Forwarded-For tricks.
		{"XFF beside Forwarded", fwd, []string{"X-Forwarded-For", "6.6.6.6", "Forwarded", "for=192.0.2.7"}, "ip:192.0.2.7"},
		{"Forwarded beside XFF", xff, []string{"Forwarded", "for=6.6.6.6", "X-Forwarded-For", "192.0.2.7"}, "ip:192.0.2.7"},
		{"XFF quote", xff, []string{"X-Forwarded-For", `"6.6.6.6, 192.0.2.7`}, "ip:192.0.2.7"},
		{"XFF trusted client, garbage", xff, []string{"X-Forwarded-For", `nonsense, 10.0.0.7`}, "ip:10.0.0.7"},
	}
	for _, tt := range tests {
		got, err := tt.c.Key(request(peer, tt.lines...))
		if tt.want == "" {
			if !errors.Is(err, ErrNoAddr) {
				t.Errorf("%s: %q, %v; want ErrNoAddr", tt.name, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

// The grammar of one element, and what its for= says.
func TestForwardedElement(t *testing.T) {
	tests := []struct {
		elem string
		node string // for= value unquoted; "-" when the element fails
	}{
		{"for=192.0.2.1", "192.0.2.1"},
		{"For=192.0.2.1", "192.0.2.1"},
		{"proto=https;for=192.0.2.1;by=x", "192.0.2.1"},
		{`for="[2001:db8::1]:80"`, "[2001:db8::1]:80"},
		{`for="a\"b"`, `a"b`},
		{`for="a\\"`, `a\`},
		{";;for=1.2.3.4;", "1.2.3.4"},
		{"for=", "-"},
		{"for", "-"},
		{"=x", "-"},
		{"proto=https", "-"},
		{"for=1;FOR=2", "-"},
		{`for="a`, "-"},
		{`for="a\`, "-"},
		{`for="a"b`, "-"},
		{`for=a"b"`, "-"},
		{"for=a b", "-"},
		{"for=a,b", "-"},
		{"f r=a", "-"},
		{"for=\"\x7f\"", "-"},
		{"for=\"\\\x00\"", "-"},
		{"for=\"\t\\\t\"", "\t\t"},
	}
	for _, tt := range tests {
		node, ok := forwardedElement(tt.elem)
		got := node
		if !ok {
			got = "-"
		}
		if got != tt.node {
			t.Errorf("forwardedElement(%q) = %q, %v; want %q", tt.elem, node, ok, tt.node)
		}
	}
}

func TestForwardedNode(t *testing.T) {
	tests := []struct {
		node string
		want string // "" when not an address
	}{
		{"192.0.2.1", "192.0.2.1"},
		{"192.0.2.1:8080", "192.0.2.1"},
		{"192.0.2.1:_x-1.y", "192.0.2.1"},
		{"[2001:db8::1]", "2001:db8::1"},
		{"[2001:db8::1]:443", "2001:db8::1"},
		{"[::ffff:192.0.2.1]", "192.0.2.1"},
		{"unknown", ""},
		{"_hidden", ""},
		{"2001:db8::1", ""},
		{"[192.0.2.1]", ""},
		{"[fe80::1%eth0]", ""},
		{"[2001:db8::1", ""},
		{"192.0.2.1:", ""},
		{"192.0.2.1:123456", ""},
		{"192.0.2.1:_", ""},
		{"192.0.2.1:_a/b", ""},
		{"192.0.2.1:8a", ""},
		{"[2001:db8::1]x", ""},
		{"192.0.2", ""},
		{"", ""},
	}
	for _, tt := range tests {
		a, ok := forwardedNode(tt.node)
		got := ""
		if ok {
			got = a.String()
		}
		if got != tt.want {
			t.Errorf("forwardedNode(%q) = %q, want %q", tt.node, got, tt.want)
		}
	}
}

// FuzzForwardedKey holds the property the parser exists for: whatever a
// client sends in Forwarded (or X-Forwarded-For), once a trusted proxy has
// appended what it saw, to the client's line or on a line of its own, and
// maybe a second trusted proxy after it, the key is the address the proxy
// saw. The proxy's element varies as real ones do (ports, IPv6, by=,
// proto=, and a host= that quotes what the client sent as Host).
func FuzzForwardedKey(f *testing.F) {
	for _, s := range []string{
		`for=9.9.9.9;x="`, `for=9.9.9.9;by="`, `for=9.9.9.9;proto="`, `for=9.9.9.9;host="`,
		`for=198.51.100.9, for=10.0.0.5;x="`, `for="9.9.9.9`, `x="\`, `x="\"`, `for=10.0.0.1`,
		"for=1.2.3.4\nfor=10.0.0.3;x=\"", `"`, `\`, "",
	} {
		f.Add(s, "example.com", uint32(0xc0000207), uint64(0), uint8(0))
	}
	f.Add(`x="`, `a, for=6.6.6.6;x="`, uint32(0x09090909), uint64(0x20010db8cafe0007), uint8(0xff))
	f.Fuzz(func(t *testing.T, client, host string, v4 uint32, v6 uint64, shape uint8) {
		// The address the proxy saw: never in a trusted network.
		var seen netip.Addr
		if shape&1 == 0 {
			b := [4]byte{byte(v4 >> 24), byte(v4 >> 16), byte(v4 >> 8), byte(v4)}
			if b[0] == 10 || b[0] == 0 {
				b[0] = 192
			}
			seen = netip.AddrFrom4(b)
		} else {
			var b [16]byte
			for i := 0; i < 8; i++ {
				b[i] = byte(v6 >> (56 - 8*i))
			}
			if b[0] == 0xfd || b[0] == 0 {
				b[0] = 0x20
			}
			b[15] = 1
			seen = netip.AddrFrom16(b)
		}
		want := "ip:" + seen.String()
		if seen.Is6() {
			p, _ := seen.Prefix(64)
			want = "ip:" + p.String()
		}

		// The proxy's element.
		node := seen.String()
		switch {
		case seen.Is6() && shape&2 != 0:
			node = `"[` + node + `]:8443"`
		case seen.Is6():
			node = `"[` + node + `]"`
		case shape&2 != 0:
			node = `"` + node + `:_p"`
		}
		elem := "for=" + node
		if shape&4 != 0 {
			elem += ";proto=https;by=10.0.0.1"
		}
		if shape&8 != 0 {
			elem += ";host=" + quote(host)
		}
		lines := strings.Split(client, "\n")
		if shape&16 != 0 || client == "" {
			lines = append(lines, elem) // a line of its own
		} else {
			lines[len(lines)-1] += ", " + elem
		}
		if shape&32 != 0 { // a second trusted proxy
			lines[len(lines)-1] += ", for=10.0.0.2"
		}
		var kv []string
		for _, l := range lines {
			kv = append(kv, "Forwarded", l)
		}
		c := Resolver{TrustedProxies: trustedNets, Header: "Forwarded"}
		if got, err := c.Key(request("10.0.0.1:1", kv...)); err != nil || got != want {
			t.Fatalf("Forwarded %q: %q, %v; want %q", lines, got, err, want)
		}

		// The same through X-Forwarded-For, which has no quotes to abuse.
		xlines := strings.Split(client, "\n")
		xlines[len(xlines)-1] += ", " + seen.String()
		if shape&32 != 0 {
			xlines[len(xlines)-1] += ", 10.0.0.2"
		}
		kv = kv[:0]
		for _, l := range xlines {
			kv = append(kv, "X-Forwarded-For", l)
		}
		if got, err := (Resolver{TrustedProxies: trustedNets}).Key(request("10.0.0.1:1", kv...)); err != nil || got != want {
			t.Fatalf("X-Forwarded-For %q: %q, %v; want %q", xlines, got, err, want)
		}
	})
}

// quote makes a quoted-string of s as a careful proxy would: escaping '"'
// and '\', and dropping the bytes a quoted-string cannot hold.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\t' || c >= ' ' && c != 0x7f:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
