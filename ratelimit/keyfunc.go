package ratelimit

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// A KeyFunc says who a request counts against: a client address, an API
// key, a user, a route and a user. Its key goes through the limiter's key
// builder (see RedisKey), so it may hold anything.
type KeyFunc func(r *http.Request) (string, error)

var (
	// ErrNoKey: the request carries nothing to key it by (a missing
	// header). The middleware answers 400 unless FirstOf falls back.
	ErrNoKey = errors.New("ratelimit: the request has no key")
	// ErrClientIP: the client address cannot be told: RemoteAddr is not an
	// address, or a trusted proxy forwarded something that is not one.
	ErrClientIP = errors.New("ratelimit: no client address")
)

// ByClientIP keys requests by client address: RemoteAddr, or, when the
// connection comes from one of the trusted proxies, the address that the
// proxies recorded in X-Forwarded-For. IPv6 addresses count per /64. See
// ClientIP for the rules and the other choices.
func ByClientIP(trustedProxies ...netip.Prefix) KeyFunc {
	return ClientIP{TrustedProxies: trustedProxies}.Key
}

// ClientIP tells a request's client address.
//
// The address is RemoteAddr, the peer of the connection, unless that peer is
// a trusted proxy. Then the forwarding header is read from its right end,
// where the nearest proxy wrote, leftwards: each address that is itself a
// trusted proxy is skipped, and the first that is not is the client. What
// lies left of it was written by the client or by proxies nobody vouches
// for, and is never read: a client cannot choose its key by sending the
// header itself. A request that reaches the server directly is keyed by its
// own address, whatever headers it sends.
//
// Forwarded is read element by element from the right, each held to RFC
// 7239's grammar exactly (tokens, quoted-strings, quoted-pairs, obs-text, no
// parameter twice; IPv6 as "[addr]", ports and obfuscated ports allowed), so
// a client's unclosed quote cannot swallow the element a proxy appended to
// its line. A hop that says nothing usable (an element that fails the
// grammar, "unknown", an obfuscated node, no for=; in X-Forwarded-For,
// anything but an address) is distrusted: the address the nearest trusted
// proxy recorded to its right is the client. When that hop is the very
// element the peer wrote, the request fails with ErrClientIP: the proxy is
// misconfigured, and keying by it would put all its clients in one key.
type ClientIP struct {
	// TrustedProxies are the networks of the proxies in front of the
	// server, such as netip.MustParsePrefix("10.0.0.0/8"). None by default:
	// then only RemoteAddr counts.
	TrustedProxies []netip.Prefix
	// Header is the header the trusted proxies write: "X-Forwarded-For"
	// (the default) or "Forwarded" (RFC 7239, its for= parameters). Only
	// that header is read. Name the one your proxies set (and overwrite or
	// append to): a header they pass through untouched is the client's to
	// forge.
	Header string
	// IPv6Bits is how many leading bits of an IPv6 address make the key:
	// 64 by default, since one host usually holds a whole /64; 128 keys
	// each address.
	IPv6Bits int
}

// Key returns "ip:" and the address as Addr finds it ("ip:192.0.2.1"; IPv6
// as a prefix, such as "ip:2001:db8::/64").
func (c ClientIP) Key(r *http.Request) (string, error) {
	a, err := c.Addr(r)
	if err != nil {
		return "", err
	}
	if a.Is6() {
		bits := c.IPv6Bits
		if bits <= 0 || bits > 128 {
			bits = 64
		}
		p, _ := a.Prefix(bits)
		return "ip:" + p.String(), nil
	}
	return "ip:" + a.String(), nil
}

// Addr returns the client address (IPv4-mapped IPv6 addresses as IPv4).
func (c ClientIP) Addr(r *http.Request) (netip.Addr, error) {
	peer, ok := parseAddr(r.RemoteAddr)
	if !ok {
		return netip.Addr{}, fmt.Errorf("%w: RemoteAddr %q", ErrClientIP, r.RemoteAddr)
	}
	if !c.trusted(peer) {
		return peer, nil
	}
	var hops []hop // nearest first
	switch h := c.Header; {
	case h == "" || strings.EqualFold(h, "X-Forwarded-For"):
		hops = xffHops(r.Header.Values("X-Forwarded-For"))
	case strings.EqualFold(h, "Forwarded"):
		hops = forwardedHops(r.Header.Values("Forwarded"))
	default:
		return netip.Addr{}, fmt.Errorf("%w: ClientIP.Header %q is neither X-Forwarded-For nor Forwarded", ErrClientIP, h)
	}
	client := peer
	for i, h := range hops {
		if !h.ok {
			if i == 0 {
				// The peer, a trusted proxy, wrote it: a misconfigured
				// proxy, which would otherwise put all its clients in one
				// key.
				return netip.Addr{}, fmt.Errorf("%w: a trusted proxy forwarded %q", ErrClientIP, h.raw)
			}
			// Distrusted: written by the hop before, which is trusted but
			// says nothing usable. The client is what the nearest
			// trusted proxy saw.
			break
		}
		client = h.addr
		if !c.trusted(h.addr) {
			break
		}
	}
	return client, nil
}

// xffHops returns the hops of X-Forwarded-For field lines, nearest first,
// up to the first that is not an address.
func xffHops(lines []string) []hop {
	var hops []hop
	for i := len(lines) - 1; i >= 0; i-- {
		elems := strings.Split(lines[i], ",")
		for j := len(elems) - 1; j >= 0; j-- {
			raw := strings.TrimSpace(elems[j])
			a, ok := parseAddr(raw)
			hops = append(hops, hop{addr: a, ok: ok, raw: raw})
			if !ok {
				return hops
			}
		}
	}
	return hops
}

func (c ClientIP) trusted(a netip.Addr) bool {
	for _, p := range c.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseAddr reads an address with or without a port ("192.0.2.1",
// "192.0.2.1:80", "2001:db8::1", "[2001:db8::1]:80").
func parseAddr(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil {
			return a.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// ByHeader keys requests by a header, such as an API key or a user id set
// by an authenticating proxy: "header:", the lower-case name, ':' and the
// value (a header name holds no ':', so the value is all the rest). A
// request without it (or with it empty) fails with ErrNoKey. Only trust a
// header that something in front of the limiter sets or checks; anyone can
// send any value.
func ByHeader(name string) KeyFunc {
	canon := strings.ToLower(name)
	return func(r *http.Request) (string, error) {
		v := strings.TrimSpace(r.Header.Get(name))
		if v == "" {
			return "", fmt.Errorf("%w: no %s header", ErrNoKey, name)
		}
		return "header:" + canon + ":" + v, nil
	}
}

// ByRoute keys requests by route and by what key says, so one limiter
// counts each route apart: "route:", JoinKey(route) (the route with its ':'
// and '\' escaped, so it ends at the next bare ':'), ':' and the key. The
// route is the pattern the standard mux matched (Go 1.23+, when the
// middleware wraps the route's handler), or else the method and path.
func ByRoute(key KeyFunc) KeyFunc {
	return func(r *http.Request) (string, error) {
		k, err := key(r)
		if err != nil {
			return "", err
		}
		return "route:" + JoinKey(route(r)) + ":" + k, nil
	}
}

// FirstOf keys a request by the first key function that finds a key: say
// ByHeader("X-API-Key"), then ByClientIP() for anonymous requests. A
// function that fails with anything but ErrNoKey ends the search.
func FirstOf(keys ...KeyFunc) KeyFunc {
	return func(r *http.Request) (string, error) {
		err := fmt.Errorf("%w: no key function", ErrNoKey)
		for _, key := range keys {
			var k string
			if k, err = key(r); !errors.Is(err, ErrNoKey) {
				return k, err
			}
		}
		return "", err
	}
}
