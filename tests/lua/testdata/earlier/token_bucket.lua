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
--- same time out twice. So no clock dates state more than 60 s past TIME,
--- and a state dated further is BADSTATE, whatever wrote it: a call with
--- the server's clock waits at most the time to fill plus 60 s, a key lives
--- at most the time to fill plus 120 s, and waits count from the caller's
--- own clock. A caller clock behind the stored state is judged at
--- the stored time, so out-of-order calls never move the bucket back or
--- credit the same time twice.
--- Changed limits apply from the last credit: tokens above a lowered
--- capacity are dropped (no free burst, no lockout: a full bucket of the new
--- size), a raised capacity keeps the tokens and fills on, and a new rate or
--- period credits at its own pace from the last credit.
--- State: a string '-<ts><tokens>': the tag '-' (the token bucket's:
--- every script's state starts with its own, see docs/scripts.md), ts, the
--- instant tokens were credited up to, as exactly 16 digits of µs, then
--- tokens (0..1e9) without leading zeros. Redis keeps it as an integer (16
--- bytes) while tokens has at most 3 digits. A ts more than 60 s past TIME
--- was not written by this script. Anything else at the key, of any type,
--- is an error and the key is left untouched (value and TTL); that includes
--- the untagged '<ts><tokens>' and the hash {tokens, ts} of earlier
--- versions of this script.
--- @key    bucket       string '-<ts><tokens>': tokens credited up to ts (µs); expires once full
--- @arg    capacity     int[1..1e9]            maximum tokens
--- @arg    rate         int[1..1e9]            tokens added per period
--- @arg    period       ms[1..1e11]            refill period; capacity/rate*period at most 1e15 µs (31 years)
--- @arg    refill       enum(smooth|interval)  how tokens come back: smooth credits them as time passes, interval adds rate at once per whole period
--- @arg    cost         int[0..1e9]            tokens to take; 0 only peeks
--- @arg    now          unix_us[1..2^52]|server_clock=0       caller clock, within 60 s of the server's TIME
--- @arg    deadline     unix_us[1..2^52]|none=0       when the caller stops waiting: a call the server runs at or after it answers EXPIRED; 0: none
--- @return allowed      bool
--- @return remaining    int[0..]               tokens left, never negative
--- @return retry_after  ms[0..]|never=-1               0 when allowed; -1 when cost exceeds capacity
--- @return reset_after  ms[0..]                until the bucket is full again
--- @error  BADARG       an argument is missing, extra, not a plain decimal integer, or out of range
--- @error  EXPIRED      the server ran the call at or after its deadline; nothing changed
--- @error  WRONGTYPE    the key holds another type of value; it is left untouched
--- @error  BADSTATE     the key is a string but not this script's state (another script's, another layout, a number out of range); it is left untouched
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

local bucket   = KEYS[1]
local capacity = int(ARGV[1], 'capacity', 1, 1e9)
local rate     = int(ARGV[2], 'rate', 1, 1e9)
local period   = int(ARGV[3], 'period', 1, 1e11)
local refill   = ARGV[4]
local cost     = int(ARGV[5], 'cost', 0, 1e9)
local now      = int(ARGV[6], 'now', 0, 2^52)
local deadline = int(ARGV[7], 'deadline', 0, 2^52)
local smooth = refill == 'smooth'
if not smooth and refill ~= 'interval' then
  bad = bad or "BADARG refill must be 'smooth' or 'interval'"
end
if bucket == nil then bad = bad or 'BADARG bucket key is missing' end
exactly(1, 7)
if bad then return redis.error_reply(bad) end

local period_us = period * 1000

-- span is the time n tokens take to come back, in µs: smooth credits rate
-- per period_us, so the n-th whole token comes after n*period_us/rate,
-- rounded up (never early); interval adds rate at once per whole period.
-- Integer division is written with %, which is exact below 2^53 and costs
-- less than a call to math.floor or math.ceil.
local function span(n)
  if smooth then
    local q, r = muldiv(n, period_us, rate)
    return r > 0 and q + 1 or q
  end
  local part = n % rate
  return ((n - part) / rate + (part > 0 and 1 or 0)) * period_us
end

-- The time an empty bucket takes to fill bounds every wait, so keeping it
-- at most 1e15 µs (31 years) keeps every instant below 2^53.
if span(capacity) > 1e15 then
  return redis.error_reply('BADARG capacity/rate*period must be at most 1e15 µs (31 years)')
end

local server, caller
now, server, caller = clock(now, deadline)
if bad then return redis.error_reply(bad) end

-- GET answers a key of another type with an error table (stored.err); a
-- string has no err field. A key that holds nothing is a full bucket at the
-- later of the caller's clock and the server's: a key the server's clock
-- expired must not let a caller that lags it count the same time again.
local stored = redis.pcall('GET', bucket)
local tokens, ts = capacity, server > now and server or now
if stored then
  if stored.err then
    return redis.error_reply('WRONGTYPE the key holds another type of value; it is left untouched')
  end
  -- One pattern checks the whole state: the tag, 16 digits, then digits;
  -- the length bound keeps them short enough to convert exactly, and
  -- tokens of more than one digit that sort below '1' (all digits) have a
  -- leading zero.
  local a, b
  if #stored <= 27 then
    a, b = match(stored, '^%-(%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d)(%d+)$')
  end
  if a and (#b == 1 or b >= '1') then
    -- tonumber, not + 0, for the fixed-width field: gopher-lua (miniredis)
    -- reads a string with a leading 0 as octal in arithmetic, Redis's Lua
    -- never does; tonumber is decimal in both.
    ts, tokens = tonumber(a), b + 0
  else
    a = nil
  end
  -- No write credits a bucket past its clock, never more than max_skew
  -- past TIME.
  if not a or ts > server + max_skew or tokens > 1e9 then
    return redis.error_reply('BADSTATE the key is not a token bucket -<ts><tokens>; it is left untouched')
  end
end

-- A late caller is judged at the stored time; own is its clock, which its
-- waits are measured from.
local own = now
if now < ts then
  now = ts
end

-- Refill up to now. mark moves only by the time the credited tokens took,
-- so no interval counts twice; a full bucket restarts its clock at now.
-- Deciding from the stored state rather than from a refilled copy keeps
-- retry_after exact: refilling rounds, a wait does not. full_at is the
-- instant the stored bucket is full.
local have = tokens < capacity and tokens or capacity
local held, mark, full_at = capacity, now, now
if have < capacity then
  full_at = ts + span(capacity - have)
  if now < full_at then
    if smooth then
      local added = muldiv(now - ts, rate, period_us)
      held, mark = have + added, ts + span(added)
    else
      local steps = (now - ts) % period_us
      steps = (now - ts - steps) / period_us
      held, mark = have + steps * rate, ts + steps * period_us
    end
  end
end

-- Waits are whole ms rounded up, counted from the caller's own clock:
-- (x + 999 - (x + 999) % 1000) / 1000 is ceil(x / 1000) for integers.
local reset = 0
if full_at > now then
  reset = full_at - own + 999
  reset = (reset - reset % 1000) / 1000
end
local want = cost > 0 and cost or 1
if want > capacity then
  return {0, held, -1, reset}
elseif have < want then
  local wait = ts + span(want - have)
  if wait > now then
    wait = wait - own + 999
    return {0, held, (wait - wait % 1000) / 1000, reset}
  end
end
if cost == 0 then
  return {1, held, 0, reset}
end

held = held - cost
full_at = mark + span(capacity - held)
-- Keys expire by the server's clock. A caller's write keeps the key
-- max_skew past the instant the bucket is full, so a call whose clock lags
-- the server's by up to max_skew still finds the state it is judged against.
local ttl = full_at - server + 999
if caller then
  ttl = ttl + max_skew
end
ttl = (ttl - ttl % 1000) / 1000
redis.call('SET', bucket, format('-%016d%d', mark, held), 'PX', format('%d', ttl > 1 and ttl or 1))
reset = full_at - own + 999
return {1, held, 0, (reset - reset % 1000) / 1000}
