--- Fixed window: counts cost against limit in windows of a fixed length that
--- are aligned to the epoch (window k covers [k*window, (k+1)*window)), so every
--- app server agrees on the boundaries and a day-long window starts at UTC
--- midnight. Known weakness: the count starts again at every boundary, so up
--- to 2*limit can pass within a moment (limit at the end of one window, limit
--- at the start of the next); a span of any length d touches at most
--- ceil(d/window)+1 windows and admits at most limit in each. A cost of 0
--- peeks: it answers for a cost of 1 and writes nothing. A cost above limit
--- can never pass: it is denied with retry_after -1. Denied calls change
--- nothing. Arithmetic is exact for every accepted input.
--- Clocks: now = 0 uses the server's TIME, one clock for every app server. A
--- caller clock (now > 0) is refused with BADARG when it is more than 60 s
--- from TIME. A write with a caller clock keeps its key 60 s past the instant
--- its state is spent on the server's clock, so a call whose clock lags TIME
--- by up to 60 s still finds the state; a call that finds no state is judged
--- at the later of its clock and TIME, so a key that expired never hands the
--- same time out twice. So no clock dates state more than 60 s past TIME: a
--- call with the server's clock waits at most the window plus 60 s, a key
--- lives at most the window plus 120 s, and waits count from the caller's own
--- clock. A caller clock in an earlier window than the newest counted call is
--- counted in that call's window, so the count never moves back.
--- Changed limits: the state keeps the count and the time of the newest call
--- it counts, not a window number. A new limit applies to the count at once
--- (lowered: denied until the window ends; raised: the difference passes).
--- A new window length counts the stored calls in the new window that holds
--- the newest of them, and nowhere else: a longer window never forgets them
--- (no free burst), a shorter one may count them once in its current window.
--- State: a hash with exactly the fields n (0..1e9) and t (µs); anything else
--- at the key, of any type, is an error and the key is left untouched.
--- @key    counter      hash {n, t}: n counted in the window that holds t, the newest counted call; expires when that window ends
--- @arg    limit        int[1..1e9]       most cost admitted per window
--- @arg    window       ms[1..1e11]       window length, aligned to the epoch
--- @arg    cost         int[0..1e9]       cost to count; 0 only peeks
--- @arg    now          unix_us[0..2^52]  caller clock, within 60 s of the server's TIME; 0 uses TIME
--- @return allowed      bool
--- @return remaining    int[0..]          cost still admitted in this window, never negative
--- @return retry_after  ms[-1..]          0 when allowed; -1 when cost exceeds limit
--- @return reset_after  ms[0..]           until the window ends; 0 when nothing is counted
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

local counter = KEYS[1]
local limit   = int(ARGV[1], 'limit', 1, 1e9)
local window  = int(ARGV[2], 'window', 1, 1e11)
local cost    = int(ARGV[3], 'cost', 0, 1e9)
local now     = int(ARGV[4], 'now', 0, 2^52)
if counter == nil then bad = bad or 'BADARG counter key is missing' end
exactly(1, 4)
if bad then return redis.error_reply(bad) end

local server, caller
now, server, caller = clock(now)
if bad then return redis.error_reply(bad) end

local size = redis.pcall('HLEN', counter)
if type(size) ~= 'number' then
  return redis.error_reply('WRONGTYPE the key holds another type of value; it is left untouched')
end
local n, t = 0, nil
if size > 0 then
  local state = redis.call('HMGET', counter, 'n', 't')
  n, t = num(state[1], 0, 1e9), num(state[2], 0, 2^52)
  if size ~= 2 or n == nil or t == nil then
    return redis.error_reply('BADSTATE the key is not a fixed window {n, t}; it is left untouched')
  end
end

-- Times stay below 2^52 + 1e14 < 2^53, and floor(x / y) of integers below
-- 2^53 is exact, so the windows need no mul-div.
local window_us = window * 1000
-- The stored calls count in the window that holds the newest of them, t; a
-- late caller counts there too, and a later window starts from 0. A key
-- that holds nothing counts from the later of the caller's clock and the
-- server's: a key the server's clock expired must not let a caller that
-- lags it count in that window again.
t = t or math.max(now, server)
local k, kt = math.floor(now / window_us), math.floor(t / window_us)
if kt > k then
  k = kt
elseif kt < k then
  n = 0
end

local function ms(us)
  return math.ceil(us / 1000)
end
local end_at = (k + 1) * window_us
local reset_ms = n > 0 and ms(end_at - now) or 0
local want = math.max(cost, 1)
if want > limit then
  return {0, math.max(0, limit - n), -1, reset_ms}
elseif n + want > limit then
  return {0, math.max(0, limit - n), ms(end_at - now), reset_ms}
elseif cost == 0 then
  return {1, limit - n, 0, reset_ms}
end

-- Keys expire by the server's clock. A caller's write keeps the key
-- max_skew past the window's end, so a call whose clock lags the server's
-- by up to max_skew still finds the count.
local ttl_us = end_at - server
if caller then
  ttl_us = ttl_us + max_skew
end
n = n + cost
redis.call('HSET', counter, 'n', string.format('%d', n), 't', string.format('%d', math.max(t, now)))
redis.call('PEXPIRE', counter, string.format('%d', math.max(1, ms(ttl_us))))
return {1, limit - n, 0, ms(end_at - now)}
