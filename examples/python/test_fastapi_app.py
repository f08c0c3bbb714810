"""Tests of the FastAPI example (app.py, ratelimit_middleware.py).

    REDLIMIT_TEST_REDIS=127.0.0.1:6379 /usr/bin/python3 -m unittest -v test_fastapi_app

The tests that need a Redis use REDLIMIT_TEST_REDIS (a server they may
flush keys of: every key they write starts with "rl:test:"); tests/polyglot
(go test) starts a redis-server and passes it, and also holds the app to
the Go middleware, decision for decision. Without FastAPI (Debian:
python3-fastapi, python3-httpx) or without a Redis the tests skip, and say
so; where CI or REDLIMIT_REQUIRE_REDIS=1 is set they fail instead.
"""

import concurrent.futures
import datetime as dt
import ipaddress
import os
import time
import unittest
import unittest.mock
import uuid

REQUIRED = bool(os.environ.get("CI")) or os.environ.get("REDLIMIT_REQUIRE_REDIS") == "1"

try:
    import redis
    from starlette.testclient import TestClient

    import app as example
    import ratelimit_middleware as rlm
    import redlimit
    MISSING = None
except ImportError as e:  # checked in setUpModule: a failure under CI
    MISSING = f"{e.name} is not importable (Debian: apt-get install python3-fastapi python3-httpx python3-redis)"


def setUpModule():
    if MISSING:
        if REQUIRED:
            raise RuntimeError(MISSING + ", and CI or REDLIMIT_REQUIRE_REDIS=1 requires it")
        raise unittest.SkipTest("*** " + MISSING + ": the FastAPI example's tests did NOT run")


HOUR = dt.timedelta(hours=1)


def redis_client(test):
    """The Redis of REDLIMIT_TEST_REDIS; the test skips (fails under CI)
    without one."""
    addr = os.environ.get("REDLIMIT_TEST_REDIS")
    if not addr:
        if REQUIRED:
            test.fail("REDLIMIT_TEST_REDIS is not set, and CI or REDLIMIT_REQUIRE_REDIS=1 requires these tests")
        test.skipTest("*** REDLIMIT_TEST_REDIS is not set: the real-Redis tests did NOT run")
    host, _, port = addr.rpartition(":")
    client = redis.Redis(host=host, port=int(port))
    test.addCleanup(client.close)
    return client


def policies(prefix, ip=3, free=3, pro=5):
    return {
        "ip": rlm.Policy("ip", rate=ip, period=HOUR, algorithm="token_bucket", prefix=prefix + "ip:"),
        "free": rlm.Policy("free", rate=free, period=HOUR, prefix=prefix + "free:"),
        "pro": rlm.Policy("pro", rate=10, period=HOUR, burst=pro, prefix=prefix + "pro:"),
    }


def request(peer, forwarded=()):
    """A Starlette request from peer, with these X-Forwarded-For lines."""
    from starlette.requests import Request
    return Request({"type": "http", "client": (peer, 50000) if peer is not None else None,
                    "headers": [(b"x-forwarded-for", v.encode()) for v in forwarded]})


class TestWithoutRedis(unittest.TestCase):
    def test_policy_refuses_bad_limits_when_built(self):
        for kwargs, want in [
            (dict(name="x", rate=0, period=HOUR), redlimit.ArgError),
            (dict(name="x", rate=3, period=dt.timedelta(microseconds=1500)), redlimit.ArgError),
            (dict(name="x", rate=3, period=HOUR, burst=0), redlimit.ArgError),
            (dict(name="x y", rate=3, period=HOUR), ValueError),
            (dict(name="x", rate=3, period=HOUR, algorithm="leaky"), ValueError),
            (dict(name="x", rate=3, period=3600), TypeError),
            (dict(name="x", rate=3, period=HOUR, prefix="rl:{x}:"), ValueError),
        ]:
            with self.subTest(**{k: repr(v) for k, v in kwargs.items()}), self.assertRaises(want):
                rlm.Policy(**kwargs)

    def test_redis_key_as_go_builds_it(self):
        # ratelimit/key.go: the tag is the key with %, { and } escaped; past
        # 200 bytes, its SHA-256.
        for key, want in [
            ("user:42", "rl:x:{user:42}"),
            ("}{", "rl:x:{%7D%7B}"),
            ("100%", "rl:x:{100%25}"),
            ("a" * 200, "rl:x:{" + "a" * 200 + "}"),
            ("{" * 66, "rl:x:{" + "%7B" * 66 + "}"),
            # what Go's RedisKey answers for these
            ("a" * 201, "rl:x:{%#a92efd82109373e58f9a2056dee01e807e216ce6075f7051207c0a9f7d666e50}"),
            ("{" * 67, "rl:x:{%#6192f890032754295ce8cb77dacf4449b5ec2344789cb2bab94eccaf25250611}"),
        ]:
            self.assertEqual(rlm.redis_key("rl:x:", key), want)
        self.assertRaises(ValueError, rlm.redis_key, "rl:x:", "")

    def test_policy_item_as_go_writes_it(self):
        for p, want in [
            (rlm.Policy("free", rate=100, period=dt.timedelta(minutes=1)), '"free";q=100;w=60'),
            (rlm.Policy("pro", rate=1000, period=dt.timedelta(minutes=1), burst=100), '"pro";q=100;w=6'),
            (rlm.Policy("fast", rate=10, period=dt.timedelta(milliseconds=100)), '"fast";q=10;w=1'),
            (rlm.Policy("slow", rate=3, period=dt.timedelta(seconds=10), burst=2), '"slow";q=2;w=7'),
        ]:
            self.assertEqual(p.policy_item(), want)

    def test_client_ip(self):
        proxies = ["10.0.0.0/8", ipaddress.ip_network("2001:db8:ffff::/48")]
        for req, want in [
            (request("203.0.113.7"), "ip:203.0.113.7"),
            (request("::ffff:203.0.113.7"), "ip:203.0.113.7"),
            (request("2001:db8:1:2:3:4:5:6"), "ip:2001:db8:1:2::/64"),
            # a client's own X-Forwarded-For is never read
            (request("203.0.113.7", ["198.51.100.1"]), "ip:203.0.113.7"),
            # through trusted proxies, the nearest untrusted hop; what lies left of it is the client's to forge
            (request("10.0.0.1", ["6.6.6.6, 198.51.100.1:443, 10.1.1.1"]), "ip:198.51.100.1"),
            (request("10.0.0.1", ["6.6.6.6", "[2001:db8::9]:443", "2001:db8:ffff::1"]), "ip:2001:db8::/64"),
            (request("10.0.0.1", ["10.0.0.2"]), "ip:10.0.0.2"),
        ]:
            with self.subTest(peer=req.client, forwarded=req.headers.getlist("x-forwarded-for")):
                self.assertEqual(rlm.client_ip(req, proxies), want)
        for req in [request(None), request("testclient"), request("10.0.0.1", ["1.2.3.4, junk"]), request("10.0.0.1", ["1.2.3.4:99999"])]:
            with self.subTest(peer=req.client, forwarded=req.headers.getlist("x-forwarded-for")), self.assertRaises(rlm.NoClientAddress):
                rlm.client_ip(req, proxies)


class TestWithRedis(unittest.TestCase):
    def setUp(self):
        self.redis = redis_client(self)
        self.prefix = f"rl:test:{uuid.uuid4().hex}:"
        self.addCleanup(lambda: [self.redis.delete(k) for k in self.redis.scan_iter(self.prefix + "*")])
        self.app = example.create_app(self.redis, policies(self.prefix))

    def get(self, client, path="/", **headers):
        return client.get(path, headers=headers)

    def test_free_and_pro_per_user(self):
        with TestClient(self.app) as c:
            free = [self.get(c, **{"X-API-Key": "free-key"}) for _ in range(4)]
            pro = [self.get(c, **{"X-API-Key": "pro-key"}) for _ in range(6)]
        self.assertEqual([r.status_code for r in free], [200, 200, 200, 429])
        self.assertEqual([r.status_code for r in pro], [200] * 5 + [429])
        self.assertEqual(free[0].headers["RateLimit-Policy"], '"free";q=3;w=3600')
        self.assertEqual(free[0].headers["RateLimit"], '"free";r=2;t=1200')
        denied = free[3]
        self.assertEqual(denied.headers["Retry-After"], "1200")
        self.assertEqual(denied.headers["RateLimit"], '"free";r=0;t=1200')
        self.assertEqual(denied.headers["Content-Type"], "application/problem+json")
        self.assertEqual(denied.json(), {
            "type": rlm.QUOTA_EXCEEDED, "title": "Request cannot be satisfied as assigned quota has been exceeded",
            "status": 429, "detail": "Retry in 1200 s.", "violated-policies": ["free"]})
        self.assertEqual(pro[5].headers["RateLimit-Policy"], '"pro";q=5;w=1800')

    def test_unknown_key_counts_against_nobody(self):
        with TestClient(self.app) as c:
            for i in range(5):
                r = self.get(c, **{"X-API-Key": f"invented-{i}"})
                self.assertEqual(r.status_code, 401)
                self.assertNotIn("RateLimit-Policy", r.headers)
        self.assertEqual(list(self.redis.scan_iter(self.prefix + "*")), [])

    def test_health_is_not_limited(self):
        with TestClient(self.app) as c:
            rs = [self.get(c, "/health") for _ in range(5)]
        self.assertEqual([r.status_code for r in rs], [200] * 5)
        self.assertNotIn("RateLimit", rs[-1].headers)

    def test_cost_above_burst_can_never_pass(self):
        app = example.create_app(self.redis, policies(self.prefix), cost=lambda request: 4)
        with TestClient(app) as c:
            r = self.get(c, **{"X-API-Key": "free-key"})
        self.assertEqual(r.status_code, 429)
        self.assertNotIn("Retry-After", r.headers)  # waiting would not help
        self.assertEqual(r.headers["RateLimit"], '"free";r=0')  # no t: no time helps
        self.assertIn("can never pass", r.json()["detail"])

    def test_bad_cost_is_the_apps_bug(self):
        for cost in (0, -1, 1.5, True, 10**9 + 1):
            app = example.create_app(self.redis, policies(self.prefix), cost=lambda request: cost)
            with self.subTest(cost=cost), TestClient(app) as c:
                self.assertEqual(self.get(c, **{"X-API-Key": "free-key"}).status_code, 500)
        self.assertEqual(list(self.redis.scan_iter(self.prefix + "*")), [])

    def test_app_server_clock_changes_no_decision(self):
        # The guide's script decides on time.time() from the app server; these
        # scripts read Redis's TIME. An app server an hour fast or slow admits
        # exactly what a right one does; only X-RateLimit-Reset, an instant
        # on the client's clock, moves.
        for offset in (-3600, 0, 3600):
            prefix = f"{self.prefix}{offset}:"
            app = example.create_app(self.redis, policies(prefix))
            real = time.time
            with self.subTest(offset=offset), unittest.mock.patch("time.time", lambda: real() + offset), TestClient(app) as c:
                start = time.monotonic()
                rs = [self.get(c, **{"X-API-Key": "free-key"}) for _ in range(4)]
                took = time.monotonic() - start
                self.assertEqual([r.status_code for r in rs], [200, 200, 200, 429])
                # 1200 s from the first admission, less the time the calls
                # took (a loaded machine can take a second).
                wait = int(rs[3].headers["Retry-After"])
                self.assertTrue(1200 - took - 1 <= wait <= 1200, f"Retry-After {wait} after {took:.3f} s")

    def test_concurrent_callers_never_over_admit(self):
        # The guide's HMGET-then-HMSET lets two app servers spend one token;
        # one script call cannot. 16 threads, 8 requests each, a burst of 10.
        app = example.create_app(self.redis, policies(self.prefix, free=10))

        def caller(_):
            with TestClient(app) as c:
                return [self.get(c, **{"X-API-Key": "free-key"}).status_code for _ in range(8)]

        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            statuses = [s for batch in pool.map(caller, range(16)) for s in batch]
        self.assertEqual(statuses.count(200), 10)
        self.assertEqual(statuses.count(429), 16 * 8 - 10)


if __name__ == "__main__":
    unittest.main()
