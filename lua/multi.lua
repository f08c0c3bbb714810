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
--- refused with BADARG; a write with a caller clock keeps each key 60 s
--- past the instant its state is spent; a key that holds nothing is judged
--- at the later of the caller's clock and TIME. A changed rate, period or
--- burst applies from that key's last write (capped at a full burst of the
--- new size: no lockout, no free burst). A limit added later starts full;
--- a limit dropped leaves its key to expire. Arithmetic is exact for every
--- accepted input.
--- State: per key, gcra.lua's string '<tat>/<interval>/<at>' in µs;
--- anything else at any key, of any type, is an error, and no key is
--- written.
--- @key    ...keys       string '<tat>/<interval>/<at>' in µs, one per limit (gcra.lua's state); 1 to 16 distinct keys in one hash slot
--- @arg    cost          int[0..1e9]       requests this call counts for, against every limit; 0 only peeks
--- @arg    now           unix_us[0..2^52]  caller clock, within 60 s of the server's TIME; 0 uses TIME
--- @arg    ...limits     int[1..1e11]      per key in turn: burst (1..1e9), rate (1..1e9) and period in ms (1..1e11), as gcra.lua takes them
--- @return allowed       bool
--- @return denied        int[0..16]        the limit that binds a denial (1-based, KEYS order); 0 when allowed
--- @return ...per_limit  int[-1..]         per key in turn: remaining, retry_after (ms; -1 when cost exceeds its burst) and reset_after (ms)
--- @error  BADARG        an argument is missing, extra, not a plain decimal integer, or out of range; no key, more than 16, or a key twice
--- @error  WRONGTYPE     a key holds another type of value; no key is written
--- @error  BADSTATE      a key is a string but not a GCRA state; no key is written
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

local cost = int(ARGV[1], 'cost', 0, 1e9)
local now  = int(ARGV[2], 'now', 0, 2^52)
local n = #KEYS
if n == 0 or n > 16 then
  bad = bad or string.format('BADARG takes 1 to 16 keys, one per limit, got %d', n)
end

-- limit reads one number of limit i; its name says which limit it is.
local function limit(j, what, i, lo, hi)
  local v = num(ARGV[j], lo, hi)
  if v == nil then
    int(ARGV[j], string.format('%s of limit %d', what, i), lo, hi)
  end
  return v
end

-- Every limit's numbers, and its key once only: two limits on one key
-- would each count the request in the same state.
local limits, seen = {}, {}
for i = 1, math.min(n, 16) do
  limits[i] = {
    burst = limit(3 * i, 'burst', i, 1, 1e9),
    rate = limit(3 * i + 1, 'rate', i, 1, 1e9),
    period = limit(3 * i + 2, 'period', i, 1, 1e11),
  }
  local key = KEYS[i]
  if seen[key] then
    bad = bad or string.format('BADARG keys %d and %d are the same key: each limit needs its own', seen[key], i)
  end
  seen[key] = i
end
exactly(n, 2 + 3 * n)
if bad then return redis.error_reply(bad) end

-- gcra.lua's derived bounds, per limit: the emission interval in whole µs,
-- rounded up, and the tolerance burst*interval at most 1e15 µs, which
-- keeps every instant below 2^53.
for i = 1, n do
  local l = limits[i]
  if l.rate > l.period * 1000 then
    return redis.error_reply(string.format('BADARG rate of limit %d must be at most one per µs (period*1000)', i))
  end
  l.interval = math.ceil(l.period * 1000 / l.rate)
  l.tolerance = l.burst * l.interval
  if l.tolerance > 1e15 then
    return redis.error_reply(string.format('BADARG burst*period/rate of limit %d must be at most 1e15 µs (31 years)', i))
  end
end

local server, caller
now, server, caller = clock(now)
if bad then return redis.error_reply(bad) end

-- Every key is read and judged before any is written, so an error or a
-- denial at any key leaves every key as it was. Each limit is judged as
-- gcra.lua judges it (see there): a key that holds nothing at the later of
-- the caller's clock and the server's, a stored TAT at the caller's clock,
-- a changed limit from the key's last write. Waits count from the
-- caller's own clock, own.
local own = now
local want = math.max(cost, 1)
local reply = {1, 0}
local worst = 0
for i = 1, n do
  local l = limits[i]
  local stored = redis.pcall('GET', KEYS[i])
  if type(stored) == 'table' then
    return redis.error_reply(string.format('WRONGTYPE key %d holds another type of value; no key is written', i))
  end
  l.now = now
  if not stored then
    l.now = math.max(now, server)
  end
  l.theo = l.now
  if stored then
    local a, b, c = string.match(stored, '^([^/]*)/([^/]*)/([^/]*)$')
    local v, was, at = num(a, 0, 2^52 + 1e15), num(b, 1, 1e14), num(c, 0, 2^52)
    if v == nil or was == nil or at == nil or v < at or v - at > 1e15 then
      return redis.error_reply(string.format('BADSTATE key %d is not a GCRA state <tat>/<interval>/<at>; no key is written', i))
    end
    if was ~= l.interval or v - at > l.tolerance then
      local units = math.floor((v - at) / was)
      if units >= l.burst then
        v = at + l.tolerance
      else
        local q, r = muldiv(v - at - units * was, l.interval, was)
        v = at + units * l.interval + (r > 0 and q + 1 or q)
      end
    end
    l.theo = math.max(l.now, v)
  end
  l.ahead = l.theo - l.now
  local retry = 0
  if want > l.burst then
    retry = -1
  elseif l.ahead + want * l.interval > l.tolerance then
    retry = math.ceil((l.ahead + want * l.interval - l.tolerance + l.now - own) / 1000)
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
  reply[3 * i] = math.max(0, l.burst - math.ceil(l.ahead / l.interval))
  reply[3 * i + 1] = retry
  reply[3 * i + 2] = l.ahead > 0 and math.ceil((l.ahead + l.now - own) / 1000) or 0
end
if reply[1] == 0 or cost == 0 then
  return reply
end

-- Every limit has room: count cost against each. Keys expire by the
-- server's clock; a caller's write keeps each max_skew longer, so a call
-- whose clock lags the server's by up to max_skew still finds it.
for i = 1, n do
  local l = limits[i]
  local theo = l.theo + cost * l.interval
  local ahead = l.ahead + cost * l.interval
  local ttl_us = theo - server
  if caller then
    ttl_us = ttl_us + max_skew
  end
  redis.call('SET', KEYS[i], string.format('%d/%d/%d', theo, l.interval, l.now), 'PX', string.format('%d', math.max(1, math.ceil(ttl_us / 1000))))
  reply[3 * i] = math.max(0, l.burst - math.ceil(ahead / l.interval))
  reply[3 * i + 2] = math.ceil((ahead + l.now - own) / 1000)
end
return reply
