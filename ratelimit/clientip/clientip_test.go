package clientip_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/redlimit/redlimit/ratelimit/clientip"
)

func get(remoteAddr string, header ...string) *http.Request {
	r := httptest.NewRequest("GET", "/items", nil)
	r.RemoteAddr = remoteAddr
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	return r
}

// A key comes from where the user says: no header can choose another's
// bucket unless the proxy that sent it is trusted.
func TestClientIPSpoofing(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	xff := clientip.Resolver{TrustedProxies: proxies}
	fwd := clientip.Resolver{TrustedProxies: proxies, Header: "Forwarded"}
	tests := []struct {
		name string
		c    clientip.Resolver
		r    *http.Request
		want string // key, or "" for ErrClientIP
	}{
		{"direct", xff, get("203.0.113.7:4242"), "ip:203.0.113.7"},
		{"direct, forged XFF", xff, get("203.0.113.7:4242", "X-Forwarded-For", "198.51.100.1"), "ip:203.0.113.7"},
		{"direct, forged Forwarded", fwd, get("203.0.113.7:4242", "Forwarded", "for=198.51.100.1"), "ip:203.0.113.7"},
		{"no trusted proxies", clientip.Resolver{}, get("10.0.0.1:1", "X-Forwarded-For", "198.51.100.1"), "ip:10.0.0.1"},
		{"trusted proxy", xff, get("10.0.0.1:1", "X-Forwarded-For", "198.51.100.1"), "ip:198.51.100.1"},
		{"trusted proxy, client forges the left", xff, get("10.0.0.1:1", "X-Forwarded-For", "1.2.3.4, 198.51.100.1"), "ip:198.51.100.1"},
		{"two header lines", xff, get("10.0.0.1:1", "X-Forwarded-For", "1.2.3.4", "X-Forwarded-For", "198.51.100.1"), "ip:198.51.100.1"},
		{"chain of trusted proxies", xff, get("10.0.0.1:1", "X-Forwarded-For", "1.2.3.4, 198.51.100.1, 10.9.9.9, 10.0.0.2"), "ip:198.51.100.1"},
		{"every hop trusted", xff, get("10.0.0.1:1", "X-Forwarded-For", "10.1.1.1, 10.0.0.2"), "ip:10.1.1.1"},
		{"trusted, no header", xff, get("10.0.0.1:1"), "ip:10.0.0.1"},
		{"XFF with a port", xff, get("10.0.0.1:1", "X-Forwarded-For", "198.51.100.1:5678"), "ip:198.51.100.1"},
		{"XFF garbage", xff, get("10.0.0.1:1", "X-Forwarded-For", "1.2.3.4, nonsense"), ""},
		{"XFF empty hop", xff, get("10.0.0.1:1", "X-Forwarded-For", "198.51.100.1,"), ""},
		{"Forwarded ignored by the XFF reader", xff, get("10.0.0.1:1", "Forwarded", "for=1.2.3.4"), "ip:10.0.0.1"},
		{"XFF ignored by the Forwarded reader", fwd, get("10.0.0.1:1", "X-Forwarded-For", "1.2.3.4"), "ip:10.0.0.1"},
		{"Forwarded", fwd, get("10.0.0.1:1", "Forwarded", "for=198.51.100.1;proto=https;by=10.0.0.1"), "ip:198.51.100.1"},
		{"Forwarded list", fwd, get("10.0.0.1:1", "Forwarded", `for=1.2.3.4, For="198.51.100.1:80", for=10.0.0.3`), "ip:198.51.100.1"},
		{"Forwarded IPv6", fwd, get("10.0.0.1:1", "Forwarded", `for="[2001:db8:cafe::17]:4711"`), "ip:2001:db8:cafe::/64"},
		{"Forwarded quoted comma", fwd, get("10.0.0.1:1", "Forwarded", `for=1.2.3.4;x="a,b", for=198.51.100.2`), "ip:198.51.100.2"},
		{"Forwarded unknown", fwd, get("10.0.0.1:1", "Forwarded", "for=unknown"), ""},
		{"Forwarded obfuscated", fwd, get("10.0.0.1:1", "Forwarded", "for=_hidden"), ""},
		{"Forwarded without for", fwd, get("10.0.0.1:1", "Forwarded", "proto=https"), ""},
		{"Forwarded unterminated", fwd, get("10.0.0.1:1", "Forwarded", `for="1.2.3.4`), ""},
		{"IPv6 per /64", xff, get("[2001:db8::1]:1"), "ip:2001:db8::/64"},
		{"IPv6 same /64", xff, get("[2001:db8::ffff:1]:1"), "ip:2001:db8::/64"},
		{"IPv6 per address", clientip.Resolver{IPv6Bits: 128}, get("[2001:db8::1]:1"), "ip:2001:db8::1/128"},
		{"IPv4-mapped", xff, get("[::ffff:192.0.2.1]:1"), "ip:192.0.2.1"},
		{"IPv6 trusted proxy", xff, get("[fd00::1]:1", "X-Forwarded-For", "2001:db8:1:2:3::4"), "ip:2001:db8:1:2::/64"},
		{"bad RemoteAddr", xff, get("pipe"), ""},
		{"unknown header name", clientip.Resolver{TrustedProxies: proxies, Header: "X-Real-IP"}, get("10.0.0.1:1"), ""},
	}
	for _, tt := range tests {
		got, err := tt.c.Key(tt.r)
		if tt.want == "" {
			if !errors.Is(err, clientip.ErrNoAddr) {
				t.Errorf("%s: %q, %v; want ErrNoAddr", tt.name, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}
