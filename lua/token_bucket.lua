--- Token bucket: takes cost tokens from a bucket that holds at most capacity
--- tokens and gains rate tokens every period. Refill "smooth" credits whole
--- tokens as time passes, rate per period (the time a credit took is rounded
--- up to whole µs, so the bucket never runs fast); refill "interval" adds rate
--- tokens at once each time a whole period has passed (the two styles in the
--- Redis guides). A cost of 0 peeks: it answers for a cost of 1 and writes
--- nothing. A cost above capacity can never pass: it is denied with
--- retry_after -1. Denied calls change nothing. Arithmetic is exact for every
--- accepted input (products that could pass 2^53 go through muldiv).
--- Clocks: now = 0 uses the server's TIME, one clock for every app server. A
--- caller clock (now > 0) is refused with BADARG when it is more than 60 s
--- from TIME. A write with a caller clock keeps its key 60 s past the instant
--- its state is spent on the server's clock, so a call whose clock lags TIME
--- by up to 60 s still finds the state; a call that finds no state is judged
--- at the later of its clock and TIME, so a key that expired never hands the
--- same time out twice. So no clock dates state more than 60 s past TIME: a
--- call with the server's clock waits at most the time to fill plus 60 s, a
--- key lives at most the time to fill plus 120 s, and waits count from the
--- caller's own clock. A caller clock behind the stored state is judged at
--- the stored time, so out-of-order calls never move the bucket back or
--- credit the same time twice.
--- Changed limits apply from the last credit: tokens above a lowered
--- capacity are dropped (no free burst, no lockout: a full bucket of the new
--- size), a raised capacity keeps the tokens and fills on, and a new rate or
--- period credits at its own pace from the last credit.
--- State: a hash with exactly the fields tokens (0..1e9) and ts (µs, the
--- instant tokens were credited up to); anything else at the key, of any
--- type, is an error and the key is left untouched.
--- @key    bucket       hash {tokens, ts}; expires once full
--- @arg    capacity     int[1..1e9]            maximum tokens
--- @arg    rate         int[1..1e9]            tokens added per period
--- @arg    period       ms[1..1e11]            refill period; capacity/rate*period at most 1e15 µs (31 years)
--- @arg    refill       enum(smooth|interval)  how tokens come back: smooth credits them as time passes, interval adds rate at once per whole period
--- @arg    cost         int[0..1e9]            tokens to take; 0 only peeks
--- @arg    now          unix_us[0..2^52]       caller clock, within 60 s of the server's TIME; 0 uses TIME
--- @return allowed      bool
--- @return remaining    int[0..]               tokens left, never negative
--- @return retry_after  ms[-1..]               0 when allowed; -1 when cost exceeds capacity
--- @return reset_after  ms[0..]                until the bucket is full again
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
local refill   = ARGV[4]
local cost     = int(ARGV[5], 'cost', 0, 1e9)
local now      = int(ARGV[6], 'now', 0, 2^52)
if refill ~= 'smooth' and refill ~= 'interval' then
  bad = bad or "BADARG refill must be 'smooth' or 'interval'"
end
if bucket == nil then bad = bad or 'BADARG bucket key is missing' end
exactly(1, 6)
if bad then return redis.error_reply(bad) end

local period_us = period * 1000
local smooth = refill == 'smooth'

-- The time an empty bucket takes to fill bounds every wait, so keeping it
-- at most 1e15 µs (31 years) keeps every instant below 2^53.
local fill_us
if smooth then
  local q, r = muldiv(capacity, period_us, rate)
  fill_us = r > 0 and q + 1 or q
else
  fill_us = math.ceil(capacity / rate) * period_us
end
if fill_us > 1e15 then
  return redis.error_reply('BADARG capacity/rate*period must be at most 1e15 µs (31 years)')
end

local server, caller
now, server, caller = clock(now)
if bad then return redis.error_reply(bad) end

local size = redis.pcall('HLEN', bucket)
if type(size) ~= 'number' then
  return redis.error_reply('WRONGTYPE the key holds another type of value; it is left untouched')
end
-- A key that holds nothing is a full bucket at the later of the caller's
-- clock and the server's: a key the server's clock expired must not let a
-- caller that lags it count the same time again.
local tokens, ts = capacity, math.max(now, server)
if size > 0 then
  local state = redis.call('HMGET', bucket, 'tokens', 'ts')
  tokens, ts = num(state[1], 0, 1e9), num(state[2], 0, 2^52)
  if size ~= 2 or tokens == nil or ts == nil then
    return redis.error_reply('BADSTATE the key is not a token bucket {tokens, ts}; it is left untouched')
  end
end

-- A late caller is judged at the stored time; own is its clock, which its
-- waits are measured from.
local own = now
if now < ts then
  now = ts
end

-- The instant a bucket that held have tokens, credited up to mark, holds n
-- (have < n <= capacity). Deciding from the stored state rather than from a
-- refilled copy keeps retry_after exact: refilling rounds, a wait does not.
local function at(have, mark, n)
  if smooth then
    local q, r = muldiv(n - have, period_us, rate)
    return mark + (r > 0 and q + 1 or q)
  end
  return mark + math.ceil((n - have) / rate) * period_us
end

-- Refill up to now. mark moves only by the time the credited tokens took,
-- so no interval counts twice; a full bucket restarts its clock at now.
local have = math.min(tokens, capacity)
local held, mark = capacity, now
if have < capacity and now < at(have, ts, capacity) then
  if smooth then
    local added = muldiv(now - ts, rate, period_us)
    local q, r = muldiv(added, period_us, rate)
    held, mark = have + added, ts + (r > 0 and q + 1 or q)
  else
    local steps = math.floor((now - ts) / period_us)
    held, mark = have + steps * rate, ts + steps * period_us
  end
end

local function ms(us)
  return math.ceil(us / 1000)
end
local reset_us = 0
if have < capacity and at(have, ts, capacity) > now then
  reset_us = at(have, ts, capacity) - own
end
local want = math.max(cost, 1)
if want > capacity then
  return {0, held, -1, ms(reset_us)}
elseif have < want then
  local ok_at = at(have, ts, want)
  if ok_at > now then
    return {0, held, ms(ok_at - own), ms(reset_us)}
  end
end
if cost == 0 then
  return {1, held, 0, ms(reset_us)}
end

held = held - cost
local full_at = at(held, mark, capacity)
-- Keys expire by the server's clock. A caller's write keeps the key
-- max_skew past the instant the bucket is full, so a call whose clock lags
-- the server's by up to max_skew still finds the state it is judged against.
local ttl_us = full_at - server
if caller then
  ttl_us = ttl_us + max_skew
end
redis.call('HSET', bucket, 'tokens', string.format('%d', held), 'ts', string.format('%d', mark))
redis.call('PEXPIRE', bucket, string.format('%d', math.max(1, ms(ttl_us))))
return {1, held, 0, ms(full_at - own)}
