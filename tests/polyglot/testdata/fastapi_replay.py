"""Sends a list of requests through examples/python/app.py's app with
Starlette's TestClient and prints, one JSON line each, what it answered;
tests/polyglot/fastapi_test.go sends the same list through the Go
middleware and holds the two to each other.

Reads one JSON object on stdin:
    {"redis": "HOST:PORT", "prefix": "rl:py:", "on_failure": "error",
     "trusted": ["10.0.0.0/8"],
     "policies": {"ip": {"rate": 3, "period_ms": 3600000, "burst": 3, "algorithm": "token_bucket"}, ...},
     "requests": [{"path": "/", "peer": "203.0.113.7", "headers": {"X-API-Key": "free-key"}, "cost": 1}]}
"""

import datetime as dt
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "python"))

import redis  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

import app as example  # noqa: E402
import ratelimit_middleware as rlm  # noqa: E402


def main():
    cfg = json.load(sys.stdin)
    host, _, port = cfg["redis"].rpartition(":")
    client = redis.Redis(host=host, port=int(port), socket_connect_timeout=2, socket_timeout=2)
    policies = {
        name: rlm.Policy(name, rate=p["rate"], period=dt.timedelta(milliseconds=p["period_ms"]), burst=p["burst"],
                         algorithm=p["algorithm"], prefix=f"{cfg['prefix']}{name}:")
        for name, p in cfg["policies"].items()
    }
    costs = {}  # the test's cost of each request, by its X-Test-Seq
    app = example.create_app(client, policies, trusted_proxies=cfg.get("trusted", ()),
                             on_failure=cfg.get("on_failure", rlm.FAIL_ERROR),
                             cost=lambda request: costs[request.headers["x-test-seq"]])

    async def with_peer(scope, receive, send):
        # A real server puts the connection's peer in scope["client"];
        # TestClient always says "testclient".
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            scope = dict(scope, client=(headers[b"x-test-peer"].decode(), 50000))
        await app(scope, receive, send)

    with TestClient(with_peer, raise_server_exceptions=True) as tc:
        for i, req in enumerate(cfg["requests"]):
            costs[str(i)] = req.get("cost", 1)
            headers = dict(req.get("headers", {}), **{"X-Test-Peer": req["peer"], "X-Test-Seq": str(i)})
            r = tc.get(req["path"], headers=headers)
            print(json.dumps({"status": r.status_code, "headers": dict(r.headers), "body": r.text}), flush=True)


if __name__ == "__main__":
    main()
