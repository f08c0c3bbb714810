--- GCRA, the generic cell rate algorithm in its virtual-scheduling form (ITU-T
--- I.371; the algorithm of redis-cell's CL.THROTTLE and go-redis/redis_rate):
--- one string holds the theoretical arrival time (TAT), the instant the steady
--- rate would be caught up. A call of cost c passes when the TAT, pushed c
--- emission intervals on, stays within burst intervals of now; it then stores
--- the pushed TAT. burst counts the requests that may pass at once, as in
--- redis_rate (redis-cell's max_burst is burst - 1). The interval is
--- period/rate rounded up to a whole µs, so the TAT stays an integer, a full
--- burst always passes at once, and a rate that does not divide the period is
--- met from below (by under 1 µs per request); a rate above one per µs is
--- refused (token_bucket takes it). Known weakness: the TAT is all it keeps,
--- so it cannot tell how many requests came. A cost of 0 peeks: it answers
--- for a cost of 1 and writes nothing. A cost above burst can never pass: it
--- is denied with retry_after -1. Denied calls change nothing, and the TAT
--- never moves back. Arithmetic is exact for every accepted input.
--- Clocks: now = 0 uses the server's TIME, one clock for every app server. A
--- caller clock (now > 0) is refused with BADARG when it is more than 60 s
--- from TIME. A write with a caller clock keeps its key 60 s past the instant
--- its state is spent on the server's clock, so a call whose clock lags TIME
--- by up to 60 s still finds the state; a call that finds no state is judged
--- at the later of its clock and TIME, so a key that expired never hands the
--- same time out twice. So no clock dates state more than 60 s past TIME: a
--- call with the server's clock waits at most the time a full burst takes
--- plus 60 s, a key lives at most the time a full burst takes plus 120 s, and
--- waits count from the caller's own clock. A caller clock behind the TAT is
--- judged at its own time against it, so it only waits longer.
--- Changed limits apply from the last write: the TAT's lead on that write's
--- clock is counted in intervals of the new rate and period, rounding up (a
--- lower rate frees no room, a higher one frees what it drains), and capped
--- at a full burst of the new size (a lowered burst is full, never locked
--- out).
--- State: a string '<tat>/<interval>/<at>': the TAT, the emission interval
--- it counts in, and the clock of the write that set it, all in µs, the TAT
--- at most 1e15 µs past <at>; anything else at the key, of any type, is an
--- error and the key is left untouched.
--- @key    tat          string '<tat>/<interval>/<at>' in µs; expires when the TAT is reached
--- @arg    burst        int[1..1e9]       requests that may pass at once
--- @arg    rate         int[1..1e9]       requests per period at the steady pace, at most one per µs
--- @arg    period       ms[1..1e11]       the period of rate; burst*period/rate at most 1e15 µs (31 years)
--- @arg    cost         int[0..1e9]       requests this call counts for; 0 only peeks
--- @arg    now          unix_us[0..2^52]  caller clock, within 60 s of the server's TIME; 0 uses TIME
--- @return allowed      bool
--- @return remaining    int[0..]          whole requests that would still pass now, never negative
--- @return retry_after  ms[-1..]          0 when allowed; -1 when cost exceeds burst
--- @return reset_after  ms[0..]           until the TAT is reached and a full burst passes again
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

local tat    = KEYS[1]
local burst  = int(ARGV[1], 'burst', 1, 1e9)
local rate   = int(ARGV[2], 'rate', 1, 1e9)
local period = int(ARGV[3], 'period', 1, 1e11)
local cost   = int(ARGV[4], 'cost', 0, 1e9)
local now    = int(ARGV[5], 'now', 0, 2^52)
if tat == nil then bad = bad or 'BADARG tat key is missing' end
exactly(1, 5)
if not bad and rate > period * 1000 then
  bad = 'BADARG rate must be at most one per µs (period*1000)'
end
if bad then return redis.error_reply(bad) end

-- The emission interval T in whole µs, rounded up (exact: period*1000 is
-- below 2^53). The tolerance burst*T bounds how far an admitted TAT runs
-- ahead of now, so keeping it at most 1e15 µs (31 years) keeps every
-- instant below 2^53.
local interval = math.ceil(period * 1000 / rate)
local tolerance = burst * interval
if tolerance > 1e15 then
  return redis.error_reply('BADARG burst*period/rate must be at most 1e15 µs (31 years)')
end

local server, caller
now, server, caller = clock(now)
if bad then return redis.error_reply(bad) end

local stored = redis.pcall('GET', tat)
if type(stored) == 'table' then
  return redis.error_reply('WRONGTYPE the key holds another type of value; it is left untouched')
end
-- A call is judged at its own clock against the stored TAT; a key that
-- holds nothing is judged at the later of the caller's clock and the
-- server's: a key the server's clock expired must not let a caller that
-- lags it schedule that time again. own is the caller's clock, which its
-- waits are measured from. A missing key is a TAT at or before now; a TAT
-- behind now counts as now, so idle time never banks more than a burst.
local own = now
if not stored then
  now = math.max(now, server)
end
local theo = now
if stored then
  local a, b, c = string.match(stored, '^([^/]*)/([^/]*)/([^/]*)$')
  local v, was, at = num(a, 0, 2^52 + 1e15), num(b, 1, 1e14), num(c, 0, 2^52)
  if v == nil or was == nil or at == nil or v < at or v - at > 1e15 then
    return redis.error_reply('BADSTATE the key is not a GCRA state <tat>/<interval>/<at>; it is left untouched')
  end
  -- A changed rate or burst applies from the last write, at: the lead the
  -- TAT had then is counted in intervals of the current rate (whole ones
  -- exactly, a part one rounded up) and capped at a full burst (fewer than
  -- burst whole intervals and a part one never pass it). It depends on the
  -- stored state alone, so waits stay exact while denied calls change
  -- nothing.
  if was ~= interval or v - at > tolerance then
    local units = math.floor((v - at) / was)
    if units >= burst then
      v = at + tolerance
    else
      local q, r = muldiv(v - at - units * was, interval, was)
      v = at + units * interval + (r > 0 and q + 1 or q)
    end
  end
  theo = math.max(now, v)
end

-- ahead is how far the TAT runs ahead of now, in µs; n more requests pass
-- while ahead + n*T <= burst*T.
local ahead = theo - now
local function ms(us)
  return math.ceil(us / 1000)
end
local function left(d)
  return math.max(0, burst - math.ceil(d / interval))
end

-- Waits count from the caller's own clock.
local function wait(us)
  return math.ceil((us + now - own) / 1000)
end
local reset = ahead > 0 and wait(ahead) or 0
local want = math.max(cost, 1)
if want > burst then
  return {0, left(ahead), -1, reset}
elseif ahead + want * interval > tolerance then
  return {0, left(ahead), wait(ahead + want * interval - tolerance), reset}
elseif cost == 0 then
  return {1, left(ahead), 0, reset}
end

theo = theo + cost * interval
ahead = ahead + cost * interval
-- Keys expire by the server's clock. A caller's write keeps the key
-- max_skew past the TAT, so a call whose clock lags the server's by up to
-- max_skew still finds it.
local ttl_us = theo - server
if caller then
  ttl_us = ttl_us + max_skew
end
redis.call('SET', tat, string.format('%d/%d/%d', theo, interval, now), 'PX', string.format('%d', math.max(1, ms(ttl_us))))
return {1, left(ahead), 0, wait(ahead)}
