"""The Redis rate-limiting guide's FastAPI app, limited by the bundle's scripts.

    cd examples/python && /usr/bin/python3 app.py   # http://127.0.0.1:8000/

Anonymous requests are limited per client address (a token bucket); a
request with an X-API-Key is limited per user, by the plan of the key's
user: free or pro (GCRA). An unknown key is a 401 and counts against
nobody, so inventing keys buys no fresh bucket. /health is never limited.

    curl -i http://127.0.0.1:8000/                           # per IP
    curl -i -H 'X-API-Key: free-key' http://127.0.0.1:8000/  # alice, free plan
    curl -i -H 'X-API-Key: pro-key' http://127.0.0.1:8000/   # bob, pro plan

--redis HOST:PORT names the Redis (default 127.0.0.1:6379); without one,
when nothing answers there, the app starts a redis-server of its own on a
free port (Debian: apt-get install redis-server) and stops it on exit.
--listen HOST:PORT is where it serves (port 0 picks a free one; the first
line printed has the address). Needs FastAPI, uvicorn and redis-py: on
Debian, apt-get install python3-fastapi python3-uvicorn python3-redis, and
run /usr/bin/python3.
"""

import argparse
import contextlib
import datetime as dt
import shutil
import socket
import subprocess
import sys
import tempfile
import time

try:
    import redis
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse
except ImportError as e:  # the message is the point
    sys.exit(f"{e.name} is not importable by {sys.executable}.\n"
             "On Debian: apt-get install python3-fastapi python3-uvicorn python3-redis, then run /usr/bin/python3")

from ratelimit_middleware import Policy, RateLimitMiddleware, client_ip

MINUTE = dt.timedelta(minutes=1)

# API keys and their users' plans: a database in a real app.
USERS = {"free-key": ("alice", "free"), "pro-key": ("bob", "pro")}


def default_policies():
    """The guide's plans: 10 a minute per address for anonymous callers,
    100 a minute for free users, 1000 a minute (bursts of 100) for pro."""
    return {
        "ip": Policy("ip", rate=10, period=MINUTE, algorithm="token_bucket"),
        "free": Policy("free", rate=100, period=MINUTE),
        "pro": Policy("pro", rate=1000, period=MINUTE, burst=100),
    }


def create_app(client, policies=None, users=USERS, trusted_proxies=(), **options):
    """The app, limited on the Redis that client talks to. policies maps
    "ip", "free" and "pro" to their Policy; trusted_proxies are the
    networks of proxies whose X-Forwarded-For is believed; options go to
    RateLimitMiddleware (cost, on_failure)."""
    policies = policies or default_policies()

    def rule(request):
        if request.url.path == "/health":
            return None  # served, unlimited
        api_key = request.headers.get("x-api-key")
        if api_key is None:
            return policies["ip"], client_ip(request, trusted_proxies)
        user = users.get(api_key)
        if user is None:
            return JSONResponse({"detail": "unknown API key"}, status_code=401)
        name, plan = user
        return policies[plan], "user:" + name

    app = FastAPI(title="redlimit FastAPI example")
    app.add_middleware(RateLimitMiddleware, redis=client, rule=rule, **options)

    @app.get("/")
    def hello():
        return {"hello": "world"}

    @app.get("/health")
    def health():
        return {"ok": True}

    return app


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def own_redis():
    """A redis-server of its own on a free loopback port, without
    persistence, stopped on exit."""
    exe = shutil.which("redis-server")
    if exe is None:
        sys.exit("no Redis at 127.0.0.1:6379 and no redis-server on PATH: apt-get install redis-server, or give --redis HOST:PORT")
    port = free_port()
    with tempfile.TemporaryDirectory() as d:
        proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", d],
                                stdout=subprocess.DEVNULL)
        try:
            client = redis.Redis(port=port)
            for _ in range(100):
                try:
                    client.ping()
                    break
                except redis.exceptions.ConnectionError:
                    time.sleep(0.05)
            else:
                sys.exit("the redis-server it started does not answer")
            yield client, f"redis-server of its own at 127.0.0.1:{port}"
        finally:
            proc.terminate()
            proc.wait()


def main(argv=None):
    parser = argparse.ArgumentParser(description="The FastAPI example, limited by redlimit's scripts.")
    parser.add_argument("--redis", help="HOST:PORT of the Redis (default 127.0.0.1:6379, else a redis-server of its own)")
    parser.add_argument("--listen", default="127.0.0.1:8000", help="HOST:PORT to serve on (port 0: any free one)")
    opts = parser.parse_args(argv)
    try:
        import uvicorn
    except ImportError:
        sys.exit(f"uvicorn is not importable by {sys.executable}: apt-get install python3-uvicorn")
    host, _, port = opts.listen.rpartition(":")
    if not host or not port.isdigit():
        parser.error(f"--listen {opts.listen!r}: want HOST:PORT")

    with contextlib.ExitStack() as stack:
        if opts.redis:
            rhost, _, rport = opts.redis.rpartition(":")
            if not rhost or not rport.isdigit():
                parser.error(f"--redis {opts.redis!r}: want HOST:PORT")
            client, backend = redis.Redis(host=rhost, port=int(rport)), f"Redis at {opts.redis}"
        else:
            client, backend = redis.Redis(), "Redis at 127.0.0.1:6379"
            try:
                client.ping()
            except redis.exceptions.ConnectionError:
                client, backend = stack.enter_context(own_redis())
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), int(port)))
        sock.listen(128)  # connections wait in the backlog until uvicorn serves them
        stack.callback(sock.close)
        # Tests (tests/polyglot) read this line for the address.
        print(f"redlimit FastAPI example: http://{opts.listen.rpartition(':')[0]}:{sock.getsockname()[1]}/ ({backend}); Ctrl-C stops it", flush=True)
        server = uvicorn.Server(uvicorn.Config(create_app(client), log_level="warning"))
        server.run(sockets=[sock])
    print("stopped", flush=True)


if __name__ == "__main__":
    main()
