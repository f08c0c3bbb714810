--- Sliding window counter (the approximation Cloudflare describes): counts
--- cost in windows aligned to the epoch and admits while the estimate
--- cur + ceil(prev * (window - elapsed) / window) stays within limit, where cur
--- and prev are the counts of the current and the previous window and elapsed
--- is the time since the current window began. It is an approximation: it
--- assumes the previous window's count was spread evenly over that window.
--- Traffic that came early in it is still weighed after it has slid out (more
--- denials than an exact sliding log); traffic that came at its very end
--- weighs less than it should, and that is the worst case: nearly 2*limit can
--- pass within one window length (limit just before a boundary, then almost
--- limit more as its weight decays). Proven bounds: at most limit in one
--- aligned window, and at most limit + floor(limit*(d-1)/window) in any span
--- of d µs (d >= 1). The weighted count is rounded up, so it never admits more
--- than the estimate allows. A cost of 0 peeks: it answers for a cost of 1
--- and writes nothing. A cost above limit can never pass: it is denied with
--- retry_after -1. Denied calls change nothing. Arithmetic is exact for every
--- accepted input (count times window goes through muldiv). Both counts live
--- in one key, so it runs on Redis Cluster.
--- Clocks: now = 0 uses the server's TIME, one clock for every app server. A
--- caller clock (now > 0) is refused with BADARG when it is more than 60 s
--- from TIME. A write with a caller clock keeps its key 60 s past the instant
--- its state is spent on the server's clock, so a call whose clock lags TIME
--- by up to 60 s still finds the state; a call that finds no state is judged
--- at the later of its clock and TIME, so a key that expired never hands the
--- same time out twice. So no clock dates state more than 60 s past TIME: a
--- call with the server's clock waits at most the two windows plus 60 s, a
--- key lives at most the two windows plus 120 s, and waits count from the
--- caller's own clock. A caller clock in an earlier window than the newest
--- counted call is judged at the start of that call's window, where the
--- previous count weighs most.
--- Changed limits: a new limit applies to the counts at once (lowered: no
--- free burst; raised: the difference passes). The state keeps times, not
--- window numbers: the current count is placed at the newest call it counts
--- and the previous count just before the current window began, and both are
--- counted in whichever window of the new length holds them. A longer window
--- never forgets them (no free burst); a shorter one may count them once
--- more than it would have (never over two windows).
--- State: a hash with exactly the fields s (µs, the start of the current
--- count's window), t (µs, its newest call, at most 1e14 µs after s), cur
--- (0..1e9) and prev (0..2e9: counts from two windows can merge); anything
--- else at the key, of any type, is an error and the key is left untouched.
--- @key    counts       hash {s, t, cur, prev}: counts of the window from s and the one before; expires when both weigh 0
--- @arg    limit        int[1..1e9]       most cost the estimate admits
--- @arg    window       ms[1..1e11]       window length, aligned to the epoch
--- @arg    cost         int[0..1e9]       cost to count; 0 only peeks
--- @arg    now          unix_us[0..2^52]  caller clock, within 60 s of the server's TIME; 0 uses TIME
--- @return allowed      bool
--- @return remaining    int[0..]          most cost admitted right now, never negative
--- @return retry_after  ms[-1..]          0 when allowed; -1 when cost exceeds limit
--- @return reset_after  ms[0..]           until both counts weigh 0
--- @error  BADARG       an argument is missing, extra, not a plain decimal integer, or out of range
--- @error  WRONGTYPE    the key holds another type of value; it is left untouched
--- @error  BADSTATE     the key has this script's type but not its state (other fields or members, numbers out of range); it is left untouched
-- redlimit:prologue:begin (the same bytes in every script: tests/lua compares them)
-- Bad input is an error reply that changes nothing: bad keeps the first
-- problem found, and the script returns it before it reads its key.
local bad

-- The most a caller's clock may differ from the server's TIME, in µs.
local max_skew = 60000000

-- num reads an integer from lo to hi written the way Redis writes one:
-- an optional '-', digits, no leading zero, nothing else. tonumber alone
-- takes ' 5', '+5', '0x10', '1e3', '1e-400' and stops at a NUL; a value
-- that prints back as the very same string has none of those. Stored
-- state goes through it too. nil for anything else.
local function num(raw, lo, hi)
  local v = type(raw) == 'string' and tonumber(raw)
  if v and v >= lo and v <= hi and string.format('%d', v) == raw then
    return v
  end
  return nil
end

-- int reads an argument with num and, when it is not one, says so in bad.
local function int(raw, name, lo, hi)
  local v = num(raw, lo, hi)
  if v == nil and bad == nil then
    local got = 'nothing'
    if raw then
      got = "'" .. string.gsub(string.sub(raw, 1, 40), '[^ -~]', '?') .. "'"
    end
    bad = string.format('BADARG %s must be an integer from %d to %d, got %s', name, lo, hi, got)
  end
  return v
end

-- exactly makes KEYS or ARGV beyond the header's a BADARG too; a missing
-- one is named by int or by the script's own check before this runs.
local function exactly(nkeys, nargs)
  if bad == nil and (#KEYS ~= nkeys or #ARGV ~= nargs) then
    bad = string.format('BADARG takes %d key(s) and %d arguments, got %d and %d', nkeys, nargs, #KEYS, #ARGV)
  end
end

-- clock reads the server's TIME and returns the instant to judge the call
-- at, the server's instant, and whether it is the caller's clock. now = 0
-- is the server's clock, shared by every app server. A caller's clock is
-- refused beyond max_skew of TIME, so no caller can date state, or a key's
-- TTL, more than max_skew away from the server's clock.
local function clock(now)
  local t = redis.call('TIME')
  local server = tonumber(t[1]) * 1000000 + tonumber(t[2])
  if now == 0 then
    return server, server, false
  elseif bad == nil and (now < server - max_skew or now > server + max_skew) then
    bad = string.format("BADARG now must be 0 (the server's clock) or within %d µs of the server's TIME, got '%d'", max_skew, now)
  end
  return now, server, true
end

-- muldiv returns floor(a * b / c) and the remainder, for integers a, b >= 0
-- and 1 <= c <= 2^50. A double holds every integer below 2^53, but a * b
-- may not be one: the quotient is exact whenever it is below 2^53, and at
-- least 2^53 otherwise, so a bound can be checked with it too.
local function muldiv(a, b, c)
  local p = a * b
  if p < 2^53 then
    local q = math.floor(p / c)
    return q, p - q * c
  end
  -- a * b / c = floor(a / c) * b + (a mod c) * b / c; the last term is
  -- built from the bits of b, high to low, keeping its remainder below c.
  local aq = math.floor(a / c)
  local ar = a - aq * c
  local bit = 1
  while bit * 2 <= b do
    bit = bit * 2
  end
  local rest, q, r = b, 0, 0
  while bit >= 1 do
    q = q * 2
    r = r * 2
    if rest >= bit then
      rest = rest - bit
      r = r + ar
    end
    local carry = math.floor(r / c)
    q = q + carry
    r = r - carry * c
    bit = bit / 2
  end
  return aq * b + q, r
end
-- redlimit:prologue:end

local counts = KEYS[1]
local limit  = int(ARGV[1], 'limit', 1, 1e9)
local window = int(ARGV[2], 'window', 1, 1e11)
local cost   = int(ARGV[3], 'cost', 0, 1e9)
local now    = int(ARGV[4], 'now', 0, 2^52)
if counts == nil then bad = bad or 'BADARG counts key is missing' end
exactly(1, 4)
if bad then return redis.error_reply(bad) end

local server, caller
now, server, caller = clock(now)
if bad then return redis.error_reply(bad) end

local size = redis.pcall('HLEN', counts)
if type(size) ~= 'number' then
  return redis.error_reply('WRONGTYPE the key holds another type of value; it is left untouched')
end
local s, t, cur, prev
if size > 0 then
  local state = redis.call('HMGET', counts, 's', 't', 'cur', 'prev')
  s, t = num(state[1], 0, 2^52), num(state[2], 0, 2^52)
  cur, prev = num(state[3], 0, 1e9), num(state[4], 0, 2e9)
  if size ~= 4 or s == nil or t == nil or cur == nil or prev == nil or t < s or t - s >= 1e14 then
    return redis.error_reply('BADSTATE the key is not a sliding window counter {s, t, cur, prev}; it is left untouched')
  end
end

-- Times stay below 2^52 + 2e14 < 2^53, and floor(x / y) of integers below
-- 2^53 is exact.
local window_us = window * 1000
local w = math.floor(now / window_us)
-- at is the instant the call is judged at: a late caller is judged at the
-- start of the newest count's window, so the state never moves back.
local at = now
local c, p = 0, 0
if not s then
  -- A key that holds nothing counts from the later of the caller's clock
  -- and the server's: a key the server's clock expired must not let a
  -- caller that lags it count in those windows again.
  at = math.max(now, server)
  w = math.floor(at / window_us)
else
  local wt, ws = math.floor(t / window_us), math.floor((s - 1) / window_us)
  if wt > w then
    w, at = wt, wt * window_us
  end
  if wt == w then
    c = c + cur
  elseif wt == w - 1 then
    p = p + cur
  end
  if ws == w then
    c = c + prev
  elseif ws == w - 1 then
    p = p + prev
  end
  p = math.min(p, 2e9)
end
local start = w * window_us
local want = math.max(cost, 1)

-- ceil(n * (window - elapsed) / window): the previous count's weight.
local function weighted(n, elapsed)
  local q, r = muldiv(n, window_us - elapsed, window_us)
  return r > 0 and q + 1 or q
end

-- The first instant from x on, inside the window that begins at ws, at which
-- cn + want + weighted(pn) <= limit; nil when there is none in that window.
-- weighted(pn, e) <= room  <=>  pn * (window - e) <= room * window
--                          <=>  e >= window - floor(room * window / pn).
local function first(cn, pn, ws, x)
  local room = limit - cn - want
  if room < 0 then
    return nil
  elseif room >= pn then
    return x
  end
  local e = window_us - muldiv(room, window_us, pn)
  if e >= window_us then
    return nil
  end
  return math.max(x, ws + e)
end

local function ms(us)
  return math.ceil(us / 1000)
end
local remaining = math.max(0, limit - c - weighted(p, at - start))
local until_us = 0
if c > 0 then
  until_us = start + 2 * window_us - now
elseif p > 0 then
  until_us = start + window_us - now
end
local reset_ms = ms(until_us)

if want > limit then
  return {0, remaining, -1, reset_ms}
end
-- The estimate only falls while nothing is admitted, and two windows on
-- both counts weigh 0, so the first admitting instant is one of these.
local ok_at = first(c, p, start, at)
  or first(0, c, start + window_us, start + window_us)
  or start + 2 * window_us
if ok_at > at then
  return {0, remaining, ms(ok_at - now), reset_ms}
elseif cost == 0 then
  return {1, remaining, 0, reset_ms}
end

-- Keys expire by the server's clock. A caller's write keeps the key
-- max_skew past the instant both counts weigh 0, so a call whose clock
-- lags the server's by up to max_skew still finds them.
local ttl_us = start + 2 * window_us - server
if caller then
  ttl_us = ttl_us + max_skew
end
redis.call('HSET', counts, 's', string.format('%d', start), 't', string.format('%d', math.max(t or at, at)),
  'cur', string.format('%d', c + cost), 'prev', string.format('%d', p))
redis.call('PEXPIRE', counts, string.format('%d', math.max(1, ms(ttl_us))))
return {1, remaining - cost, 0, ms(start + 2 * window_us - now)}
