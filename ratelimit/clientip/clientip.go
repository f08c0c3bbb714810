// Package clientip tells a request's client address when proxies stand
// in front of the server: the address they recorded in X-Forwarded-For or
// Forwarded, read only as far as proxies you trust wrote it, so a client
// cannot choose its own address by sending the header itself.
package clientip

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// ErrNoAddr: the client address cannot be told: RemoteAddr is not an
// address, or a trusted proxy forwarded something that is not one.
var ErrNoAddr = errors.New("clientip: no client address")

// A Resolver tells a request's client address: RemoteAddr, unless that
// peer is a trusted proxy. Then the forwarding header is read from its
// right end, skipping trusted proxies; the first address that is not one is
// the client's. A hop that says nothing usable is distrusted, and Addr
// fails with ErrNoAddr when that hop is the peer's own.
type Resolver struct {
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
func (c Resolver) Key(r *http.Request) (string, error) {
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
func (c Resolver) Addr(r *http.Request) (netip.Addr, error) {
	peer, ok := parseAddr(r.RemoteAddr)
	if !ok {
		return netip.Addr{}, fmt.Errorf("%w: RemoteAddr %q", ErrNoAddr, r.RemoteAddr)
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
		return netip.Addr{}, fmt.Errorf("%w: Resolver.Header %q is neither X-Forwarded-For nor Forwarded", ErrNoAddr, h)
	}
	client := peer
	for i, h := range hops {
		if !h.ok {
			if i == 0 {
				// The peer, a trusted proxy, wrote it: a misconfigured
				// proxy, which would otherwise put all its clients in one
				// key.
				return netip.Addr{}, fmt.Errorf("%w: a trusted proxy forwarded %q", ErrNoAddr, h.raw)
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

func (c Resolver) trusted(a netip.Addr) bool {
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
