"""Decides with redlimit's scripts from the command line, through redlimit.py.

    /usr/bin/python3 examples/python/demo.py                  # gcra and token_bucket, 5 calls each
    /usr/bin/python3 examples/python/demo.py --via fcall      # the same through the Functions library
    /usr/bin/python3 examples/python/demo.py --calls 5 --json gcra 'rl:{alice}' burst=3 rate=3 period=1h take=all requests=1

A SCRIPT KEY... NAME=VALUE... call names its script, keys and arguments as
the manifest does. Durations are an integer in the argument's wire unit
(the manifest's unit) or carry one of the suffixes us, ms, s, m, h;
instants are an integer in their wire unit, 0 for the server's clock.
Records are separated by commas, their fields by / in the manifest's
order, and trailing instants may be left out: requests=1,1,0 is three
requests of gcra.lua (costs 1, 1 and a peek, no deadlines).

Exit status: 0 when every call got a decision, 1 on an error reply or a
Redis error, 2 when an argument is refused before anything is sent.
"""

import argparse
import datetime as dt
import json
import os
import re
import sys

try:
    import redis
except ImportError:  # the message is the point
    sys.exit(
        f"redis-py is not importable by {sys.executable}.\n"
        "On Debian: apt-get install python3-redis, then run /usr/bin/python3; elsewhere: pip install redis"
    )

import redlimit

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(HERE, "..", "..", "bindings", "scripts.json")

# The demo without arguments: two algorithms, each 3 per hour, 5 calls.
DEMO = [
    ("gcra", {"burst": "3", "rate": "3", "period": "1h", "take": "all", "requests": "1"}),
    ("token_bucket", {"capacity": "3", "rate": "3", "period": "1h", "refill": "smooth", "requests": "1"}),
]

_SUFFIX = {"us": dt.timedelta(microseconds=1), "ms": dt.timedelta(milliseconds=1),
           "s": dt.timedelta(seconds=1), "m": dt.timedelta(minutes=1), "h": dt.timedelta(hours=1)}
_WIRE = {"microseconds": "us", "milliseconds": "ms", "seconds": "s"}


def parse_value(field, text):
    """Reads one command-line value as the manifest's type for field."""
    t = field["type"]
    if t in ("string", "enum"):
        return text
    if t == "bool":
        if text in ("1", "true"):
            return True
        if text in ("0", "false"):
            return False
        raise ValueError(f"{field['name']}: {text!r} is not 1, 0, true or false")
    if t == "float":
        return float(text)
    m = re.fullmatch(r"(-?\d+)(us|ms|s|m|h)?", text)
    if not m:
        raise ValueError(f"{field['name']}: {text!r} is not an integer")
    n, suffix = int(m.group(1)), m.group(2)
    if t == "int":
        if suffix:
            raise ValueError(f"{field['name']}: an int takes no unit, got {text!r}")
        return n
    unit = _SUFFIX[suffix or _WIRE[field["unit"]]]
    if t.startswith("unix_"):
        if suffix:
            raise ValueError(f"{field['name']}: an instant is an integer in {field['unit']} since the epoch, got {text!r}")
        return None if n == 0 else redlimit._EPOCH + n * unit
    return n * unit


def parse_record(field, text):
    """Reads one record, its fields separated by /, into a dict by name;
    instants at its end may be left out."""
    parts, fields = text.split("/"), field["fields"]
    if len(parts) > len(fields) or any(not sub["type"].startswith("unix_") for sub in fields[len(parts):]):
        names = "/".join(sub["name"] for sub in fields)
        raise ValueError(f"{field['name']}: {text!r} is not {names}")
    return {sub["name"]: parse_value(sub, p) for sub, p in zip(fields, parts)}


def parse_args(script, pairs):
    args = {}
    fields = {f["name"]: f for f in script.args}
    for pair in pairs:
        name, eq, text = pair.partition("=")
        if not eq:
            raise ValueError(f"{pair!r} is not NAME=VALUE")
        f = fields.get(name)
        if f is None:
            raise ValueError(f"{script.name} has no argument {name}; it takes {', '.join(fields)}")
        if f.get("type") == "record":
            # Records separated by commas, their fields by / in the
            # manifest's order: limits=3/3/1h,100/100/1d.
            args[name] = [parse_record(f, v) for v in text.split(",") if v != ""]
        elif f.get("variadic"):
            args[name] = [parse_value(f, v) for v in text.split(",") if v != ""]
        else:
            args[name] = parse_value(f, text)
    return args


def to_json(v):
    if v is redlimit.NEVER:
        return "never"
    if isinstance(v, dt.timedelta):
        ms = v / dt.timedelta(milliseconds=1)
        return int(ms) if ms == int(ms) else ms
    if isinstance(v, dt.datetime):
        return v.isoformat()
    if isinstance(v, tuple) and hasattr(v, "_asdict"):  # a record
        return {k: to_json(x) for k, x in v._asdict().items()}
    if isinstance(v, tuple):
        return [to_json(x) for x in v]
    if isinstance(v, redlimit.Sentinel):
        return str(v)
    return v


def to_text(v):
    if v is redlimit.NEVER:
        return "never"
    if isinstance(v, tuple) and hasattr(v, "_asdict"):  # a record
        return " ".join(f"{k}={to_text(x)}" for k, x in v._asdict().items())
    if isinstance(v, tuple):
        return "[" + ", ".join(to_text(x) for x in v) + "]"
    return str(v)


def decide(r, script, keys, args, opts):
    """Runs calls of one script; returns the exit status."""
    for i in range(1, opts.calls + 1):
        try:
            if opts.via == "fcall":
                reply = script.fcall(r, keys, **args)
            else:
                reply = script(r, keys, **args)
        except redlimit.ArgError as e:
            return fail(opts, i, "ArgError", str(e), 2)
        except redlimit.ScriptError as e:
            return fail(opts, i, e.code, e.message, 1)
        except (redlimit.Error, redis.exceptions.RedisError) as e:
            return fail(opts, i, type(e).__name__, str(e), 1)
        if opts.json:
            line = {"script": script.name, "via": opts.via, "call": i}
            line.update((r["name"], to_json(v)) for r, v in zip(script.returns, reply))
            print(json.dumps(line), flush=True)
        else:
            print(f"{script.name:<14} call {i}: " + " ".join(f"{r['name']}={to_text(v)}" for r, v in zip(script.returns, reply)))
    return 0


def fail(opts, call, kind, message, status):
    if opts.json:
        print(json.dumps({"call": call, "error": kind, "message": message}), flush=True)
    print(f"call {call}: {kind}: {message}", file=sys.stderr)
    return status


def host_port(text):
    """--redis's type: HOST:PORT with a port 1 to 65535; HOST may be empty
    (127.0.0.1). The text itself is kept for messages."""
    _, colon, port = text.rpartition(":")
    if not colon or not re.fullmatch(r"[0-9]+", port) or not 1 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT with a port 1 to 65535")
    return text


def positive_int(text):
    """--calls's type: an integer of at least 1."""
    if not re.fullmatch(r"[0-9]+", text) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--manifest", default=MANIFEST, help="luagen's scripts.json (default: the repository's bindings/scripts.json)")
    p.add_argument("--redis", type=host_port, default="127.0.0.1:6379", metavar="HOST:PORT")
    p.add_argument("--via", choices=("evalsha", "fcall"), default="evalsha",
                   help="EVALSHA (EVAL on NOSCRIPT), or FCALL of the Functions library (loaded when missing)")
    p.add_argument("--load-functions", action="store_true", help="FUNCTION LOAD REPLACE the library first")
    p.add_argument("--calls", type=positive_int, default=5, help="calls per script (default 5)")
    p.add_argument("--json", action="store_true", help="one JSON object per call; durations in ms, never as \"never\"")
    p.add_argument("script", nargs="?", help="a script the manifest names; none runs the demo")
    p.add_argument("key", nargs="?", help="its key (several: comma-separated)")
    p.add_argument("arg", nargs="*", help="NAME=VALUE, one per argument")
    opts = p.parse_args(argv)

    try:
        bundle = redlimit.Bundle.load(opts.manifest)
    except (OSError, ValueError, redlimit.Error) as e:
        print(f"{opts.manifest}: {e}", file=sys.stderr)
        return 2
    host, _, port = opts.redis.rpartition(":")
    r = redis.Redis(host=host or "127.0.0.1", port=int(port))
    try:
        if opts.load_functions:
            bundle.load_functions(r)
        if opts.script is None:
            status = 0
            for name, text in DEMO:
                script = bundle[name]
                key = f"redlimit-example:{{python-{os.getpid()}}}:{name}"
                status = status or decide(r, script, [key], parse_args(script, [f"{k}={v}" for k, v in text.items()]), opts)
            return status
        if opts.script not in bundle:
            p.error(f"no script {opts.script!r} in {opts.manifest}; it has {', '.join(s.name for s in bundle)}")
        script = bundle[opts.script]
        keys = opts.key.split(",") if opts.key else []
        try:
            args = parse_args(script, opts.arg)
        except ValueError as e:
            return fail(opts, 0, "ArgError", str(e), 2)
        return decide(r, script, keys, args, opts)
    except redis.exceptions.RedisError as e:
        print(f"redis {opts.redis}: {e}", file=sys.stderr)
        return 1
    finally:
        r.close()


if __name__ == "__main__":
    sys.exit(main())
