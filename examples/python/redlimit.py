"""redlimit's rate-limiting scripts from Python, with redis-py.

Everything this module knows about a script comes from the manifest that
luagen writes next to the Go bindings, ``bindings/scripts.json`` (described
by ``bindings/scripts.schema.json``): the script's file and SHA1, the command to
call it with, what each KEYS and ARGV position means, each argument's type,
unit, bounds and words, the reply's elements and the error codes. Nothing
about a particular script is written here, so a script added to the bundle
is callable the day its manifest entry appears.

    import redis
    from datetime import timedelta
    from redlimit import Bundle, NEVER

    bundle = Bundle.load("bindings/scripts.json")
    r = redis.Redis()
    gcra = bundle["gcra"]
    reply = gcra(r, ["rl:{user:42}"], burst=10, rate=10, period=timedelta(seconds=1),
                 take="all", requests=[{"cost": 1}])
    d = reply.decisions[0]  # one per request
    if d.allowed != 1:
        wait = d.retry_after  # a timedelta, or NEVER when the cost can never pass

Values follow the manifest's types: ``int`` is an int, ``bool`` a bool,
``string`` and ``enum`` a str, durations (``ms``, ``us``, ``s``) a
``datetime.timedelta`` that must be a whole number of the wire unit (never
rounded), instants (``unix_ms``, ``unix_us``, ``unix_s``) an aware
``datetime`` rounded down to the unit, or None for 0, which the bundled
scripts read as "use the server's clock" (so an instant argument may be left
out). Bounds are checked before anything is sent (ArgError); the scripts
check them again, and what only the server can tell (a caller clock more
than 60 s from its TIME) comes back as a ScriptError with code BADARG.

A field's ``sentinels`` are wire values outside its bounds that mean
something else, and the manifest names them: a duration's ``never``
decodes to NEVER, the largest timedelta, so ``d.retry_after > budget``
reads right without a special case (and NEVER is sent as it); an instant's
0 (``server_clock``) is None both ways; any other sentinel comes back as a
Sentinel, a str holding its name, and is sent when passed as one.

A variadic ``record`` (multi.lua's ``limits``: burst, rate, period; gcra.lua's
``requests``: cost, deadline) takes a list of dicts keyed by the record's
field names (an instant field may be left out, as an instant argument may)
and comes back as a tuple of named tuples; ``min_count``/``max_count`` bound
how many, and a string's ``pattern`` must match the whole string. All of it
is checked before anything is sent.
"""

from __future__ import annotations

import collections
import collections.abc
import datetime as _dt
import decimal
import hashlib
import json
import keyword
import math
import os
import re

import redis

# The manifest version this module reads; a new one changes what a field
# means, so it is refused rather than half understood.
MANIFEST_VERSION = 3

# A duration that never ends: what a duration's sentinel "never" decodes to.
NEVER = _dt.timedelta.max


class Sentinel(str):
    """A field's named sentinel (the manifest's ``sentinels``): pass
    Sentinel("never") to send it; a reply element holding one decodes to
    it (but a duration's never, which is NEVER, and an instant's 0, None)."""

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_US = _dt.timedelta(microseconds=1)
_PER_UNIT = {"milliseconds": 1000, "microseconds": 1, "seconds": 1_000_000}  # µs
_DURATIONS = {"ms", "us", "s"}
_INSTANTS = {"unix_ms", "unix_us", "unix_s"}
_SCALARS = {"int", "float", "bool", "string", "enum"}
_INT_TYPES = {"int"} | _DURATIONS | _INSTANTS
# An integer as Redis writes one: what the scripts accept, and what a
# reply element that the manifest says "a string holding a decimal
# integer" may hold.
_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)\Z")


class Error(Exception):
    """Base class of this module's errors."""


class ManifestError(Error):
    """The manifest, or a file it names, cannot be used."""


class ArgError(Error, ValueError):
    """An argument the manifest refuses; nothing was sent."""

    def __init__(self, script, name, reason):
        super().__init__(f"{script}: argument {name}: {reason}")
        self.script, self.name, self.reason = script, name, reason


class ReplyError(Error):
    """A reply that does not fit the manifest's returns."""


class ScriptError(Error):
    """An error reply whose first word is one of the script's error codes
    (the manifest's ``errors``), such as BADARG for bad input."""

    def __init__(self, script, code, message):
        super().__init__(f"{script}: {code} {message}")
        self.script, self.code, self.message = script, code, message


class FunctionsStaleError(Error):
    """The server holds other code under the library's name, without this
    script's function: run Bundle.load_functions to replace it."""


def _field_kind(script, f):
    t = f.get("type")
    if t == "record":
        fields = f.get("fields") or []
        if not f.get("variadic") or len(fields) < 2:
            raise ManifestError(f"{script}: {f.get('name')}: a record is variadic and has two fields or more")
        for sub in fields:
            if _field_kind(script, sub) == "record":
                raise ManifestError(f"{script}: {f.get('name')}: a record inside a record")
        return t
    if f.get("pattern") is not None:
        f["_re"] = re.compile(f["pattern"])
    if t in _DURATIONS or t in _INSTANTS:
        if f.get("unit") not in _PER_UNIT:
            raise ManifestError(f"{script}: {f.get('name')}: type {t} without a known unit")
    elif t not in _SCALARS:
        raise ManifestError(f"{script}: {f.get('name')}: unknown type {t!r}")
    if t == "enum" and not f.get("enum"):
        raise ManifestError(f"{script}: {f.get('name')}: enum without words")
    return t


def _ident(name):
    """A manifest name as a Python identifier: a keyword gets a trailing _,
    as PEP 8 suggests."""
    return name + "_" if keyword.iskeyword(name) else name


class Script:
    """One script of the bundle. Call it to run it with EVALSHA (EVAL when
    the server has lost it); ``fcall`` runs it from the Functions library."""

    def __init__(self, entry, base, library):
        self.name = entry["name"]
        self.command = entry["command"]
        self.sha1 = entry["sha1"]
        self.keys = entry["keys"]
        self.args = entry["args"]
        self.returns = entry["returns"]
        self.errors = {e["code"] for e in entry["errors"]}
        self.function = entry.get("function")
        self._library = library
        for f in self.args + self.returns:
            _field_kind(self.name, f)
        for group in (self.keys, self.args, self.returns):
            if any(f.get("variadic") for f in group[:-1]):
                raise ManifestError(f"{self.name}: only the last of a list may be variadic")
        path = os.path.join(base, *entry["file"].split("/"))
        try:
            with open(path, "rb") as fh:
                self.source = fh.read()
        except OSError as e:
            raise ManifestError(f"{self.name}: {e}") from e
        if hashlib.sha1(self.source).hexdigest() != self.sha1:
            raise ManifestError(f"{self.name}: {path} does not match the manifest's sha1: regenerate the manifest, or copy the files together")
        # The reply as a named tuple, fields named as the manifest's returns
        # (a Python keyword gets a trailing _, as PEP 8 suggests).
        title = "".join(p.capitalize() for p in self.name.split("_"))
        self.Reply = collections.namedtuple(title + "Reply", [_ident(r["name"]) for r in self.returns])
        # Each record of the reply as a named tuple of its fields.
        self._records = {
            r["name"]: collections.namedtuple(title + "".join(p.capitalize() for p in r["name"].split("_")), [_ident(x["name"]) for x in r["fields"]])
            for r in self.returns if r["type"] == "record"
        }

    def __repr__(self):
        return f"<redlimit.Script {self.name}>"

    # Building a call.

    def encode(self, keys, args):
        """Checks keys and args against the manifest and returns the KEYS and
        ARGV lists to send, ARGV in the manifest's order."""
        if isinstance(keys, (str, bytes)):
            raise ArgError(self.name, "keys", "takes a list of keys, not one str")
        keys = list(keys)
        nkeys = len(self.keys)
        variadic_key = nkeys > 0 and self.keys[-1].get("variadic")
        if len(keys) != nkeys and not (variadic_key and len(keys) >= nkeys - 1):
            want = f"at least {nkeys - 1}" if variadic_key else str(nkeys)
            names = ", ".join(k["name"] for k in self.keys)
            raise ArgError(self.name, "keys", f"takes {want} key(s) ({names}), got {len(keys)}")
        if variadic_key:
            last = self.keys[-1]
            rest = keys[nkeys - 1:]
            self._check_count(last, rest, "keys")
            if last.get("fields"):  # records of keys: dicts by field name
                flat = []
                for rec in rest:
                    flat.extend(self._record(last, rec, lambda sub, v: v))
                keys = keys[:nkeys - 1] + flat
        for k in keys:
            if not isinstance(k, (str, bytes)):
                raise ArgError(self.name, "keys", f"a key must be str or bytes, got {type(k).__name__}")
        unknown = set(args) - {a["name"] for a in self.args}
        if unknown:
            raise ArgError(self.name, sorted(unknown)[0], "no such argument; takes " + ", ".join(a["name"] for a in self.args))
        argv = []
        for f in self.args:
            name = f["name"]
            # A variadic that may be empty (a settle after the deadline) may
            # be left out.
            optional = f.get("variadic") and f.get("min_count") == 0
            if name not in args and f["type"] not in _INSTANTS and not optional:
                raise ArgError(self.name, name, "missing")
            value = args.get(name, [] if optional else None)
            if f.get("variadic"):
                if isinstance(value, (str, bytes, dict)) or not isinstance(value, collections.abc.Iterable):
                    raise ArgError(self.name, name, "takes a list of values (the rest of ARGV)")
                value = list(value)
                self._check_count(f, value, "records" if f["type"] == "record" else "values")
                for v in value:
                    if f["type"] == "record":
                        argv.extend(self._record(f, v, self._encode_value))
                    else:
                        argv.append(self._encode_value(f, v))
            else:
                argv.append(self._encode_value(f, value))
        return keys, argv

    def _check_count(self, f, values, what):
        lo, hi = f.get("min_count"), f.get("max_count")
        n = len(values)
        if (lo is not None and n < lo) or (hi is not None and n > hi):
            raise ArgError(self.name, f["name"], f"{n} {what}: the count is out of range [{'' if lo is None else lo}..{'' if hi is None else hi}]")

    def _record(self, f, rec, encode):
        """One record (a dict by the record's field names), field by field in
        the manifest's order."""
        if not isinstance(rec, collections.abc.Mapping):
            raise ArgError(self.name, f["name"], f"each record is a dict of {', '.join(s['name'] for s in f['fields'])}, got {type(rec).__name__}")
        names = [sub["name"] for sub in f["fields"]]
        unknown = set(rec) - set(names)
        if unknown:
            raise ArgError(self.name, f["name"], f"record field {sorted(unknown)[0]!r}: no such field; takes {', '.join(names)}")
        out = []
        for sub in f["fields"]:
            if sub["name"] not in rec and sub["type"] not in _INSTANTS:
                raise ArgError(self.name, sub["name"], f"missing from a record of {f['name']}")
            out.append(encode(sub, rec.get(sub["name"])))
        return out

    def _encode_value(self, f, v):
        name, t = f["name"], f["type"]

        def fail(reason):
            raise ArgError(self.name, name, reason)

        sentinels = {x["name"]: x["value"] for x in f.get("sentinels", [])}
        if isinstance(v, Sentinel):
            if v not in sentinels:
                fail(f"has no sentinel {v!r}; it has {', '.join(sentinels) or 'none'}")
            return str(sentinels[v])
        if t == "string":
            if not isinstance(v, (str, bytes)):
                fail(f"must be str, got {type(v).__name__}")
            text = v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else v
            if "_re" in f and not f["_re"].fullmatch(text):
                fail(f"{v!r} does not match {f['pattern']}")
            return v
        if t == "enum":
            if v not in f["enum"]:
                fail(f"must be one of {', '.join(f['enum'])}, got {v!r}")
            return v
        if t == "bool":
            if not isinstance(v, bool):
                fail(f"must be a bool, got {type(v).__name__}")
            return "1" if v else "0"
        if t == "float":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                fail(f"must be a finite number, got {v!r}")
            self._check_bounds(f, v, fail)
            # Decimal digits, never an exponent: Lua's tonumber in some
            # servers (miniredis) refuses 1e-07.
            return format(decimal.Decimal(repr(float(v))), "f")
        if t == "int":
            if isinstance(v, bool) or not isinstance(v, int):
                fail(f"must be an int, got {type(v).__name__}")
            n = v
        elif t in _DURATIONS:
            if v is NEVER and "never" in sentinels:
                return str(sentinels["never"])
            if not isinstance(v, _dt.timedelta):
                fail(f"must be a datetime.timedelta, got {type(v).__name__}")
            per = _PER_UNIT[f["unit"]]
            us = v // _US
            if us % per:
                fail(f"{v} is not a whole number of {f['unit']}")
            n = us // per
        else:  # an instant
            if v is None:
                n = 0
            elif not isinstance(v, _dt.datetime):
                fail(f"must be an aware datetime or None, got {type(v).__name__}")
            elif v.tzinfo is None or v.utcoffset() is None:
                fail("a naive datetime has no time zone: give it one (datetime.now(timezone.utc))")
            else:
                n = ((v - _EPOCH) // _US) // _PER_UNIT[f["unit"]]  # rounded down
                # 0 is the scripts' word for "the server's clock": an instant
                # that rounds to it is refused, not quietly made another clock.
                if n == 0:
                    fail(f"{v.isoformat()} rounds to 0 {f['unit']}, which reads as the server's clock: pass None for that")
        self._check_bounds(f, n, fail)
        return str(n)

    @staticmethod
    def _check_bounds(f, n, fail):
        lo, hi = f.get("min"), f.get("max")
        if n in {x["value"] for x in f.get("sentinels", [])}:
            return
        if (lo is not None and n < lo) or (hi is not None and n > hi):
            unit = f" {f['unit']}" if "unit" in f else ""
            also = "".join(f" or {x['value']}" for x in f.get("sentinels", []))
            fail(f"{n}{unit} is out of range [{'' if lo is None else lo}..{'' if hi is None else hi}]{also}")

    # Reading a reply.

    def decode(self, reply):
        """Reads a reply by the manifest's returns into a Reply named tuple."""
        rets = self.returns
        variadic = bool(rets) and rets[-1].get("variadic")
        if not isinstance(reply, list):
            if len(rets) == 1 and not variadic:
                reply = [reply]  # a script with one return may reply with the bare value
            else:
                raise ReplyError(f"{self.name}: reply is {reply!r}, not a list of {len(rets)}")
        fixed = len(rets) - 1 if variadic else len(rets)
        if len(reply) < fixed or (not variadic and len(reply) != fixed):
            raise ReplyError(f"{self.name}: reply has {len(reply)} elements, the manifest lists {len(rets)}: {reply!r}")
        values = [self._decode_value(f, v) for f, v in zip(rets[:fixed], reply)]
        if variadic:
            last, rest = rets[-1], reply[fixed:]
            if last["type"] == "record":
                size = len(last["fields"])
                if len(rest) % size:
                    raise ReplyError(f"{self.name}: {last['name']} has {len(rest)} elements, not whole records of {size}")
                records = [rest[i:i + size] for i in range(0, len(rest), size)]
                self._check_reply_count(last, records)
                values.append(tuple(self._records[last["name"]](*(self._decode_value(sub, v) for sub, v in zip(last["fields"], r))) for r in records))
            else:
                self._check_reply_count(last, rest)
                values.append(tuple(self._decode_value(last, v) for v in rest))
        return self.Reply(*values)

    def _check_reply_count(self, f, values):
        lo, hi = f.get("min_count"), f.get("max_count")
        if (lo is not None and len(values) < lo) or (hi is not None and len(values) > hi):
            raise ReplyError(f"{self.name}: {f['name']} has {len(values)}, want [{'' if lo is None else lo}..{'' if hi is None else hi}]")

    def _decode_value(self, f, v):
        name, t = f["name"], f["type"]

        def fail(want):
            raise ReplyError(f"{self.name}: reply element {name} is {v!r}, want {want}")

        if isinstance(v, bytes):
            v = v.decode("utf-8", "surrogateescape")
        if t == "string":
            if not isinstance(v, str):
                fail("a string")
            if "_re" in f and not f["_re"].fullmatch(v):
                fail("a string matching " + f["pattern"])
            return v
        if t == "enum":
            if v not in f["enum"]:
                fail("one of " + ", ".join(f["enum"]))
            return v
        if t == "bool":
            if v in (1, 0) and not isinstance(v, float):  # RESP3 gives True/False
                return bool(v)
            fail("1 or 0")
        if t == "float":
            try:
                x = float(v)
            except (TypeError, ValueError):
                fail("a number")
            self._check_reply_bounds(f, x, fail)
            return x
        if isinstance(v, int) and not isinstance(v, bool):
            n = v
        elif isinstance(v, str) and _INTEGER.match(v):
            n = int(v)
        else:
            fail("an integer")
        named = {x["value"]: x["name"] for x in f.get("sentinels", [])}
        if n in named:
            if t in _DURATIONS and named[n] == "never":
                return NEVER
            if t in _INSTANTS:
                return None  # an instant's sentinel is 0, the zero time
            return Sentinel(named[n])
        self._check_reply_bounds(f, n, fail)
        if t == "int":
            return n
        us = n * _PER_UNIT[f["unit"]]
        if t in _DURATIONS:
            return _dt.timedelta(microseconds=us)
        return None if n == 0 else _EPOCH + _dt.timedelta(microseconds=us)

    @staticmethod
    def _check_reply_bounds(f, n, fail):
        lo, hi = f.get("min"), f.get("max")
        if (lo is not None and n < lo) or (hi is not None and n > hi):
            fail(f"a value in [{'' if lo is None else lo}..{'' if hi is None else hi}]")

    # Running it.

    def __call__(self, client, keys, /, **args):
        """Runs the script with the manifest's command (EVALSHA or
        EVALSHA_RO) and, when the server answers NOSCRIPT (a restart, a
        failover, SCRIPT FLUSH), once more with EVAL / EVAL_RO and the file."""
        keys, argv = self.encode(keys, args)
        command = self.command
        try:
            try:
                reply = client.execute_command(command, self.sha1, len(keys), *keys, *argv)
            except redis.exceptions.NoScriptError:
                reply = client.execute_command(command.replace("SHA", ""), self.source, len(keys), *keys, *argv)
        except redis.exceptions.ResponseError as e:
            raise self._error(e) from e
        return self.decode(reply)

    def fcall(self, client, keys, /, **args):
        """Runs the script's function in the Functions library (FCALL or
        FCALL_RO). Where the server has no such function and no library of
        that name (FUNCTION FLUSH, a restart without persistence), it loads
        the library and calls once more; it never replaces a library that is
        there (Bundle.load_functions does, at deploy time)."""
        if not self.function or not self._library:
            raise ManifestError(f"{self.name}: the manifest names no Functions library for it")
        keys, argv = self.encode(keys, args)
        call = (self.function["command"], self.function["name"], len(keys), *keys, *argv)
        try:
            try:
                reply = client.execute_command(*call)
            except redis.exceptions.ResponseError as e:
                if "function not found" not in str(e).lower():
                    raise
                self._library.load(client, replace=False)
                reply = client.execute_command(*call)
        except redis.exceptions.ResponseError as e:
            raise self._error(e) from e
        return self.decode(reply)

    def _error(self, e):
        # redis-py drops a leading ERR; some servers put ERR before the code.
        msg = str(e)
        msg = msg[4:] if msg.startswith("ERR ") else msg
        code, _, rest = msg.partition(" ")
        if code in self.errors:
            return ScriptError(self.name, code, rest)
        return e


class Library:
    """The bundle's Redis Functions library (Redis 7.0 or later)."""

    def __init__(self, name, path):
        self.name = name
        try:
            with open(path, "rb") as fh:
                self.code = fh.read()
        except OSError as e:
            raise ManifestError(f"functions library {name}: {e}") from e

    def load(self, client, replace=True):
        """FUNCTION LOAD [REPLACE] of the library file, as is. Without replace
        a library of the same name already there is a FunctionsStaleError."""
        cmd = ["FUNCTION", "LOAD"] + (["REPLACE"] if replace else []) + [self.code]
        try:
            client.execute_command(*cmd)
        except redis.exceptions.ResponseError as e:
            if "already exists" in str(e):
                raise FunctionsStaleError(f"the server holds another library named {self.name}: load this one with Bundle.load_functions") from e
            raise


class Bundle:
    """The scripts a manifest lists, by name: ``bundle["gcra"]``."""

    def __init__(self, manifest, base):
        if manifest.get("version") != MANIFEST_VERSION:
            raise ManifestError(f"manifest version {manifest.get('version')!r}: this module reads version {MANIFEST_VERSION}")
        lib = manifest.get("functions")
        self.library = Library(lib["library"], os.path.join(base, *lib["file"].split("/"))) if lib else None
        self.scripts = {e["name"]: Script(e, base, self.library) for e in manifest["scripts"]}

    @classmethod
    def load(cls, path):
        """Reads a luagen manifest (scripts.json) and every file it names,
        relative to the manifest's folder."""
        with open(path, encoding="utf-8") as fh:
            manifest = json.load(fh)
        return cls(manifest, os.path.dirname(os.path.abspath(path)))

    def __getitem__(self, name):
        try:
            return self.scripts[name]
        except KeyError:
            raise KeyError(f"no script {name!r} in the manifest; it has {', '.join(sorted(self.scripts))}") from None

    def __contains__(self, name):
        return name in self.scripts

    def __iter__(self):
        return iter(self.scripts.values())

    def load_functions(self, client):
        """Loads the Functions library, replacing any older version under its
        name (FUNCTION LOAD REPLACE): run it when you deploy."""
        if not self.library:
            raise ManifestError("the manifest names no Functions library")
        self.library.load(client, replace=True)
