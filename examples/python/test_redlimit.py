"""Unit tests of redlimit.py's manifest handling, with a fake client.

    /usr/bin/python3 -m unittest discover -s examples/python

The real-server tests are in tests/polyglot (go test), which runs these too.
"""

import collections
import contextlib
import copy
import datetime as dt
import io
import json
import os
import shutil
import tempfile
import unittest

import redis

import redlimit

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(HERE, "..", "..", "bindings", "scripts.json")
UTC = dt.timezone.utc


class FakeRedis:
    """Answers execute_command from a list of replies (an exception is
    raised), and records every command."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.sent = []

    def execute_command(self, *args):
        self.sent.append(args)
        r = self.replies.pop(0)
        if isinstance(r, Exception):
            raise r
        return r


class ManifestTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bundle = redlimit.Bundle.load(MANIFEST)
        with open(MANIFEST, encoding="utf-8") as fh:
            cls.manifest = json.load(fh)

    def test_every_script_loads_with_its_file(self):
        got = sorted(s.name for s in self.bundle)
        want = sorted(e["name"] for e in self.manifest["scripts"])
        self.assertEqual(got, want)
        self.assertIn("gcra", self.bundle)
        self.assertIn("token_bucket", self.bundle)
        with self.assertRaisesRegex(KeyError, "no script 'nope'"):
            self.bundle["nope"]

    def test_argv_in_manifest_order_in_wire_units(self):
        lb = self.bundle["leaky_bucket"]
        now = dt.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
        keys, argv = lb.encode(["k"], {"cost": 1, "period": dt.timedelta(hours=1), "rate": 3, "capacity": 5, "now": now})
        self.assertEqual(keys, ["k"])
        want = {"capacity": "5", "rate": "3", "period": "3600000", "cost": "1", "now": str(int(now.timestamp()) * 10**6 + 678901),
                "deadline": "0"}
        # settle, a variadic that may be empty, left out: nothing is sent.
        self.assertEqual(argv, [want[a["name"]] for a in lb.args if a["name"] != "settle"])
        _, argv = lb.encode(["k"], {"cost": 1, "period": dt.timedelta(seconds=1), "rate": 3, "capacity": 5, "settle": ["refund"]})
        self.assertEqual(argv[-1], "refund")

    def test_instant_defaults_to_zero_and_rounds_down(self):
        tb = self.bundle["token_bucket"]
        base = {"capacity": 3, "rate": 3, "period": dt.timedelta(seconds=1), "refill": "smooth", "requests": [{"cost": 0}]}
        _, argv = tb.encode(["k"], base)
        self.assertEqual(argv[-1], "0")  # the request's deadline, left out
        self.assertEqual(argv[3], "0")  # the clock, left out
        # An instant in a coarser unit is rounded down, as a clock of that
        # resolution reads; build a synthetic unix_ms field to see it.
        f = {"name": "at", "type": "unix_ms", "unit": "milliseconds", "wire": ""}
        self.assertEqual(tb._encode_value(f, dt.datetime(1970, 1, 1, 0, 0, 0, 1999, tzinfo=UTC)), "1")

    def test_refusals_send_nothing(self):
        lb = self.bundle["leaky_bucket"]
        ok = {"capacity": 3, "rate": 3, "period": dt.timedelta(seconds=1), "cost": 1}
        cases = {
            "below min": dict(ok, capacity=0),
            "above max": dict(ok, cost=10**9 + 1),
            "bool for int": dict(ok, rate=True),
            "float for int": dict(ok, rate=3.0),
            "int for duration": dict(ok, period=1000),
            "part of a ms": dict(ok, period=dt.timedelta(microseconds=1500)),
            "naive datetime": dict(ok, now=dt.datetime(2026, 1, 1)),
            "epoch reads as the server clock": dict(ok, now=dt.datetime(1970, 1, 1, tzinfo=UTC)),
            "unknown": dict(ok, capcity=3),
        }
        missing = dict(ok)
        del missing["rate"]
        cases["missing"] = missing
        for name, args in cases.items():
            with self.subTest(name):
                r = FakeRedis()
                with self.assertRaises(redlimit.ArgError):
                    lb(r, ["k"], **args)
                self.assertEqual(r.sent, [])
        for keys in ([], ["a", "b"], [1], "k"):
            with self.assertRaises(redlimit.ArgError):
                lb.encode(keys, ok)

    def test_enum_words_from_the_manifest(self):
        tb = self.bundle["token_bucket"]
        words = next(a["enum"] for a in tb.args if a["name"] == "refill")
        base = {"capacity": 3, "rate": 3, "period": dt.timedelta(seconds=1), "requests": [{"cost": 1}]}
        for w in words:
            _, argv = tb.encode(["k"], dict(base, refill=w))
            self.assertIn(w, argv)
        with self.assertRaisesRegex(redlimit.ArgError, "must be one of"):
            tb.encode(["k"], dict(base, refill="Smooth"))

    def test_reply_by_the_manifest(self):
        lb = self.bundle["leaky_bucket"]
        got = lb.decode([1, b"2", 0, 1200000])
        self.assertEqual(got, lb.Reply(True, 2, dt.timedelta(0), dt.timedelta(minutes=20)))
        self.assertEqual(got.remaining, 2)
        never = lb.decode([0, 3, -1, 0])
        self.assertIs(never.retry_after, redlimit.NEVER)
        self.assertGreater(never.retry_after, dt.timedelta(days=10**6))
        for bad in ([1, 2, 0], [1, 2, 0, 0, 0], [2, 2, 0, 0], [1, -1, 0, 0], [1, 2, 0, -1], [1, b"2.5", 0, 0], [1, b" 2", 0, 0], 7):
            with self.subTest(bad=bad), self.assertRaises(redlimit.ReplyError):
                lb.decode(bad)

    def test_noscript_falls_back_to_eval(self):
        lb = self.bundle["leaky_bucket"]
        r = FakeRedis(redis.exceptions.NoScriptError("No matching script."), [1, 2, 0, 1000])
        got = lb(r, ["k"], capacity=3, rate=3, period=dt.timedelta(seconds=3), cost=1)
        self.assertTrue(got.allowed)
        self.assertEqual([s[0] for s in r.sent], ["EVALSHA", "EVAL"])
        self.assertEqual(r.sent[0][1], lb.sha1)
        self.assertEqual(r.sent[1][1], lb.source)
        self.assertEqual(r.sent[0][2:], r.sent[1][2:])

    def test_error_codes_become_script_errors(self):
        lb = self.bundle["leaky_bucket"]
        for msg in ("BADARG now must be 0", "ERR BADARG now must be 0"):
            r = FakeRedis(redis.exceptions.ResponseError(msg))
            with self.assertRaises(redlimit.ScriptError) as cm:
                lb(r, ["k"], capacity=3, rate=3, period=dt.timedelta(seconds=3), cost=1)
            self.assertEqual((cm.exception.code, cm.exception.message), ("BADARG", "now must be 0"))
        r = FakeRedis(redis.exceptions.ResponseError("OOM command not allowed"))
        with self.assertRaises(redis.exceptions.ResponseError) as cm:
            lb(r, ["k"], capacity=3, rate=3, period=dt.timedelta(seconds=3), cost=1)
        self.assertNotIsInstance(cm.exception, redlimit.ScriptError)

    def test_fcall_loads_a_missing_library_once(self):
        lb = self.bundle["leaky_bucket"]
        r = FakeRedis(redis.exceptions.ResponseError("Function not found"), b"redlimit", [0, 0, 5, 5])
        got = lb.fcall(r, ["k"], capacity=3, rate=3, period=dt.timedelta(seconds=3), cost=1)
        self.assertFalse(got.allowed)
        self.assertEqual(r.sent[0][:2], (lb.function["command"], lb.function["name"]))
        self.assertEqual(r.sent[1], ("FUNCTION", "LOAD", self.bundle.library.code))
        self.assertEqual(r.sent[2], r.sent[0])
        # Another library under the name is not replaced by a call.
        r = FakeRedis(redis.exceptions.ResponseError("Function not found"), redis.exceptions.ResponseError("Library 'redlimit' already exists"))
        with self.assertRaises(redlimit.FunctionsStaleError):
            lb.fcall(r, ["k"], capacity=3, rate=3, period=dt.timedelta(seconds=3), cost=1)

    def test_batch_requests_and_decisions(self):
        gcra = self.bundle["gcra"]
        due = dt.datetime(2026, 1, 1, tzinfo=UTC)
        keys, argv = gcra.encode(["k"], {"burst": 5, "rate": 5, "period": dt.timedelta(seconds=1), "take": "all",
                                          "requests": [{"cost": 2}, {"cost": 0, "deadline": due}]})
        self.assertEqual(argv, ["5", "5", "1000", "0", "all", "2", "0", "0", "1767225600000000"])
        for bad in ([], [{"cost": 1}] * 65, [{"deadline": due}], [{"cost": -1}]):
            with self.subTest(requests=bad), self.assertRaises(redlimit.ArgError):
                gcra.encode(["k"], {"burst": 5, "rate": 5, "period": dt.timedelta(seconds=1), "take": "all", "requests": bad})
        got = gcra.decode([1, 3, 0, 400, -1, 0, 0, 0])
        self.assertEqual([d.allowed for d in got.decisions], [1, redlimit.Sentinel("expired")])
        self.assertEqual(got.decisions[0].reset_after, dt.timedelta(milliseconds=400))
        for bad in ([], [1, 3, 0], [1, -1, 0, 0], [-2, 0, 0, 0]):
            with self.subTest(bad=bad), self.assertRaises(redlimit.ReplyError):
                gcra.decode(bad)

    def test_manifest_problems(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        lua = os.path.join(tmp, "lua")
        os.mkdir(lua)
        m = copy.deepcopy(self.manifest)
        m.pop("functions")
        m["scripts"] = [s for s in m["scripts"] if s["name"] == "leaky_bucket"]
        m["scripts"][0]["file"] = "lua/leaky_bucket.lua"
        shutil.copy(os.path.join(HERE, "..", "..", "lua", "leaky_bucket.lua"), lua)

        def load(mutate=lambda m: None):
            mm = copy.deepcopy(m)
            mutate(mm)
            path = os.path.join(tmp, "scripts.json")
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(mm, fh)
            return redlimit.Bundle.load(path)

        self.assertEqual([s.name for s in load()], ["leaky_bucket"])
        renamed = load(lambda m: m["scripts"][0]["returns"][1].update(name="in"))["leaky_bucket"]
        self.assertEqual(renamed.Reply._fields[1], "in_")
        with self.assertRaisesRegex(redlimit.ManifestError, "version"):
            load(lambda m: m.update(version=4))
        with self.assertRaisesRegex(redlimit.ManifestError, "sha1"):
            load(lambda m: m["scripts"][0].update(sha1="0" * 40))
        with self.assertRaisesRegex(redlimit.ManifestError, "unknown type"):
            load(lambda m: m["scripts"][0]["args"][0].update(type="decimal"))
        with self.assertRaisesRegex(redlimit.ManifestError, "two fields"):
            load(lambda m: m["scripts"][0]["args"][0].update(type="record", variadic=True, fields=[{"name": "a", "type": "int", "wire": ""}]))
        with self.assertRaisesRegex(redlimit.ManifestError, "no Functions library"):
            load().load_functions(FakeRedis())

    def test_variadic_keys_args_and_returns(self):
        s = copy.copy(self.bundle["gcra"])
        s.keys = [{"name": "first"}, {"name": "rest", "variadic": True}]
        s.args = [{"name": "n", "type": "int", "wire": ""}, {"name": "windows", "type": "ms", "unit": "milliseconds", "wire": "", "variadic": True}]
        s.returns = [{"name": "allowed", "type": "bool", "wire": ""}, {"name": "waits", "type": "ms", "unit": "milliseconds", "min": 0, "sentinels": [{"name": "never", "value": -1}], "wire": "", "variadic": True}]
        s.Reply = collections.namedtuple("R", ["allowed", "waits"])
        keys, argv = s.encode(["a", "b", "c"], {"n": 2, "windows": [dt.timedelta(seconds=1), dt.timedelta(hours=1)]})
        self.assertEqual((keys, argv), (["a", "b", "c"], ["2", "1000", "3600000"]))
        self.assertEqual(s.encode(["a"], {"n": 2, "windows": []}), (["a"], ["2"]))
        with self.assertRaises(redlimit.ArgError):
            s.encode([], {"n": 2, "windows": []})
        with self.assertRaises(redlimit.ArgError):
            s.encode(["a"], {"n": 2, "windows": dt.timedelta(seconds=1)})
        got = s.decode([0, 5, -1])
        self.assertEqual(got, s.Reply(False, (dt.timedelta(milliseconds=5), redlimit.NEVER)))


    def test_records_sentinels_counts_and_patterns(self):
        # A script as luagen describes multi.lua-like headers: a lease id
        # pattern, a never sentinel, records of limits and of the reply,
        # counts of keys and records.
        s = copy.copy(self.bundle["gcra"])
        ms = {"unit": "milliseconds", "wire": ""}
        s.keys = [{"name": "keys", "variadic": True, "min_count": 1, "max_count": 2}]
        s.args = [
            {"name": "lease", "type": "string", "wire": "", "pattern": "^[a-z0-9_-]{1,8}$"},
            {"name": "wait", "type": "ms", "min": 0, "sentinels": [{"name": "never", "value": -1}], **ms},
            {"name": "now", "type": "unix_us", "unit": "microseconds", "wire": "", "min": 1, "sentinels": [{"name": "server_clock", "value": 0}]},
            {"name": "limits", "type": "record", "wire": "", "variadic": True, "min_count": 1, "max_count": 2, "fields": [
                {"name": "burst", "type": "int", "wire": "", "min": 1, "max": 10**9},
                {"name": "period", "type": "ms", "min": 1, **ms},
            ]},
        ]
        s.returns = [
            {"name": "allowed", "type": "bool", "wire": ""},
            {"name": "per_limit", "type": "record", "wire": "", "variadic": True, "max_count": 2, "fields": [
                {"name": "remaining", "type": "int", "wire": "", "min": 0},
                {"name": "retry_after", "type": "ms", "min": 0, "sentinels": [{"name": "never", "value": -1}], **ms},
            ]},
        ]
        for f in s.args + s.returns:
            redlimit._field_kind(s.name, f)
        s.Reply = collections.namedtuple("R", ["allowed", "per_limit"])
        s._records = {"per_limit": collections.namedtuple("PerLimit", ["remaining", "retry_after"])}
        limits = [{"burst": 3, "period": dt.timedelta(seconds=1)}, {"burst": 5, "period": dt.timedelta(minutes=1)}]
        keys, argv = s.encode(["{a}1", "{a}2"], {"lease": "ab-1", "wait": redlimit.NEVER, "now": None, "limits": limits})
        self.assertEqual((keys, argv), (["{a}1", "{a}2"], ["ab-1", "-1", "0", "3", "1000", "5", "60000"]))
        self.assertEqual(s.encode(["k"], {"lease": "x", "wait": redlimit.Sentinel("never"), "limits": limits[:1]})[1][:2], ["x", "-1"])
        for keys, args in [
            ([], {}),  # too few keys
            (["a", "b", "c"], {}),  # too many keys
            (["k"], {"lease": "A"}),  # the pattern
            (["k"], {"lease": "a" * 9}),
            (["k"], {"wait": dt.timedelta(milliseconds=-2)}),  # not the sentinel
            (["k"], {"wait": redlimit.Sentinel("later")}),  # no such sentinel
            (["k"], {"limits": []}),  # too few records
            (["k"], {"limits": limits * 2}),  # too many
            (["k"], {"limits": [{"burst": 5 * 10**10, "period": dt.timedelta(seconds=1)}]}),  # a field out of range
            (["k"], {"limits": [{"burst": 1}]}),  # a field missing
            (["k"], {"limits": [{"burst": 1, "period": dt.timedelta(seconds=1), "rate": 2}]}),  # an unknown field
            (["k"], {"limits": [(1, dt.timedelta(seconds=1))]}),  # not a dict
        ]:
            full = {"lease": "x", "wait": dt.timedelta(0), "limits": limits[:1], **args}
            with self.subTest(keys=keys, args=args), self.assertRaises(redlimit.ArgError):
                s.encode(keys, full)
        got = s.decode([1, 2, 0, 0, -1])
        self.assertEqual(got.per_limit, (s._records["per_limit"](2, dt.timedelta(0)), s._records["per_limit"](0, redlimit.NEVER)))
        for bad in ([1, 2], [1, 2, 0, 0], [1, 0, 0, 0, 0, 0, 0], [1, 2, -2]):
            with self.subTest(bad=bad), self.assertRaises(redlimit.ReplyError):
                s.decode(bad)


class CommandLineTest(unittest.TestCase):
    def test_values_by_the_manifest_types(self):
        import demo

        gcra = redlimit.Bundle.load(MANIFEST)["gcra"]
        self.assertEqual(demo.parse_args(gcra, ["burst=3", "rate=3", "period=1h", "take=all", "requests=1,0/1700000000123456"]),
                         {"burst": 3, "rate": 3, "period": dt.timedelta(hours=1), "take": "all",
                          "requests": [{"cost": 1}, {"cost": 0, "deadline": dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC)}]})
        self.assertEqual(demo.parse_args(gcra, ["period=2500"]), {"period": dt.timedelta(milliseconds=2500)})
        self.assertEqual(demo.parse_args(gcra, ["now=1700000000123456"])["now"],
                         dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC))
        self.assertIsNone(demo.parse_args(gcra, ["now=0"])["now"])
        for bad in (["burst=3s"], ["nope=1"], ["burst"], ["now=1h"], ["requests=1/0/0"], ["requests=/0"]):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                demo.parse_args(gcra, bad)

    def test_bad_options_are_usage_errors(self):
        import demo

        for argv, name in ((["--redis", "localhost"], "--redis"), (["--redis", "localhost:"], "--redis"),
                           (["--redis", "h:0"], "--redis"), (["--redis", "h:65536"], "--redis"),
                           (["--redis", "h:+1"], "--redis"), (["--redis", "h:port"], "--redis"),
                           (["--calls", "0"], "--calls"), (["--calls", "-1"], "--calls"),
                           (["--calls", "x"], "--calls")):
            with self.subTest(argv=argv):
                err = io.StringIO()
                with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as cm:
                    demo.main(argv)
                self.assertEqual(cm.exception.code, 2)
                self.assertIn(f"argument {name}: {argv[1]!r} is not", err.getvalue())

    def test_good_options(self):
        import demo

        self.assertEqual(demo.host_port("localhost:6379"), "localhost:6379")
        self.assertEqual(demo.host_port(":1"), ":1")
        self.assertEqual(demo.host_port("::1:65535"), "::1:65535")
        self.assertEqual(demo.positive_int("1"), 1)
        self.assertEqual(demo.positive_int("12"), 12)


if __name__ == "__main__":
    unittest.main()
