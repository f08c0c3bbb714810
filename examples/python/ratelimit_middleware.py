"""Rate limiting for FastAPI and Starlette on the bundle's scripts.

An ASGI middleware that decides each request with ``gcra.lua`` or
``token_bucket.lua`` through redis-py (via redlimit.py, which reads the
manifest), and answers as redlimit's Go middleware does: the same Redis
keys, the same ``RateLimit-Policy`` / ``RateLimit`` fields, the same 429
problem body (tests/polyglot holds the two to each other, decision for
decision, on the same traffic).

    from ratelimit_middleware import Policy, RateLimitMiddleware, client_ip

    per_ip = Policy("ip", rate=10, period=timedelta(minutes=1))
    app.add_middleware(RateLimitMiddleware, redis=redis.Redis(),
                       rule=lambda request: (per_ip, client_ip(request)))

What the Redis guide's version of this gets wrong, and this one does not:
- Its bucket holds float tokens in a hash (HMGET, then HMSET): fractions
  drift, and two app servers that read at once both spend the same token.
  The bundle's scripts decide in one atomic call and keep integer state.
- It sends the app server's clock (time.time()) into the script, so a
  server whose clock runs behind refills nobody and one that runs ahead
  refills everybody. The scripts here read Redis's own TIME, one clock for
  every app server.
- It answers a denial with a bare 429. This one says when to come back
  (Retry-After, the RateLimit fields), and says when a request can never
  pass (a cost above the burst) instead of telling the client to wait.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import ipaddress
import json
import math
import os
import re
import time

import redis
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

import redlimit

MANIFEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bindings", "scripts.json")

# The RateLimit draft's problem types (draft-ietf-httpapi-ratelimit-headers,
# section 4), as ratelimit/headers.go writes them.
QUOTA_EXCEEDED = "https://iana.org/assignments/http-problem-types#quota-exceeded"
REDUCED_CAPACITY = "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity"

# What a limiter does when Redis cannot decide, as the Go limiter's
# WithFallback: nothing (the error), FailOpen, FailClosed.
FAIL_ERROR, FAIL_OPEN, FAIL_CLOSED = "error", "open", "closed"

_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}\Z")
_MAX_TAG = 200
_MS = _dt.timedelta(milliseconds=1)


def redis_key(prefix, key):
    """The Redis key of key's state under prefix, as ratelimit.RedisKey
    builds it: prefix + "{" + key + "}", with '%', '{' and '}'
    percent-encoded so the hash tag is always exactly the escaped key, and a
    key whose escaped form passes 200 bytes stored by its SHA-256."""
    if not key:
        raise ValueError("an empty key has no hash tag")
    raw = key.encode("utf-8", "surrogateescape")
    tag = raw.replace(b"%", b"%25").replace(b"{", b"%7B").replace(b"}", b"%7D")
    if len(tag) > _MAX_TAG:
        tag = b"%#" + hashlib.sha256(raw).hexdigest().encode()
    return prefix + "{" + tag.decode("utf-8", "surrogateescape") + "}"


class Policy:
    """One limit: rate requests per period, burst at once (rate by
    default), decided by algorithm ("gcra" or "token_bucket", whose refill
    is smooth). The name appears in the Redis keys (prefix "rl:<name>:", as
    the Go limiter's name), in the RateLimit fields and in the 429
    body; give each limit its own, so a client that changes tier starts
    afresh instead of inheriting another limit's state.

    A limit the script would refuse is refused here, when the policy is
    built (redlimit.ArgError), not as an error on every request."""

    ALGORITHMS = ("gcra", "token_bucket")

    def __init__(self, name, rate, period, burst=None, algorithm="gcra", prefix=None, bundle=None):
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"policy name {name!r}: 1 to 64 letters, digits, '_', '-' or '.'")
        if algorithm not in self.ALGORITHMS:
            raise ValueError(f"policy {name}: algorithm {algorithm!r}, want one of {', '.join(self.ALGORITHMS)}")
        if not isinstance(period, _dt.timedelta):
            raise TypeError(f"policy {name}: period must be a datetime.timedelta, got {type(period).__name__}")
        self.name, self.algorithm = name, algorithm
        self.rate, self.period = rate, period
        self.burst = rate if burst is None else burst
        self.prefix = f"rl:{name}:" if prefix is None else prefix
        if "{" in self.prefix or "}" in self.prefix:
            raise ValueError(f"policy {name}: prefix {self.prefix!r} holds a brace; the hash tag is the key's")
        self._script = (bundle or default_bundle())[algorithm]
        self._script.encode(["k"], self._args(1))  # the manifest's bounds: ArgError now, not per request

    def _args(self, cost):
        if self.algorithm == "gcra":
            return {"burst": self.burst, "rate": self.rate, "period": self.period, "take": "all", "requests": [{"cost": cost}]}
        return {"capacity": self.burst, "rate": self.rate, "period": self.period, "refill": "smooth", "requests": [{"cost": cost}]}

    def decide(self, client, key, cost=1):
        """Counts cost against key (0 only peeks), one request of the
        script's batch; returns its decision: allowed (a bool here),
        remaining, retry_after (redlimit.NEVER when cost can never pass)
        and reset_after."""
        d = self._script(client, [redis_key(self.prefix, key)], **self._args(cost)).decisions[0]
        return d._replace(allowed=d.allowed == 1)

    def policy_item(self):
        """This limit's item of RateLimit-Policy: q is the burst and w the
        seconds a full burst takes to come back, rounded up (at least 1),
        as the Go middleware writes it."""
        period_ms = self.period // _MS
        w = max(1, -(-self.burst * period_ms // (self.rate * 1000)))
        return f'{_sf_string(self.name)};q={self.burst};w={w}'

    def __repr__(self):
        return f"Policy({self.name!r}, rate={self.rate}, period={self.period!r}, burst={self.burst}, algorithm={self.algorithm!r})"


_bundle = None


def default_bundle():
    """The bundle of this checkout (bindings/scripts.json), read once."""
    global _bundle
    if _bundle is None:
        _bundle = redlimit.Bundle.load(MANIFEST)
    return _bundle


def _sf_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _ceil_seconds(d):
    if d <= _dt.timedelta(0):
        return 0
    return math.ceil(d / _dt.timedelta(seconds=1))


class NoClientAddress(ValueError):
    """The request's client address cannot be told; the middleware
    answers 400."""


def client_ip(request, trusted_proxies=(), ipv6_bits=64):
    """The key of a request's client address, as Go's clientip.Resolver makes
    it: "ip:192.0.2.1", or an IPv6 address as its /64 ("ip:2001:db8::/64").

    The address is the connection's peer unless that peer is in one of the
    trusted_proxies networks (ipaddress networks or strings such as
    "10.0.0.0/8"). Then X-Forwarded-For is read from its right end, where
    the nearest proxy wrote, skipping trusted proxies; the first address
    that is not one is the client, and nothing left of it (which the client
    may have written itself) is read. Raises NoClientAddress when there is
    no address to tell (the middleware answers 400)."""
    nets = [ipaddress.ip_network(p) for p in trusted_proxies]
    trusted = lambda a: any(a in n for n in nets)  # noqa: E731
    peer = _parse_addr(request.client.host if request.client else "")
    if peer is None:
        raise NoClientAddress(f"no client address: the peer is {request.client!r}")
    addr = peer
    if trusted(peer):
        hops = [h.strip() for v in request.headers.getlist("x-forwarded-for") for h in v.split(",")]
        for hop in reversed(hops):
            a = _parse_addr(hop)
            if a is None:
                raise NoClientAddress(f"no client address: a trusted proxy forwarded {hop!r}")
            addr = a
            if not trusted(a):
                break
    if addr.version == 6:
        bits = ipv6_bits if 0 < ipv6_bits <= 128 else 64
        return "ip:" + str(ipaddress.ip_network(f"{addr}/{bits}", strict=False))
    return "ip:" + str(addr)


def _parse_addr(s):
    """An address with or without a port ("192.0.2.1", "192.0.2.1:80",
    "2001:db8::1", "[2001:db8::1]:80"), IPv4-mapped IPv6 as IPv4; None
    when s is none of these."""
    candidates = [s]
    if s.startswith("[") and "]" in s:
        host, _, port = s[1:].partition("]")
        if port == "" or port[:1] == ":" and _port(port[1:]):
            candidates.append(host)
    elif s.count(":") == 1 and _port(s.partition(":")[2]):
        candidates.append(s.partition(":")[0])
    for text in candidates:
        try:
            a = ipaddress.ip_address(text)
        except ValueError:
            continue
        return (a.ipv4_mapped or a) if a.version == 6 else a
    return None


def _port(s):
    return re.fullmatch(r"[0-9]{1,5}", s) is not None and int(s) <= 65535


def _problem(status, title, type_="about:blank", detail=None, violated=None, headers=None):
    p = {"type": type_, "title": title, "status": status}
    if detail:
        p["detail"] = detail
    if violated:
        p["violated-policies"] = violated
    body = json.dumps(p, separators=(",", ":")).encode() + b"\n"
    return Response(body, status, headers=headers, media_type="application/problem+json")


class RateLimitMiddleware:
    """Limits every HTTP request the app serves.

    rule(request) says how: a (Policy, key) pair to count the request
    against, None to serve it without a limit (an allowlist), or a Response
    to answer at once without counting (an unknown API key's 401, say).
    cost(request) is what it counts (1 by default; 0 is refused, as in Go).
    on_failure is what happens when Redis cannot decide (down, timing out):
    FAIL_ERROR answers 503 (the default, as a Go limiter without WithFallback),
    FAIL_OPEN serves the request, FAIL_CLOSED answers 503 with the draft's
    reduced-capacity problem; both 503s carry Retry-After: 1. A script's own error (a key holding another
    script's state) is a 503 whatever the policy: it is a bug, not an outage.

    The call to Redis is redis-py's blocking one, run in Starlette's thread
    pool so the event loop keeps serving."""

    def __init__(self, app, *, redis, rule, cost=None, on_failure=FAIL_ERROR):
        if on_failure not in (FAIL_ERROR, FAIL_OPEN, FAIL_CLOSED):
            raise ValueError(f"on_failure {on_failure!r}: want FAIL_ERROR, FAIL_OPEN or FAIL_CLOSED")
        self.app, self.redis, self.rule, self.cost, self.on_failure = app, redis, rule, cost, on_failure

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        try:
            chosen = self.rule(request)
        except NoClientAddress as e:
            await _problem(400, "Bad Request", detail=str(e))(scope, receive, send)
            return
        if chosen is None:
            await self.app(scope, receive, send)
            return
        if isinstance(chosen, Response):
            await chosen(scope, receive, send)
            return
        policy, key = chosen
        cost = 1 if self.cost is None else self.cost(request)
        if not isinstance(cost, int) or isinstance(cost, bool) or not 1 <= cost <= 10**9:
            await _problem(500, "Internal Server Error")(scope, receive, send)  # the app's bug, as Go's ErrInvalidCost
            return
        headers = {"RateLimit-Policy": policy.policy_item()}
        try:
            d = await run_in_threadpool(policy.decide, self.redis, key, cost)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, redis.exceptions.BusyLoadingError):
            if self.on_failure == FAIL_OPEN:
                await self.app(scope, receive, _adding(send, headers))
            elif self.on_failure == FAIL_CLOSED:
                # Redis cannot say when to come back; a second, as the Go middleware says.
                headers["Retry-After"] = "1"
                await _problem(503, "Request cannot be satisfied due to temporary server capacity constraints",
                               REDUCED_CAPACITY, "The rate limiter cannot reach its store and fails closed.",
                               [policy.name], headers)(scope, receive, send)
            else:
                await _problem(503, "Service Unavailable", headers={"Retry-After": "1"})(scope, receive, send)
            return
        except (redlimit.Error, redis.exceptions.RedisError):
            await _problem(503, "Service Unavailable")(scope, receive, send)
            return
        headers.update(_limit_fields(policy, d))
        if d.allowed:
            await self.app(scope, receive, _adding(send, headers))
            return
        detail = ("This request costs more than the quota lets through at once: it can never pass."
                  if d.retry_after is redlimit.NEVER else f"Retry in {_ceil_seconds(d.retry_after)} s.")
        await _problem(429, "Request cannot be satisfied as assigned quota has been exceeded",
                       QUOTA_EXCEEDED, detail, [policy.name], headers)(scope, receive, send)


def _limit_fields(policy, d):
    """The fields ratelimit.SetHeaders writes for one decision."""
    never = d.retry_after is redlimit.NEVER
    t = d.retry_after if not d.allowed and not never else d.reset_after
    # A request that can never pass: nothing left for it, and no time at
    # which more will be (t is optional; t=0 would invite a retry at once).
    item = f"{_sf_string(policy.name)};r=0" if not d.allowed and never else \
        f"{_sf_string(policy.name)};r={d.remaining};t={_ceil_seconds(t)}"
    h = {
        "RateLimit": item,
        "X-RateLimit-Limit": str(policy.burst),
        "X-RateLimit-Remaining": str(d.remaining),
        "X-RateLimit-Reset": str(math.ceil(time.time() + d.reset_after / _dt.timedelta(seconds=1))),
    }
    if not d.allowed and not never and d.retry_after > _dt.timedelta(0):
        h["Retry-After"] = str(_ceil_seconds(d.retry_after))
    return h


def _adding(send, headers):
    """send, with headers added to the response's start."""
    extra = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]

    async def wrapped(message):
        if message["type"] == "http.response.start":
            message = dict(message)
            message["headers"] = list(message.get("headers", [])) + extra
        await send(message)

    return wrapped
