--- Caps the requests in flight per key: at most limit leases live at once,
--- each under an id the caller chose, each expiring ttl after it was taken
--- or last renewed. acquire takes a lease when fewer than limit are live;
--- an id that is already live is the same lease, extended, so an acquire
--- sent twice (a client retrying after a timeout) never takes two slots.
--- renew extends a live lease to ttl from now, never shortening it. release
--- ends a live lease; it is idempotent: a lease already released or
--- expired answers allowed 0. A call that answers allowed 0 changes
--- nothing. A holder that crashes never releases: its lease stops counting
--- when it expires, and the next call that writes removes every expired
--- lease (at most the set's size, which is at most the largest limit used,
--- never above 10000).
--- The caller picks lease ids: a script has no randomness a caller cannot
--- predict (Redis 7.0's math.random replays one sequence from each server
--- start), an id known before the call makes acquire safe to retry, and
--- whoever knows an id can renew or release that lease, so ids must be
--- random and unguessable (128 random bits; the ratelimit package makes
--- them). After a denied acquire, retry_after is when enough leases will
--- have expired for one more if none is released or renewed: a release
--- frees a slot sooner, a renewal later.
--- Clocks: now = 0 uses the server's TIME, one clock for every app server.
--- A caller clock (now > 0) is refused with BADARG when it is more than 60 s
--- from TIME. A lease expires ttl after the clock of the call that took or
--- renewed it, and a call counts the leases that expire after its own
--- clock: a caller whose clock runs s ahead counts a lease as expired up to
--- s early, and may take its slot while the holder still works, so use the
--- server's clock unless the callers' clocks agree. A write with a caller
--- clock keeps its key 60 s past its last lease's expiry on the server's
--- clock. So a key lives at most ttl plus 120 s.
--- Changed limits: a lowered limit revokes no lease; acquires are denied
--- until enough leases end. A raised one admits the difference at once. A
--- changed ttl applies to leases taken or renewed from then on.
--- State: a sorted set of at most 10000 members, each a lease id scored by
--- its expiry in µs, at most a day and 60 s past TIME (lease ids hold no
--- ':' and are never '<digits>-<digits>', so sliding_window_log.lua's
--- members, today's and its earlier versions', are never taken for leases;
--- see docs/scripts.md). A key of another type, a set with more members, or one
--- whose oldest or newest member, or the lease the call names, is not of
--- that form is an error and the key is left untouched (members and TTL).
--- So is a member the call reads to answer it: the lease a denied acquire
--- waits for, the next newest on a release of the newest, and every expired
--- lease a write removes (each is read and checked first, so no member
--- another writer put there is removed); a foreign one is BADSTATE. The
--- other members in between are not read: that would cost O(limit) per
--- call.
--- @key    leases       sorted set of lease ids scored by their expiry in µs; expires with its last lease
--- @arg    op           enum(acquire|renew|release)  take a lease, extend one, or end one
--- @arg    lease        string/^[A-Za-z0-9_-]{1,64}$/  the lease id: 1 to 64 of A-Z, a-z, 0-9, '_' and '-', not <digits>-<digits>, random and unguessable
--- @arg    limit        int[1..10000]     most leases live at once
--- @arg    ttl          ms[1..86400000]   how long a lease lives unless renewed or released (at most a day); release checks it but does not use it
--- @arg    now          unix_us[1..2^52]|server_clock=0  caller clock, within 60 s of the server's TIME
--- @arg    deadline     unix_us[1..2^52]|none=0  when the caller stops waiting: a call the server runs at or after it answers EXPIRED; 0: none (a release can always go without one)
--- @return allowed      bool              acquire: the lease is held; renew: it was live and now lives ttl from now; release: it was live and is gone
--- @return remaining    int[0..]          leases that could still be taken now, never negative
--- @return retry_after  ms[0..]           after a denied acquire, until enough leases expire for one more if none is released or renewed; else 0
--- @return reset_after  ms[0..]           until every live lease has expired, if none is renewed
--- @error  BADARG       an argument is missing, extra, not a plain decimal integer, or out of range
--- @error  EXPIRED      the server ran the call at or after its deadline; nothing changed
--- @error  WRONGTYPE    the key holds another type of value; it is left untouched
--- @error  BADSTATE     the key has this script's type but not its state (another script's members, numbers out of range); it is left untouched
--- @multi  its multi-key form (docs/scripts.md) runs up to 64 calls of this script, each on its own keys, in one EVALSHA, each answered as a call of its own; this file alone takes one call
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
-- one is named by int or by the script's own check before this runs. A
-- call of a multi-key form taken by the script itself (see calls) gives
-- its own counts, gotk and gota.
local function exactly(nkeys, nargs, gotk, gota)
  gotk, gota = gotk or #KEYS, gota or #ARGV
  if not bad and (gotk ~= nkeys or gota ~= nargs) then
    bad = string.format('BADARG takes %d key(s) and %d arguments, got %d and %d', nkeys, nargs, gotk, gota)
  end
end

-- calls reads the layout of a script that takes its multi-key form itself
-- (its @multi says so) when sent 2 or more keys: ARGV is, per call, its
-- key count, its argument count and its arguments; KEYS, every call's keys
-- in turn, as luagen's form takes them. It returns the calls, 4 numbers
-- each (the offsets before the call's keys and arguments, and their
-- counts), and how many; or nil and the error reply luagen's form gives
-- for the same layout, before any call runs.
local function calls()
  local plan, nkeys, nargv, k, a, n = {}, #KEYS, #ARGV, 0, 1, 0
  -- Counts are mostly those of the call before: the same string (Lua
  -- keeps one copy of each) is read once.
  local rk, vk, ra, va
  while a <= nargv do
    local nk, na = ARGV[a], ARGV[a + 1]
    if n == 64 or not nk or not na then
      nk = nil
    end
    if nk == rk then
      nk = vk
    elseif nk == '0' or nk and find(nk, '^[1-9]%d?%d?%d?$') then
      rk, nk = nk, tonumber(nk)
      vk = nk
    else
      nk = nil
    end
    if na == ra then
      na = va
    elseif na == '0' or na and find(na, '^[1-9]%d?%d?%d?$') then
      ra, na = na, tonumber(na)
      va = na
    else
      na = nil
    end
    if not (nk and na) then
      return nil, redis.error_reply('BADARG multi-key call: ARGV must be, for each of 1 to 64 calls, its key count, its argument count and its arguments')
    end
    if k + nk > nkeys or a + 1 + na > nargv then
      return nil, redis.error_reply(string.format('BADARG multi-key call: call %d names more keys or arguments than were sent', n + 1))
    end
    plan[4 * n + 1], plan[4 * n + 2], plan[4 * n + 3], plan[4 * n + 4] = k, nk, a + 1, na
    n, k, a = n + 1, k + nk, a + 2 + na
  end
  if n == 0 or k ~= nkeys then
    return nil, redis.error_reply(string.format('BADARG multi-key call: %d keys sent and %d named, in %d calls (1 to 64)', nkeys, k, n))
  end
  return plan, n
end

-- clock reads the server's TIME and returns the instant to judge the call
-- at, the server's instant, and whether it is the caller's clock. now = 0
-- is the server's clock, shared by every app server. A caller's clock is
-- refused beyond max_skew of TIME, so no caller can date state, or a key's
-- TTL, more than max_skew away from the server's clock. deadline (0 for
-- none) is the instant the caller stops waiting for the answer: a call the
-- server runs at or after it is EXPIRED and changes nothing, since no one
-- will act on its answer (a client that retried, or a server that stalled,
-- must not count a request the caller already gave up on). server, when
-- given, is the TIME read for an earlier call of the same EVALSHA: its
-- calls run at one instant.
local function clock(now, deadline, server)
  if not server then
    local t = redis.call('TIME')
    server = t[1] * 1000000 + t[2]
  end
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

local leases   = KEYS[1]
local op       = ARGV[1]
local lease    = ARGV[2]
local limit    = int(ARGV[3], 'limit', 1, 10000)
local ttl      = int(ARGV[4], 'ttl', 1, 86400000)
local now      = int(ARGV[5], 'now', 0, 2^52)
local deadline = int(ARGV[6], 'deadline', 0, 2^52)
if op ~= 'acquire' and op ~= 'renew' and op ~= 'release' then
  bad = bad or "BADARG op must be 'acquire', 'renew' or 'release'"
end

-- id reports whether s can be a lease id: ids are stored as members and
-- checked when read back, so foreign members are told apart. '<digits>-
-- <digits>' is no id: earlier versions of sliding_window_log.lua wrote
-- their members so.
local function id(s)
  return type(s) == 'string' and #s >= 1 and #s <= 64 and not find(s, '[^0-9A-Za-z_%-]') and not find(s, '^%d+%-%d+$')
end
if not id(lease) then
  bad = bad or "BADARG lease must be 1 to 64 of A-Z, a-z, 0-9, '_' and '-', and not <digits>-<digits>"
end
if leases == nil then bad = bad or 'BADARG leases key is missing' end
exactly(1, 6)
if bad then return redis.error_reply(bad) end

local server, caller
now, server, caller = clock(now, deadline)
if bad then return redis.error_reply(bad) end
local ttl_us = ttl * 1000

local function badstate()
  return redis.error_reply('BADSTATE the key is not a set of leases scored by their expiry; it is left untouched')
end

-- expiry reads a member and its score as this script writes them: a lease
-- id and a whole µs, no later than a lease taken now could expire (the
-- longest ttl, from a caller clock max_skew ahead). The score is Redis's
-- own text of a double, so it is read with tonumber.
local latest = server + max_skew + 86400000000
local function expiry(member, score)
  local us = tonumber(score)
  if id(member) and us and us >= 0 and us <= latest and us == math.floor(us) then
    return us
  end
  return nil
end

local size = redis.pcall('ZCARD', leases)
if type(size) ~= 'number' then
  return redis.error_reply('WRONGTYPE the key holds another type of value; it is left untouched')
elseif size > 10000 then
  return badstate()
end
-- last is the latest expiry: the newest member's score.
local last = 0
if size > 0 then
  local newest = redis.call('ZRANGE', leases, '-1', '-1', 'WITHSCORES')
  last = expiry(newest[1], newest[2])
  if last == nil then
    return badstate()
  end
  if size > 1 then
    local oldest = redis.call('ZRANGE', leases, '0', '0', 'WITHSCORES')
    if expiry(oldest[1], oldest[2]) == nil then
      return badstate()
    end
  end
end
-- The lease this call names, if it is live: a lease expires at its score.
local mine = redis.call('ZSCORE', leases, lease)
if mine then
  mine = expiry(lease, mine)
  if mine == nil then
    return badstate()
  end
  if mine <= now then
    mine = nil
  end
end
-- Leases count while they expire after now. Counting instead of trimming
-- keeps the calls that answer allowed 0 free of writes.
local live = 0
if last > now then
  live = redis.call('ZCOUNT', leases, '(' .. string.format('%d', now), '+inf')
end

local function ms(us)
  return math.ceil(us / 1000)
end
local function answer(ok, n, retry, until_us)
  local reset = 0
  if n > 0 then
    reset = ms(until_us - now)
  end
  return {ok, math.max(0, limit - n), retry, reset}
end

if op == 'acquire' and not mine and live >= limit then
  -- No member expires later than last, so the live ones are the newest:
  -- one more fits once live - limit + 1 of them have expired, the soonest
  -- first, the (live - limit + 1)-th of the live ones in expiry order.
  local i = string.format('%d', size - limit)
  local m = redis.call('ZRANGE', leases, i, i, 'WITHSCORES')
  local us = expiry(m[1], m[2])
  if us == nil then
    return badstate()
  end
  return answer(0, live, ms(us - now), last)
elseif op ~= 'acquire' and not mine then
  return answer(0, live, 0, last)
end

-- A release of the newest lease leaves the next newest last: it is read,
-- and checked, before anything is written.
if op == 'release' and mine == last and live > 1 then
  local top = redis.call('ZRANGE', leases, '-2', '-1', 'WITHSCORES')
  if top[3] == lease then
    last = expiry(top[1], top[2])
    if last == nil then
      return badstate()
    end
  end
end

-- Every write removes the leases that have expired first (bounded by the
-- set's size), so crashed holders' leases never pile up. They are the
-- oldest size - live members, each read and checked before any is
-- removed: a member some other writer put in the set is never deleted.
if live < size then
  local old = redis.call('ZRANGE', leases, '0', string.format('%d', size - live - 1), 'WITHSCORES')
  for i = 1, #old, 2 do
    if expiry(old[i], old[i + 1]) == nil then
      return badstate()
    end
  end
  redis.call('ZREMRANGEBYSCORE', leases, '-inf', string.format('%d', now))
end
if op == 'release' then
  redis.call('ZREM', leases, lease)
  live = live - 1
else
  -- A lease's expiry never moves back, so a late renew cannot cut one short.
  local until_us = now + ttl_us
  if mine and mine > until_us then
    until_us = mine
  end
  redis.call('ZADD', leases, string.format('%d', until_us), lease)
  if not mine then
    live = live + 1
  end
  last = math.max(last, until_us)
end
-- Keys expire by the server's clock, with their last lease. A caller's
-- write keeps the key max_skew longer, so a call whose clock lags the
-- server's by up to max_skew still finds it.
if live > 0 then
  local ttl_key = last - server
  if caller then
    ttl_key = ttl_key + max_skew
  end
  redis.call('PEXPIRE', leases, string.format('%d', math.max(1, ms(ttl_key))))
end
return answer(1, live, 0, last)
