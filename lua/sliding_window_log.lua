--- Sliding window log: an exact rolling window. Every admitted unit of cost
--- is one member of a sorted set, scored by its time in µs, and counts while
--- its time t satisfies t > now - window; a call is admitted when the live
--- members plus its cost fit within limit. There is no boundary burst and no
--- approximation, at a price: memory and work per call grow with limit. The
--- set never holds more than limit members, so limit is capped at 10000. At
--- the cap a key takes about 1.3 MB (about 130 bytes a member), and an
--- admit of cost 10000 keeps Redis busy 13 to 22 ms (Redis 7.0, MEMORY USAGE
--- and INFO commandstats on a 2-core machine); an admit of cost c adds c members
--- and removes those that left. Where that matters, use
--- sliding_window_counter. A cost of 0 peeks: it
--- answers for a cost of 1 and writes nothing. A cost above limit can never
--- pass: it is denied with retry_after -1. Denied calls change nothing:
--- expired members are removed only by an admit.
--- Clocks: now = 0 uses the server's TIME, one clock for every app server. A
--- caller clock (now > 0) is refused with BADARG when it is more than 60 s
--- from TIME. A write with a caller clock keeps its key 60 s past the instant
--- its state is spent on the server's clock, so a call whose clock lags TIME
--- by up to 60 s still finds the state; a call that finds no state is judged
--- at the later of its clock and TIME, so a key that expired never hands the
--- same time out twice. So no clock dates state more than 60 s past TIME,
--- and a log dated further is BADSTATE, whatever wrote it: a call with the
--- server's clock waits at most the window plus 60 s, a key lives at most
--- the window plus 120 s, and waits count from the caller's own clock. A caller clock behind the newest member is judged at that member's
--- time, so the log stays in time order.
--- Changed limits are exact: the log holds the times themselves, so a new
--- limit or window applies to them at once (lowered: denied until enough
--- members leave; raised: the difference passes).
--- State: a sorted set of at most 10000 members '<us>:<n>', each scored by
--- its <us>, numbered 1, 2, ... within one µs (the ':' keeps them apart
--- from concurrency.lua's lease ids, which cannot hold one; see
--- docs/scripts.md). A key of another type, a set with more members, or
--- one whose oldest or newest member is not of that form, or whose newest
--- is more than 60 s past TIME, is an error and the key is left untouched
--- (members and TTL). So is the member a denial's wait is read from, the
--- (limit-cost+1)-th newest (a peek counts cost 1), and every member an
--- admit removes (those that left the window: each is read and checked
--- first, so no member another writer put there is removed). The other
--- members in between are not read: that would cost O(limit) per call.
--- @key    log          sorted set of members '<us>:<n>' scored by their time in µs; expires with its newest member
--- @arg    limit        int[1..10000]     most cost admitted within any window
--- @arg    window       ms[1..1e11]       window length
--- @arg    cost         int[0..1e9]       units to admit; 0 only peeks
--- @arg    now          unix_us[1..2^52]|server_clock=0  caller clock, within 60 s of the server's TIME
--- @arg    deadline     unix_us[1..2^52]|none=0  when the caller stops waiting: a call the server runs at or after it answers EXPIRED; 0: none
--- @return allowed      bool
--- @return remaining    int[0..]          units that still fit in the window, never negative
--- @return retry_after  ms[0..]|never=-1          0 when allowed; -1 when cost exceeds limit
--- @return reset_after  ms[0..]           until the newest member leaves the window
--- @error  BADARG       an argument is missing, extra, not a plain decimal integer, or out of range
--- @error  EXPIRED      the server ran the call at or after its deadline; nothing changed
--- @error  WRONGTYPE    the key holds another type of value; it is left untouched
--- @error  BADSTATE     the key has this script's type but not its state (another script's members, numbers out of range); it is left untouched
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

local log      = KEYS[1]
local limit    = int(ARGV[1], 'limit', 1, 10000)
local window   = int(ARGV[2], 'window', 1, 1e11)
local cost     = int(ARGV[3], 'cost', 0, 1e9)
local now      = int(ARGV[4], 'now', 0, 2^52)
local deadline = int(ARGV[5], 'deadline', 0, 2^52)
if log == nil then bad = bad or 'BADARG log key is missing' end
exactly(1, 5)
if bad then return redis.error_reply(bad) end

local server, caller
now, server, caller = clock(now, deadline)
if bad then return redis.error_reply(bad) end

-- now (<= 2^52 + 6e7) plus the window (<= 1e14 µs) stays below 2^53, so
-- every time below is exact in a double.
local window_us = window * 1000

local function badstate()
  return redis.error_reply('BADSTATE the key is not a sliding window log; it is left untouched')
end
-- time returns the time of a member read WITHSCORES, or nil when the
-- member is not one this script writes: '<us>:<n>', us without a leading
-- zero, equal to the score and no more than max_skew past TIME (no write
-- dates one later), n from 1 to 10000. The score is Redis's own text of a
-- double (servers print it differently), so it is compared as a number.
-- The length bound keeps every number short enough to convert exactly.
local latest = server + max_skew
local function time(member, score)
  local at, n
  if member and #member <= 22 then
    at, n = match(member, '^(%d+):([1-9]%d*)$')
  end
  if at and #n <= 5 and n + 0 <= 10000 and (#at == 1 or at + 0 >= 10 ^ (#at - 1)) then
    local us = score + 0
    if us == at + 0 and us <= latest then
      return us
    end
  end
  return nil
end

-- ZCARD answers a key of another type with an error table (size.err); a
-- number has no err field.
local size = redis.pcall('ZCARD', log)
if type(size) == 'table' then
  return redis.error_reply('WRONGTYPE the key holds another type of value; it is left untouched')
elseif size > 10000 then
  return badstate()
end
-- Members are added at the newest time or later, so the last member holds
-- the newest time and the first the oldest; a late caller is judged at the
-- newest.
local last, first
if size > 0 then
  local newest = redis.call('ZRANGE', log, '-1', '-1', 'WITHSCORES')
  last = time(newest[1], newest[2])
  if last == nil then
    return badstate()
  end
  first = last
  if size > 1 then
    local oldest = redis.call('ZRANGE', log, '0', '0', 'WITHSCORES')
    first = time(oldest[1], oldest[2])
    if first == nil then
      return badstate()
    end
  end
end
-- A late caller is judged at the newest member's time. A key that holds
-- nothing is judged at the later of the caller's clock and the server's: a
-- key the server's clock expired must not let a caller that lags it log in
-- that window again.
local own = now
if last then
  if now < last then
    now = last
  end
elseif server > now then
  now = server
end

-- A member at gone or before has left the window. Counting instead of
-- trimming keeps denied calls and peeks free of writes; when the oldest
-- member is still inside, every member is, and there is nothing to count.
local gone = now - window_us
local live = 0
if last and last > gone then
  if first > gone then
    live = size
  else
    live = redis.call('ZCOUNT', log, '(' .. format('%d', gone), '+inf')
  end
end

-- Waits are whole ms rounded up, counted from the caller's own clock:
-- (x + 999 - (x + 999) % 1000) / 1000 is ceil(x / 1000) for integers.
local reset = 0
if live > 0 then
  reset = last + window_us - own + 999
  reset = (reset - reset % 1000) / 1000
end
local remaining = limit > live and limit - live or 0

local want = cost > 0 and cost or 1
if want > limit then
  return {0, remaining, -1, reset}
elseif live + want > limit then
  -- No member is newer than now, so the live ones are the newest: the call
  -- fits once the (limit-want+1)-th newest has left, older ones first. When
  -- that is the oldest member, it has been read already.
  local us = first
  if size + want - limit - 1 > 0 then
    local i = format('%d', want - limit - 1)
    local m = redis.call('ZRANGE', log, i, i, 'WITHSCORES')
    us = time(m[1], m[2])
    if us == nil then
      return badstate()
    end
  end
  local wait = us + window_us - own + 999
  return {0, remaining, (wait - wait % 1000) / 1000, reset}
elseif cost == 0 then
  return {1, remaining, 0, reset}
end

-- The members that left the window are the oldest size - live; each is
-- read and checked before any is removed, so a member some other writer
-- put in the set is never deleted (BADSTATE, nothing written).
if first and first <= gone then
  local old = redis.call('ZRANGE', log, '0', format('%d', size - live - 1), 'WITHSCORES')
  for i = 1, #old, 2 do
    if time(old[i], old[i + 1]) == nil then
      return badstate()
    end
  end
  redis.call('ZREMRANGEBYSCORE', log, '-inf', format('%d', gone))
end
-- Members at one time are numbered 1, 2, ... and all leave together, so
-- their count is the last number in use.
local stamp = format('%d', now)
local n = 0
if last == now then
  n = redis.call('ZCOUNT', log, stamp, stamp)
end
-- unpack is limited by Lua's C stack (about 8000 values): add in chunks.
local batch, used = {}, 0
for i = 1, cost do
  batch[used + 1] = stamp
  batch[used + 2] = stamp .. ':' .. format('%d', n + i)
  used = used + 2
  if used == 2000 or i == cost then
    redis.call('ZADD', log, unpack(batch, 1, used))
    used = 0
  end
end
-- Keys expire by the server's clock: the log is over once its newest
-- member leaves the window. A caller's write keeps the key max_skew
-- longer, so a call whose clock lags the server's by up to max_skew still
-- finds it.
local ttl = now + window_us - server + 999
if caller then
  ttl = ttl + max_skew
end
ttl = (ttl - ttl % 1000) / 1000
redis.call('PEXPIRE', log, format('%d', ttl > 1 and ttl or 1))
reset = now + window_us - own + 999
return {1, remaining - cost, 0, (reset - reset % 1000) / 1000}
