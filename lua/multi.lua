--- Checks several limits on one request and counts it against all of them
--- atomically, all or nothing: say 10 a second AND 1000 an hour AND 10000 a
--- day for one user.
--- Each limit is a GCRA (gcra.lua, the same state and the same answers)
--- with a key of its own; a call of cost c passes only when every limit
--- has room for c, and then counts c against every one. When any limit
--- denies, nothing is written anywhere. GCRA because it keeps one string
--- per limit and its check is arithmetic on that string alone: every limit
--- is judged before anything is written, with no member to add or remove,
--- so all or nothing costs nothing extra, and a key here is a key gcra.lua
--- shares. The reply names the limit that binds a denial (denied, 1-based
--- in KEYS order: the longest wait, a cost that can never pass first, the
--- first of equals; 0 when allowed) and, per limit, remaining, retry_after
--- and reset_after as gcra.lua answers them: after the write when allowed;
--- when denied, as the key stands, with retry_after 0 for a limit that has
--- room (the request waits for the longest retry_after of all). A cost of
--- 0 peeks: it answers for a cost of 1 and writes nothing. A cost above a
--- limit's burst can never pass: that limit answers retry_after -1. At most
--- 16 limits, so a call reads and writes at most 16 keys; they must be
--- distinct and share one {hash tag} (Redis Cluster answers CROSSSLOT
--- otherwise; the script cannot tell a slot cheaply).
--- Clocks, changed limits and state are gcra.lua's, for each limit: now =
--- 0 uses the server's TIME; a caller clock more than 60 s from TIME is
--- refused with BADARG, and so is a state dated further ahead (BADSTATE); a write with a caller clock keeps each key 60 s
--- past the instant its state is spent; a key that holds nothing is judged
--- at the later of the caller's clock and TIME. A changed rate, period or
--- burst applies from that key's last write (capped at a full burst of the
--- new size: no lockout, no free burst; a debt gcra.lua's take charge left
--- is not capped, it drains). A limit added later starts full;
--- a limit dropped leaves its key to expire. Arithmetic is exact for every
--- accepted input.
--- State: per key, gcra.lua's string, '2<tat><interval>',
--- 'g<tat><interval>/<more>' or 'g<tat><interval>=<lead>+<debt>' (a
--- refund's or a charge's) in µs (see there); anything else at any key, of
--- any type, is an error, and no key is written.
--- @key    ...keys[1..16] string '2<tat><interval>', 'g<tat><interval>/<more>' or 'g<tat><interval>=<lead>+<debt>' in µs, one per limit (gcra.lua's state); 1 to 16 distinct keys in one hash slot
--- @arg    cost          int[0..1e9]       requests this call counts for, against every limit; 0 only peeks
--- @arg    now           unix_us[1..2^52]|server_clock=0  caller clock, within 60 s of the server's TIME
--- @arg    deadline      unix_us[1..2^52]|none=0  when the caller stops waiting: a call the server runs at or after it answers EXPIRED; 0: none
--- @arg    ...limits[1..16] (burst int[1..1e9], rate int[1..1e9], period ms[1..1e11])  per key in turn, as gcra.lua takes them
--- @return allowed       bool
--- @return denied        int[0..16]        the limit that binds a denial (1-based, KEYS order); 0 when allowed
--- @return ...per_limit[1..16] (remaining int[0..], retry_after ms[0..]|never=-1, reset_after ms[0..])  per key in turn; retry_after is never when cost exceeds its burst
--- @error  BADARG        an argument is missing, extra, not a plain decimal integer, or out of range; no key, more than 16, or a key twice
--- @error  EXPIRED       the server ran the call at or after its deadline; no key is written
--- @error  WRONGTYPE     a key holds another type of value; no key is written
--- @error  BADSTATE      a key is a string but not a GCRA state (another script's, another layout, a number out of range); no key is written
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

local cost     = int(ARGV[1], 'cost', 0, 1e9)
local now      = int(ARGV[2], 'now', 0, 2^52)
local deadline = int(ARGV[3], 'deadline', 0, 2^52)
local n = #KEYS
if n == 0 or n > 16 then
  bad = bad or string.format('BADARG takes 1 to 16 keys, one per limit, got %d', n)
end

-- limit reads one number of limit i. The name that says which limit it is
-- costs a string.format, so it is made only for a bad number: int is asked
-- again with it, when no earlier problem is kept in bad.
local function limit(j, what, i, lo, hi)
  local first = bad
  local v = int(ARGV[j], what, lo, hi)
  if not v and not first then
    bad = nil
    int(ARGV[j], string.format('%s of limit %d', what, i), lo, hi)
  end
  return v
end

-- Every limit's numbers, and its key once only: two limits on one key
-- would each count the request in the same state.
local limits, seen = {}, {}
for i = 1, n < 16 and n or 16 do
  limits[i] = {
    burst = limit(3 * i + 1, 'burst', i, 1, 1e9),
    rate = limit(3 * i + 2, 'rate', i, 1, 1e9),
    period = limit(3 * i + 3, 'period', i, 1, 1e11),
  }
  local key = KEYS[i]
  if seen[key] then
    bad = bad or string.format('BADARG keys %d and %d are the same key: each limit needs its own', seen[key], i)
  end
  seen[key] = i
end
exactly(n, 3 + 3 * n)
if bad then return redis.error_reply(bad) end

-- gcra.lua's derived bounds, per limit: the emission interval in whole µs,
-- rounded up (integer division written with %, exact below 2^53), and the
-- tolerance burst*interval at most 1e15 µs, which keeps every instant
-- below 2^53.
for i = 1, n do
  local l = limits[i]
  if l.rate > l.period * 1000 then
    return redis.error_reply(string.format('BADARG rate of limit %d must be at most one per µs (period*1000)', i))
  end
  local interval = l.period * 1000
  local part = interval % l.rate
  interval = (interval - part) / l.rate
  if part > 0 then
    interval = interval + 1
  end
  l.interval = interval
  l.tolerance = l.burst * interval
  if l.tolerance > 1e15 then
    return redis.error_reply(string.format('BADARG burst*period/rate of limit %d must be at most 1e15 µs (31 years)', i))
  end
end

local server, caller
now, server, caller = clock(now, deadline)
if bad then return redis.error_reply(bad) end

-- Every key is read and judged before any is written, so an error or a
-- denial at any key leaves every key as it was. Each limit is judged as
-- gcra.lua judges it (see there): a key that holds nothing at the later of
-- the caller's clock and the server's, a stored TAT at the caller's clock,
-- a changed limit from the key's last write. Waits count from the
-- caller's own clock, own, in whole ms rounded up
-- ((x + 999 - (x + 999) % 1000) / 1000 is ceil(x / 1000) for integers).
local own = now
local want = cost > 0 and cost or 1
local reply = {1, 0}
local worst = 0
for i = 1, n do
  local l = limits[i]
  local burst, interval, tolerance = l.burst, l.interval, l.tolerance
  -- GET answers a key of another type with an error table (stored.err).
  local stored = redis.pcall('GET', KEYS[i])
  local at, theo = now, now
  if not stored then
    if server > now then
      at, theo = server, server
    end
  else
    if stored.err then
      return redis.error_reply(string.format('WRONGTYPE key %d holds another type of value; no key is written', i))
    end
    -- Either form of gcra.lua's state, read as gcra.lua reads it (see
    -- there): the short one's TAT modulo 1e10 is the one from a second
    -- before the oldest a live key can hold; tonumber for the fixed-width
    -- fields: gopher-lua reads a leading 0 as octal in arithmetic.
    local v, was, lead
    local owed = 0
    if #stored == 19 then
      v, was = match(stored, '^2(%d%d%d%d%d%d%d%d%d%d)(%d%d%d%d%d%d%d%d)$')
    end
    if v then
      was = tonumber(was)
      local base = server - max_skew - 1000000
      v = base + (tonumber(v) - base) % 1e10
      lead = was > 0 and was
    elseif #stored <= 66 then
      local more
      v, was, more = match(stored, '^g(%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d)([1-9]%d*)/(%d+)$')
      if v and #stored <= 49 and (#more == 1 or more >= '1') then
        v, was = tonumber(v), was + 0
        lead = was + more
      elseif not v then
        -- The settled form a refund or a charge leaves: the whole lead,
        -- then the debt past a full burst.
        v, was, lead, owed = match(stored, '^g(%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d)([1-9]%d*)=(%d+)%+(%d+)$')
        if v and (#lead == 1 or lead >= '1') and (#owed == 1 or owed >= '1') and #lead <= 16 and #owed <= 16 then
          v, was, lead, owed = tonumber(v), was + 0, lead + 0, owed + 0
          if owed > lead or owed > 1e15 + 2 * max_skew then
            lead = nil
          end
        else
          lead = nil
        end
      end
    end
    if not lead or was > 1e14 or lead - owed > 1e15 or v < lead or v - lead > server + max_skew then
      return redis.error_reply(string.format('BADSTATE key %d is not a GCRA state 2<tat><interval>, g<tat><interval>/<more> or g<tat><interval>=<lead>+<debt>; no key is written', i))
    end
    if was ~= interval or lead - owed > tolerance then
      local keep = lead - owed
      local units = keep % was
      units = (keep - units) / was
      if units >= burst then
        keep = tolerance
      else
        local q, r = muldiv(keep - units * was, interval, was)
        if r > 0 then
          q = q + 1
        end
        keep = units * interval + q
      end
      if owed > 0 then
        local q, r = muldiv(owed, interval, was)
        if r > 0 then
          q = q + 1
        end
        owed = q < 1e15 and q or 1e15
      end
      v = v - lead + keep + owed
    end
    if v > now then
      theo = v
    end
  end
  local ahead = theo - at
  l.at, l.theo, l.ahead = at, theo, ahead
  local retry = 0
  if want > burst then
    retry = -1
  elseif ahead + want * interval > tolerance then
    retry = ahead + want * interval - tolerance + at - own + 999
    retry = (retry - retry % 1000) / 1000
  end
  -- The limit that binds a denial: a cost that can never pass, else the
  -- longest wait; the first of equals.
  if retry ~= 0 then
    reply[1] = 0
    if reply[2] == 0 or (worst ~= -1 and (retry == -1 or retry > worst)) then
      reply[2] = i
      worst = retry
    end
  end
  local used = ahead % interval
  used = (ahead - used) / interval + (used > 0 and 1 or 0)
  local reset = 0
  if ahead > 0 then
    reset = ahead + at - own + 999
    reset = (reset - reset % 1000) / 1000
  end
  reply[3 * i] = burst > used and burst - used or 0
  reply[3 * i + 1] = retry
  reply[3 * i + 2] = reset
end
if reply[1] == 0 or cost == 0 then
  return reply
end

-- Every limit has room: count cost against each, in gcra.lua's state
-- (the TAT, the interval, the TAT's lead on the clock it was judged at,
-- less one interval).
-- Keys expire by the server's clock; a caller's write keeps each max_skew
-- longer, so a call whose clock lags the server's by up to max_skew still
-- finds it.
for i = 1, n do
  local l = limits[i]
  local interval = l.interval
  local theo = l.theo + cost * interval
  local ahead = l.ahead + cost * interval
  local ttl = theo - server + 999
  if caller then
    ttl = ttl + max_skew
  end
  ttl = (ttl - ttl % 1000) / 1000
  local state
  if ahead == interval and interval < 1e8 then
    state = format('2%010d%08d', theo % 1e10, interval)
  else
    state = format('g%016d%d/%d', theo, interval, ahead - interval)
  end
  redis.call('SET', KEYS[i], state, 'PX', format('%d', ttl > 1 and ttl or 1))
  local used = ahead % interval
  used = (ahead - used) / interval + (used > 0 and 1 or 0)
  local reset = ahead + l.at - own + 999
  reply[3 * i] = l.burst > used and l.burst - used or 0
  reply[3 * i + 2] = (reset - reset % 1000) / 1000
end
return reply
