--- Leaky bucket as a meter (policing): each unit of cost pours water into a
--- bucket that holds capacity units and drains rate units every period; a
--- call whose water does not fit is denied at once. Nothing is queued or
--- delayed, so it is not the shaping leaky bucket: it lets a burst of up to
--- capacity through and then the drain rate, as a token bucket would. It is
--- the continuous-state leaky bucket of ITU-T I.371: the state is the level
--- of water, in µs of draining, and the time it was last poured into (GCRA's
--- virtual-scheduling form keeps a theoretical arrival time instead). A unit
--- drains in period/rate µs, rounded up to a whole µs, so the level stays an
--- integer, a full burst of capacity units always fits, and a rate that does
--- not divide the period is met from below. A cost of 0 peeks: it answers for
--- a cost of 1 and writes nothing. A cost above capacity can never pass: it is
--- denied with retry_after -1. Denied calls change nothing. Arithmetic is
--- exact for every accepted input.
--- Clocks: now = 0 uses the server's TIME, one clock for every app server. A
--- caller clock (now > 0) is refused with BADARG when it is more than 60 s
--- from TIME. A write with a caller clock keeps its key 60 s past the instant
--- its state is spent on the server's clock, so a call whose clock lags TIME
--- by up to 60 s still finds the state; a call that finds no state is judged
--- at the later of its clock and TIME, so a key that expired never hands the
--- same time out twice. So no clock dates state more than 60 s past TIME: a
--- call with the server's clock waits at most the time to drain a full bucket
--- plus 60 s, a key lives at most the time to drain a full bucket plus 120 s,
--- and waits count from the caller's own clock. A caller clock behind the
--- stored state is judged at the stored time, so out-of-order calls never
--- drain the same time twice.
--- Changed limits apply from the last pour: the water then is counted in
--- units of the new rate and period, rounding up (a lower rate frees no
--- room, a higher one frees what it drains), capped at a full bucket of the
--- new capacity (a lowered capacity is full, never locked out), and drains
--- at the new rate since.
--- State: a hash with exactly the fields level (µs of water, 0..1e15), ts
--- (µs) and unit (the µs per unit it was poured at, 1..1e14); anything else
--- at the key, of any type, is an error and the key is left untouched.
--- @key    bucket       hash {level, ts, unit}: µs of water at ts, the last time water was poured; expires once empty
--- @arg    capacity     int[1..1e9]       units the bucket holds
--- @arg    rate         int[1..1e9]       units drained per period, at most one per µs
--- @arg    period       ms[1..1e11]       drain period; capacity*period/rate at most 1e15 µs (31 years)
--- @arg    cost         int[0..1e9]       units to pour; 0 only peeks
--- @arg    now          unix_us[0..2^52]  caller clock, within 60 s of the server's TIME; 0 uses TIME
--- @return allowed      bool
--- @return remaining    int[0..]          whole units that still fit, never negative
--- @return retry_after  ms[-1..]          0 when allowed; -1 when cost exceeds capacity
--- @return reset_after  ms[0..]           until the bucket is empty
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

local bucket   = KEYS[1]
local capacity = int(ARGV[1], 'capacity', 1, 1e9)
local rate     = int(ARGV[2], 'rate', 1, 1e9)
local period   = int(ARGV[3], 'period', 1, 1e11)
local cost     = int(ARGV[4], 'cost', 0, 1e9)
local now      = int(ARGV[5], 'now', 0, 2^52)
if bucket == nil then bad = bad or 'BADARG bucket key is missing' end
exactly(1, 5)
if not bad and rate > period * 1000 then
  bad = 'BADARG rate must be at most one per µs (period*1000)'
end
if bad then return redis.error_reply(bad) end

-- I.371's increment I: the µs one unit takes to drain. A full bucket bounds
-- every level, so keeping it at most 1e15 µs (31 years) keeps every instant
-- below 2^53.
local unit = math.ceil(period * 1000 / rate)
local full = capacity * unit
if full > 1e15 then
  return redis.error_reply('BADARG capacity*period/rate must be at most 1e15 µs (31 years)')
end

local server, caller
now, server, caller = clock(now)
if bad then return redis.error_reply(bad) end

local size = redis.pcall('HLEN', bucket)
if type(size) ~= 'number' then
  return redis.error_reply('WRONGTYPE the key holds another type of value; it is left untouched')
end
local level, ts, was
if size > 0 then
  local state = redis.call('HMGET', bucket, 'level', 'ts', 'unit')
  level, ts, was = num(state[1], 0, 1e15), num(state[2], 0, 2^52), num(state[3], 1, 1e14)
  if size ~= 3 or level == nil or ts == nil or was == nil then
    return redis.error_reply('BADSTATE the key is not a leaky bucket {level, ts, unit}; it is left untouched')
  end
end

-- A late caller is judged at the stored time; own is its clock, which its
-- waits are measured from.
-- A key that holds nothing is judged at the later of the caller's clock
-- and the server's: a key the server's clock expired must not let a caller
-- that lags it drain the same time again.
local own = now
ts = ts or math.max(now, server)
if now < ts then
  now = ts
end

-- A changed rate or capacity applies from the last pour: the level then is
-- counted in units of the current rate (whole units exactly, a part unit
-- rounded up) and capped at a full bucket (fewer than capacity whole units
-- and a part one never pass it). It depends on the stored state alone, so
-- waits stay exact while denied calls change nothing.
if level and (was ~= unit or level > full) then
  local units = math.floor(level / was)
  if units >= capacity then
    level = full
  else
    local q, r = muldiv(level - units * was, unit, was)
    level = units * unit + (r > 0 and q + 1 or q)
  end
end
-- I.371's X' = X - (ta - LCT), floored at 0: the water left now. It is an
-- exact integer, so every wait below is exact too.
local water = 0
if level then
  water = math.max(0, level - (now - ts))
end

local function ms(us)
  return math.ceil(us / 1000)
end
local remaining = math.floor((full - water) / unit)
local reset_ms = water > 0 and ms(now + water - own) or 0
local want = math.max(cost, 1)
if want > capacity then
  return {0, remaining, -1, reset_ms}
elseif water + want * unit > full then
  return {0, remaining, ms(now + water + want * unit - full - own), reset_ms}
elseif cost == 0 then
  return {1, remaining, 0, reset_ms}
end

water = water + cost * unit
-- Keys expire by the server's clock. A caller's write keeps the key
-- max_skew past the instant the bucket is empty, so a call whose clock
-- lags the server's by up to max_skew still finds the water.
local ttl_us = now + water - server
if caller then
  ttl_us = ttl_us + max_skew
end
redis.call('HSET', bucket, 'level', string.format('%d', water), 'ts', string.format('%d', now),
  'unit', string.format('%d', unit))
redis.call('PEXPIRE', bucket, string.format('%d', math.max(1, ms(ttl_us))))
return {1, remaining - cost, 0, ms(now + water - own)}
