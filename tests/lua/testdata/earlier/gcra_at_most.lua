--- GCRA's "take what is left, up to n" (go-redis/redis_rate's AllowAtMost),
--- on gcra.lua's own state and with its answers: a call takes
--- min(n, left) requests, left being the whole requests gcra.lua would
--- answer as remaining now, when at least one passes, and takes nothing
--- otherwise. It is one script call, so no other call comes between the
--- look and the take, and what it takes is exactly what gcra.lua with that
--- cost would admit. n may exceed burst (at most left is taken). A call
--- that takes nothing changes nothing and answers when one request passes.
--- Clocks, changed limits, bounds and state are gcra.lua's (see there):
--- now = 0 uses the server's TIME; a caller clock more than 60 s from TIME
--- is refused with BADARG; a write with a caller clock keeps its key 60 s
--- past the TAT on the server's clock; a key that holds nothing is judged at
--- the later of the caller's clock and TIME; a changed rate, period or
--- burst applies from the key's last write, capped at a full burst of the
--- new size. Arithmetic is exact for every accepted input.
--- State: gcra.lua's string, '2<tat><interval>' or
--- 'g<tat><interval>/<more>' in µs (see there); anything else at the key,
--- of any type, is an error and the key is left untouched (value and TTL).
--- @key    tat          string '2<tat><interval>' or 'g<tat><interval>/<more>' in µs (gcra.lua's state); expires when the TAT is reached
--- @arg    burst        int[1..1e9]       requests that may pass at once
--- @arg    rate         int[1..1e9]       requests per period at the steady pace, at most one per µs
--- @arg    period       ms[1..1e11]       the period of rate; burst*period/rate at most 1e15 µs (31 years)
--- @arg    n            int[1..1e9]       the most requests to take
--- @arg    now          unix_us[1..2^52]|server_clock=0  caller clock, within 60 s of the server's TIME
--- @arg    deadline     unix_us[1..2^52]|none=0  when the caller stops waiting: a call the server runs at or after it answers EXPIRED; 0: none
--- @return taken        int[0..1e9]       requests counted: the least of n and what was left; 0 when none passes
--- @return remaining    int[0..]          whole requests that would still pass now, after this call
--- @return retry_after  ms[0..]           0 when something was taken; else until one request passes
--- @return reset_after  ms[0..]           until the TAT is reached and a full burst passes again
--- @error  BADARG       an argument is missing, extra, not a plain decimal integer, or out of range
--- @error  EXPIRED      the server ran the call at or after its deadline; nothing changed
--- @error  WRONGTYPE    the key holds another type of value; it is left untouched
--- @error  BADSTATE     the key is a string but not a GCRA state (another script's, another layout, a number out of range); it is left untouched
-- redlimit:prologue:begin (the same bytes in every script: tests/lua compares them)
-- Bad input is an error reply that changes nothing: bad keeps the first
-- problem found, and the script returns it before it reads its key.
local bad

-- The most a caller's clock may differ from the server's TIME, in µs.
local max_skew = 60000000

-- The library functions the hot path calls, as locals: a global lookup on
-- every use costs more. (Error paths use the globals: every upvalue a
-- function below captures costs something on every call.)
local find, match, format = string.find, string.match, string.format

-- int reads an integer from lo to hi (lo is 0 or 1) written the way Redis
-- writes one: 0, or a digit 1-9 and more digits, at most 16, nothing else.
-- Lua's tonumber alone takes ' 5', '+5', '0x10', '1e3', '1e-400' and stops
-- at a NUL; the pattern takes none of those. Digits alone convert exactly
-- by arithmetic (no bound passes 2^53), which costs less than a call, and
-- the common costs and clock, 0 and 1, need no pattern at all. Anything
-- else is nil, and bad says so.
local function int(raw, name, lo, hi)
  if raw == '0' then
    if lo == 0 then
      return 0
    end
  elseif raw == '1' then
    if lo <= 1 then
      return 1
    end
  elseif raw and #raw <= 16 and find(raw, '^[1-9]%d*$') then
    local v = raw + 0
    if v >= lo and v <= hi then
      return v
    end
  end
  if not bad then
    local got = 'nothing'
    if raw then
      got = "'" .. string.gsub(string.sub(raw, 1, 40), '[^ -~]', '?') .. "'"
    end
    bad = string.format('BADARG %s must be an integer from %d to %d, got %s', name, lo, hi, got)
  end
  return nil
end

-- exactly makes KEYS or ARGV beyond the header's a BADARG too; a missing
-- one is named by int or by the script's own check before this runs.
local function exactly(nkeys, nargs)
  if not bad and (#KEYS ~= nkeys or #ARGV ~= nargs) then
    bad = string.format('BADARG takes %d key(s) and %d arguments, got %d and %d', nkeys, nargs, #KEYS, #ARGV)
  end
end

-- clock reads the server's TIME and returns the instant to judge the call
-- at, the server's instant, and whether it is the caller's clock. now = 0
-- is the server's clock, shared by every app server. A caller's clock is
-- refused beyond max_skew of TIME, so no caller can date state, or a key's
-- TTL, more than max_skew away from the server's clock. deadline (0 for
-- none) is the instant the caller stops waiting for the answer: a call the
-- server runs at or after it is EXPIRED and changes nothing, since no one
-- will act on its answer (a client that retried, or a server that stalled,
-- must not count a request the caller already gave up on).
local function clock(now, deadline)
  local t = redis.call('TIME')
  local server = t[1] * 1000000 + t[2]
  if now > 0 and (now < server - max_skew or now > server + max_skew) then
    bad = string.format("BADARG now must be 0 (the server's clock) or within %d µs of the server's TIME, got '%d'", max_skew, now)
  elseif deadline > 0 and server >= deadline then
    bad = string.format("EXPIRED the server's TIME %d is past the call's deadline %d; nothing changed", server, deadline)
  end
  if now == 0 then
    return server, server, false
  end
  return now, server, true
end

-- muldiv returns floor(a * b / c) and the remainder, for integers a, b >= 0
-- and 1 <= c <= 2^50. A double holds every integer below 2^53, but a * b
-- may not be one: the quotient is exact whenever it is below 2^53, and at
-- least 2^53 otherwise, so a bound can be checked with it too. (x % c is
-- exact for integers x below 2^53, and x - x % c divides by c exactly.)
local function muldiv(a, b, c)
  local p = a * b
  if p < 2^53 then
    local r = p % c
    return (p - r) / c, r
  end
  -- a * b / c = floor(a / c) * b + (a mod c) * b / c; the last term is
  -- built from the bits of b, high to low, keeping its remainder below c.
  local ar = a % c
  local aq = (a - ar) / c
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
    local carry = r % c
    carry = (r - carry) / c
    q = q + carry
    r = r - carry * c
    bit = bit / 2
  end
  return aq * b + q, r
end
-- redlimit:prologue:end

local tat      = KEYS[1]
local burst    = int(ARGV[1], 'burst', 1, 1e9)
local rate     = int(ARGV[2], 'rate', 1, 1e9)
local period   = int(ARGV[3], 'period', 1, 1e11)
local n        = int(ARGV[4], 'n', 1, 1e9)
local now      = int(ARGV[5], 'now', 0, 2^52)
local deadline = int(ARGV[6], 'deadline', 0, 2^52)
if tat == nil then bad = bad or 'BADARG tat key is missing' end
exactly(1, 6)
if not bad and rate > period * 1000 then
  bad = 'BADARG rate must be at most one per µs (period*1000)'
end
if bad then return redis.error_reply(bad) end

-- The emission interval T in whole µs, rounded up (exact: period*1000 is
-- below 2^53). The tolerance burst*T bounds how far an admitted TAT runs
-- ahead of now, so keeping it at most 1e15 µs (31 years) keeps every
-- instant below 2^53. Integer division is written with %, which is exact
-- below 2^53 and cheaper than a call to math.floor or math.ceil.
local interval = period * 1000
local part = interval % rate
interval = (interval - part) / rate
if part > 0 then
  interval = interval + 1
end
local tolerance = burst * interval
if tolerance > 1e15 then
  return redis.error_reply('BADARG burst*period/rate must be at most 1e15 µs (31 years)')
end

local server, caller
now, server, caller = clock(now, deadline)
if bad then return redis.error_reply(bad) end

-- GET answers a key of another type with an error table (stored.err); a
-- string has no err field.
local stored = redis.pcall('GET', tat)
-- A call is judged at its own clock against the stored TAT; a key that
-- holds nothing is judged at the later of the caller's clock and the
-- server's: a key the server's clock expired must not let a caller that
-- lags it schedule that time again. own is the caller's clock, which its
-- waits are measured from. A missing key is a TAT at or before now; a TAT
-- behind now counts as now, so idle time never banks more than a burst.
local own = now
local theo = now
if not stored then
  if server > now then
    now, theo = server, server
  end
else
  if stored.err then
    return redis.error_reply('WRONGTYPE the key holds another type of value; it is left untouched')
  end
  -- One pattern checks the whole state. The short form, 19 digits Redis
  -- keeps as an integer, is a TAT one interval ahead of its write (one
  -- request on an idle key): the tag 2, the TAT modulo 1e10, the interval
  -- in 8. A live key's TAT is at most max_skew (and a ms of expiry) behind
  -- TIME, and no more than max_skew and an interval (below 1e8) ahead, so
  -- the TAT is the one from a second before that, modulo 1e10. The long
  -- form: the tag g, 16 digits, then two numbers; the length bound keeps
  -- every number short enough to convert exactly, and one of more than one
  -- digit that sorts below '1' (all digits) has a leading zero. tonumber,
  -- not + 0, for a fixed-width field: gopher-lua (miniredis) reads a
  -- string with a leading 0 as octal in arithmetic, Redis's Lua never does.
  local v, was, lead
  if #stored == 19 then
    v, was = match(stored, '^2(%d%d%d%d%d%d%d%d%d%d)(%d%d%d%d%d%d%d%d)$')
  end
  if v then
    was = tonumber(was)
    local base = server - max_skew - 1000000
    v = base + (tonumber(v) - base) % 1e10
    lead = was > 0 and was
  elseif #stored <= 49 then
    local more
    v, was, more = match(stored, '^g(%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d)([1-9]%d*)/(%d+)$')
    if v and (#more == 1 or more >= '1') then
      v, was = tonumber(v), was + 0
      lead = was + more
    end
  end
  -- The write that set the state was at v - lead, on a clock no write lets
  -- run more than max_skew past TIME, and led by at most 1e15 µs.
  if not lead or was > 1e14 or lead > 1e15 or v < lead or v - lead > server + max_skew then
    return redis.error_reply('BADSTATE the key is not a GCRA state 2<tat><interval> or g<tat><interval>/<more>; it is left untouched')
  end
  -- A changed rate or burst applies from the last write, v - lead: its lead
  -- is counted in intervals of the current rate (whole ones exactly, a part
  -- one rounded up) and capped at a full burst (fewer than burst whole
  -- intervals and a part one never pass it). It depends on the stored state
  -- alone, so waits stay exact while denied calls change nothing.
  if was ~= interval or lead > tolerance then
    local units = lead % was
    units = (lead - units) / was
    if units >= burst then
      v = v - lead + tolerance
    else
      local q, r = muldiv(lead - units * was, interval, was)
      if r > 0 then
        q = q + 1
      end
      v = v - lead + units * interval + q
    end
  end
  if v > now then
    theo = v
  end
end

-- ahead is how far the TAT runs ahead of now, in µs; n more requests pass
-- while ahead + n*T <= burst*T, so burst - ceil(ahead/T) are left. Waits
-- count from the caller's own clock, in whole ms rounded up
-- ((x + 999 - (x + 999) % 1000) / 1000 is ceil(x / 1000) for integers).
local ahead = theo - now
local used = ahead % interval
used = (ahead - used) / interval + (used > 0 and 1 or 0)
local left = burst > used and burst - used or 0
local reset = 0
if ahead > 0 then
  reset = ahead + now - own + 999
  reset = (reset - reset % 1000) / 1000
end
if left == 0 then
  -- ahead + T > burst*T: one request passes once the TAT is that close.
  local wait = ahead + interval - tolerance + now - own + 999
  return {0, 0, (wait - wait % 1000) / 1000, reset}
end

local take = n < left and n or left
theo = theo + take * interval
ahead = ahead + take * interval
-- Keys expire by the server's clock. A caller's write keeps the key
-- max_skew past the TAT, so a call whose clock lags the server's by up to
-- max_skew still finds it.
local ttl = theo - server + 999
if caller then
  ttl = ttl + max_skew
end
ttl = (ttl - ttl % 1000) / 1000
-- The short form when the TAT leads by one interval below 1e8 µs.
local state
if ahead == interval and interval < 1e8 then
  state = format('2%010d%08d', theo % 1e10, interval)
else
  state = format('g%016d%d/%d', theo, interval, ahead - interval)
end
redis.call('SET', tat, state, 'PX', format('%d', ttl > 1 and ttl or 1))
reset = ahead + now - own + 999
return {take, left - take, 0, (reset - reset % 1000) / 1000}
