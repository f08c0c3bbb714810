--- GCRA, the generic cell rate algorithm in its virtual-scheduling form (ITU-T
--- I.371; the algorithm of redis-cell's CL.THROTTLE and go-redis/redis_rate):
--- one string holds the theoretical arrival time (TAT), the instant the steady
--- rate would be caught up. A request of cost c passes when the TAT, pushed c
--- emission intervals on, stays within burst intervals of now; it then stores
--- the pushed TAT. burst counts the requests that may pass at once, as in
--- redis_rate (redis-cell's max_burst is burst - 1). The interval is
--- period/rate rounded up to a whole µs, so the TAT stays an integer, a full
--- burst always passes at once, and a rate that does not divide the period is
--- met from below (by under 1 µs per request); a rate above one per µs is
--- refused (token_bucket takes it). Known weakness: the TAT is all it keeps,
--- so it cannot tell how many requests came.
--- A call decides 1 to 64 requests for the key, in order, each answered
--- exactly as the same requests sent one call each at that instant would be,
--- on one read and one write: a batch is its calls in a row. A call of 2
--- to 64 distinct keys takes one request per key (request i on key i),
--- each decided on its own key exactly as its own call at that instant
--- would be: many limits of one shape (many users, many addresses) in one
--- call; every key is read before any is written, so an error at one key
--- changes nothing at any. take all: a
--- request passes whole or not at all; a cost of 0 peeks (it answers for a
--- cost of 1 and writes nothing); a cost above burst can never pass (denied
--- with retry_after -1). take at_most (redis_rate's AllowAtMost): a request
--- takes what is left, up to its cost, and answers how many it took; when
--- nothing is left it takes nothing and answers when one request passes. A
--- denied request changes nothing, and no take moves the TAT back. A
--- request the server runs at or after its deadline answers expired (-1)
--- and counts nothing. Arithmetic is exact for every accepted input.
--- Settling a reservation (a take all, then its final cost): take refund
--- gives cost units back, moving the TAT back cost intervals but never
--- behind the instant, so no more than a full burst comes back; a key with
--- no state (never used, expired or reset) or already full gets nothing
--- back and nothing is written. take charge counts cost units whatever the
--- limit: the TAT moves to the later of it and the instant, plus cost
--- intervals, past the burst if need be (debt: takes are denied until it
--- drains); a key with no state is charged from the instant. Neither is
--- ever denied. A charge takes at most what keeps the debt within 1e15 µs
--- (31 years) past a full burst, and allowed says how much it took. Both
--- use the current limit's interval, whatever the reservation
--- was made under. A cost of 0 moves nothing and writes nothing. Their
--- reply: allowed, the units refunded or charged; remaining, whole requests
--- that pass now; retry_after, until a request of 1 passes (0: now);
--- reset_after, until a full burst passes again. The debt is the one state
--- that makes a call wait, or a key live, past the bounds below: by the
--- debt it holds, no more.
--- Clocks: now = 0 uses the server's TIME, one clock for every app server. A
--- caller clock (now > 0) is refused with BADARG when it is more than 60 s
--- from TIME. A write with a caller clock keeps its key 60 s past the instant
--- its state is spent on the server's clock, so a call whose clock lags TIME
--- by up to 60 s still finds the state; a request that finds no state is
--- judged at the later of its clock and TIME, so a key that expired never
--- hands the same time out twice. So no clock dates state more than 60 s
--- past TIME, and a state dated further is BADSTATE, whatever wrote it: a
--- call with the server's clock waits at most the time a full burst takes
--- plus 60 s, a key lives at most the time a full burst takes plus 120 s,
--- and waits count from the caller's own clock. A caller clock behind the
--- TAT is judged at its own time against it, so it only waits longer.
--- Changed limits apply from the last write: the TAT's lead on that write's
--- clock is counted in intervals of the new rate and period, rounding up (a
--- lower rate frees no room, a higher one frees what it drains), and capped
--- at a full burst of the new size (a lowered burst is full, never locked
--- out). A debt is counted in intervals of the new rate too, rounding
--- up, and is not capped by the burst (to at most 1e15 µs).
--- State: a string in one of two forms, all in µs, numbers without
--- leading zeros. The long one, 'g<tat><interval>/<more>': the tag g
--- (GCRA's: every script's state starts with its own, see docs/scripts.md),
--- the TAT as exactly 16 digits, then the emission interval it counts in
--- and, after the '/', the TAT's lead on the clock of the write that set it
--- less one interval. The short one, '2<tat><interval>', for a TAT one
--- interval (below 1e8 µs) ahead of its write, as one request on an idle
--- key leaves it: the tag 2, the TAT modulo 1e10 in 10 digits and the
--- interval in 8, 19 digits that Redis keeps as an integer (16 bytes, not
--- a string); the TAT is the one from 60 s and 1 s behind TIME on. The
--- settled one, 'g<tat><interval>=<lead>+<debt>', which only a refund or a
--- charge writes, for a lead below one interval or past a full burst: the
--- TAT as 16 digits, the interval, the TAT's whole lead on its write's
--- clock and the part of that lead past the writing limit's full burst
--- (the debt: at most 1e15 µs, and 120 s more in a state an earlier
--- version wrote when a refund's clock lagged the charge's; the rest at
--- most 1e15 µs too); earlier versions refuse it. A refund or a charge
--- dates its write at the later of its clock and the write before it (no
--- later than the TAT), so a lead that only callers' skew makes is never
--- debt, which a changed limit would count again. A state
--- whose write's clock is more than 60 s past TIME was not written by this
--- script. Anything else at the key, of any type, is an error and the key is
--- left untouched (value and TTL); that includes the untagged states of
--- earlier versions of this script. The 6-argument layout of earlier
--- versions (cost, now, deadline after period) and gcra_at_most.lua's are
--- refused with BADARG.
--- @key    ...tats[1..64] string '2<tat><interval>', 'g<tat><interval>/<more>' or 'g<tat><interval>=<lead>+<debt>' in µs; expires when the TAT is reached. One key takes 1 to 64 requests; 2 to 64 distinct keys take one request each, in one hash slot on a Cluster
--- @arg    burst        int[1..1e9]       requests that may pass at once
--- @arg    rate         int[1..1e9]       requests per period at the steady pace, at most one per µs
--- @arg    period       ms[1..1e11]       the period of rate; burst*period/rate at most 1e15 µs (31 years)
--- @arg    now          unix_us[1..2^52]|server_clock=0  caller clock of every request, within 60 s of the server's TIME
--- @arg    take         enum(all|at_most|refund|charge) all: a request passes whole or not at all; at_most: it takes what is left, up to its cost; refund: its cost comes back, up to a full burst; charge: its cost is counted, into debt if need be
--- @arg    ...requests[1..64] (cost int[0..1e9], deadline unix_us[1..2^52]|none=0)  decided in turn: cost 0 only peeks (refund, charge: moves nothing); deadline, when the caller stops waiting (0: none)
--- @return ...decisions[1..64] (allowed int[0..1e9]|expired=-1, remaining int[0..], retry_after ms[0..]|never=-1, reset_after ms[0..])  per request in turn: allowed is 1 or 0 (take at_most: the requests taken; refund, charge: the units moved), expired with zeros for a request run at or after its deadline; remaining, whole requests that would still pass now; retry_after, 0 when it passed (refund, charge: until a request of 1 passes), never when its cost exceeds burst; reset_after, until a full burst passes again
--- @error  BADARG       an argument is missing, extra, not a plain decimal integer, or out of range; no request, or more than 64; many keys but not one request each, or a key twice
--- @error  WRONGTYPE    a key holds another type of value; nothing is written, at any key
--- @error  BADSTATE     a key is a string but not this script's state (another script's, another layout, a number out of range); nothing is written, at any key
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

local burst   = int(ARGV[1], 'burst', 1, 1e9)
local rate    = int(ARGV[2], 'rate', 1, 1e9)
local period  = int(ARGV[3], 'period', 1, 1e11)
local now     = int(ARGV[4], 'now', 0, 2^52)
local take    = ARGV[5]
local at_most = take == 'at_most'
-- settle is -1 for take refund, 1 for take charge, nil for a take.
local settle
if not at_most and take ~= 'all' then
  if take == 'refund' then
    settle = -1
  elseif take == 'charge' then
    settle = 1
  else
    -- Also what an earlier version's layout (cost, now, deadline after
    -- period) meets: its clock is no word.
    bad = bad or "BADARG take must be 'all', 'at_most', 'refund' or 'charge' (ARGV: burst, rate, period, now, take, then cost and deadline per request)"
  end
end
-- One key takes 1 to 64 requests in turn; 2 to 64 keys take one request
-- each, request i on key i. A key named twice would be read twice and
-- written twice, the second write losing the first's count.
local n = (#ARGV - 5) / 2
local nkeys = #KEYS
if bad then
elseif nkeys == 0 then
  bad = 'BADARG takes 1 to 64 keys, got 0'
elseif nkeys == 1 and (n < 1 or n > 64 or n % 1 ~= 0) then
  bad = string.format('BADARG takes 1 key and 5 arguments, then 1 to 64 requests of 2 (cost, deadline), got %d and %d', nkeys, #ARGV)
elseif nkeys > 1 and (nkeys > 64 or n ~= nkeys) then
  bad = string.format('BADARG takes 2 to 64 keys and 5 arguments, then one request of 2 (cost, deadline) per key, got %d and %d', nkeys, #ARGV)
end
if not bad and nkeys > 1 then
  local seen = {}
  for i = 1, nkeys do
    local key = KEYS[i]
    if seen[key] then
      bad = string.format('BADARG keys %d and %d are the same key: each request of a call of many keys needs its own', seen[key], i)
      break
    end
    seen[key] = i
  end
end

-- Every request is read before anything else, into the reply's slots (4
-- per request: cost and deadline until it is decided). One request, the
-- common call, is read with no loop and no name to build.
local reply
if not bad and n == 1 then
  reply = {int(ARGV[6], 'cost of request 1', 0, 1e9), int(ARGV[7], 'deadline of request 1', 0, 2^52), 0, 0}
elseif not bad then
  -- The common values need no call (a cost of 1 or 0, no deadline); the
  -- first bad one is named again with its request, a string.format the
  -- good calls never pay for.
  reply = {}
  for i = 1, n do
    local cost, deadline = ARGV[4 + 2 * i], ARGV[5 + 2 * i]
    cost = cost == '1' and 1 or cost == '0' and 0 or int(cost, 'cost', 0, 1e9)
    deadline = deadline == '0' and 0 or int(deadline, 'deadline', 0, 2^52)
    if bad then
      bad = nil
      int(ARGV[4 + 2 * i], string.format('cost of request %d', i), 0, 1e9)
      int(ARGV[5 + 2 * i], string.format('deadline of request %d', i), 0, 2^52)
      break
    end
    reply[4 * i - 3], reply[4 * i - 2] = cost, deadline
  end
end
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
now, server, caller = clock(now, 0)
if bad then return redis.error_reply(bad) end

-- A request the server runs at or after its deadline answers expired and
-- counts nothing, as its own call would have answered EXPIRED before
-- reading the key: when every request has, the key is not read at all.
local live = false
for i = 1, n do
  local deadline = reply[4 * i - 2]
  if deadline == 0 or server < deadline then
    live = true
    break
  end
end
if not live then
  for i = 1, n do
    reply[4 * i - 3], reply[4 * i - 2], reply[4 * i - 1], reply[4 * i] = -1, 0, 0, 0
  end
  return reply
end

-- Every key's state is read before any request is decided, so a key of
-- another type, or another script's state, is an error that changes
-- nothing at any key. A request past its deadline reads nothing, as its
-- own call would not (one key is read when any of its requests lives).
-- The state read, v, waits in its request's third reply slot (false for
-- none) until the request is decided: no table more for it.
-- GET answers a key of another type with an error table (stored.err); a
-- string has no err field. v is the stored TAT as the current limit reads
-- it, nil for no state.
for k = 1, nkeys do
  local v
  local deadline = reply[4 * k - 2]
  if nkeys == 1 or deadline == 0 or server < deadline then
    local stored = redis.pcall('GET', KEYS[k])
    if stored then
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
      local was, lead
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
          -- The settled form, which only a refund or a charge writes: the lead
          -- in full (below one interval after a refund) and the part of it a
          -- charge put past a full burst.
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
      -- The write that set the state was at v - lead, on a clock no write lets
      -- run more than max_skew past TIME, and led by at most 1e15 µs past the
      -- debt a charge owes.
      if not lead or was > 1e14 or lead - owed > 1e15 or v < lead or v - lead > server + max_skew then
        return redis.error_reply('BADSTATE the key is not a GCRA state 2<tat><interval>, g<tat><interval>/<more> or g<tat><interval>=<lead>+<debt>; it is left untouched')
      end
      -- The last write's clock, for a settle's write (below), in the key's
      -- fourth reply slot until it is decided.
      reply[4 * k] = v - lead
      -- A changed rate or burst applies from the last write, v - lead: its lead
      -- is counted in intervals of the current rate (whole ones exactly, a part
      -- one rounded up) and capped at a full burst (fewer than burst whole
      -- intervals and a part one never pass it). It depends on the stored state
      -- alone, so waits stay exact while denied calls change nothing.
      -- A debt a charge owes is not capped: it is counted in intervals of the
      -- current rate too, rounding up, to at most 1e15 µs.
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
    end
  end
  reply[4 * k - 1] = v or false
end

-- Each request in turn, as its own call would judge the state the one
-- before it left: a request is judged at its own clock against the TAT; one
-- that finds no state at the later of the caller's clock and the server's
-- (a key the server's clock expired must not let a caller that lags it
-- schedule that time again). own is the caller's clock, which waits are
-- measured from. A TAT behind the instant counts as the instant, so idle
-- time never banks more than a burst. ahead is how far the TAT runs ahead,
-- in µs; n more requests pass while ahead + n*T <= burst*T, so burst -
-- ceil(ahead/T) are left. Waits are whole ms rounded up ((x + 999 - (x +
-- 999) % 1000) / 1000 is ceil(x / 1000) for integers). A write is kept in
-- v (the state the next request would read: the same limit, so nothing to
-- carry over) and last, the TAT's lead on its instant, and stored once.
local own = now
for k = 1, nkeys do
  local from, to = k, k
  if nkeys == 1 then
    from, to = 1, n
  end
  local v = reply[4 * k - 1] or nil
  local wrote = reply[4 * k]
  local last
  -- same is the slot of the last request decided on the state as it stands
  -- (a denial or a peek changes nothing), and same_cost its cost: a request
  -- of that cost gets the same answer, unworked (a denied flood's batch).
  local same, same_cost
  for i = from, to do
    local j = 4 * i
    local cost, deadline = reply[j - 3], reply[j - 2]
    if deadline > 0 and server >= deadline then
      reply[j - 3], reply[j - 2], reply[j - 1], reply[j] = -1, 0, 0, 0
    elseif settle then
      -- A refund or a charge, never denied: count is the units it moves. A
      -- refund moves the TAT back by cost intervals, never behind the
      -- instant (no more than a full burst comes back), and finds nothing to
      -- give back on a key with no state; a charge pushes it on by cost
      -- intervals, past the burst if need be (debt), up to 1e15 µs past a
      -- full burst (cost * interval can pass 2^53; count * interval cannot).
      local at, theo = own, own
      if not v then
        if server > own then
          at, theo = server, server
        end
      elseif v > own then
        theo = v
      end
      local ahead = theo - at
      local count = 0
      if settle < 0 then
        if v and ahead > 0 then
          local used = ahead % interval
          used = (ahead - used) / interval + (used > 0 and 1 or 0)
          if cost < used then
            count, ahead = cost, ahead - cost * interval
          else
            count, ahead = used, 0
          end
        end
      else
        local room = tolerance + 1e15 - ahead
        if room > 0 then
          room = (room - room % interval) / interval
          count = cost < room and cost or room
          ahead = ahead + count * interval
        end
      end
      if count > 0 then
        -- Dated at the later of its clock and the write before it, no
        -- later than the TAT: a lead its clock sees only because an
        -- earlier caller's clock ran ahead is not debt, which a changed
        -- limit would count again in its intervals (a lockout).
        v, last = at + ahead, ahead
        if wrote and wrote > at then
          last = v - (wrote < v and wrote or v)
        end
        wrote = v - last
      end
      local used = ahead % interval
      used = (ahead - used) / interval + (used > 0 and 1 or 0)
      local wait, reset = 0, 0
      if ahead + interval > tolerance then
        wait = ahead + interval - tolerance + at - own + 999
        wait = (wait - wait % 1000) / 1000
      end
      if ahead > 0 then
        reset = ahead + at - own + 999
        reset = (reset - reset % 1000) / 1000
      end
      reply[j - 3], reply[j - 2], reply[j - 1], reply[j] = count, burst > used and burst - used or 0, wait, reset
    elseif cost == same_cost then
      reply[j - 3], reply[j - 2], reply[j - 1], reply[j] = reply[same - 3], reply[same - 2], reply[same - 1], reply[same]
    else
      local at, theo = own, own
      if not v then
        if server > own then
          at, theo = server, server
        end
      elseif v > own then
        theo = v
      end
      local ahead = theo - at
      local used = ahead % interval
      used = (ahead - used) / interval + (used > 0 and 1 or 0)
      local left = burst > used and burst - used or 0
      -- count is what the request would take: its cost, or at_most what is
      -- left of it; with nothing left that is a request of 1 that cannot
      -- pass, and a peek answers 0 taken.
      local count = cost
      if at_most and cost > left then
        count = left
      end
      local want = count > 0 and count or 1
      local over = ahead + want * interval - tolerance
      if want > burst or over > 0 or count == 0 then
        local reset = 0
        if ahead > 0 then
          reset = ahead + at - own + 999
          reset = (reset - reset % 1000) / 1000
        end
        if want > burst then
          reply[j - 3], reply[j - 2], reply[j - 1], reply[j] = 0, left, -1, reset
        elseif over > 0 then
          local wait = over + at - own + 999
          reply[j - 3], reply[j - 2], reply[j - 1], reply[j] = 0, left, (wait - wait % 1000) / 1000, reset
        else
          reply[j - 3], reply[j - 2], reply[j - 1], reply[j] = at_most and 0 or 1, left, 0, reset
        end
        same, same_cost = j, cost
      else
        ahead = ahead + count * interval
        v, last = theo + count * interval, ahead
        used = used + count
        local reset = ahead + at - own + 999
        reply[j - 3], reply[j - 2], reply[j - 1], reply[j] = at_most and count or 1, burst > used and burst - used or 0, 0, (reset - reset % 1000) / 1000
        same_cost = nil
      end
    end
  end

  if last then
    -- Keys expire by the server's clock. A caller's write keeps the key
    -- max_skew past the TAT, so a call whose clock lags the server's by up
    -- to max_skew still finds it. The short form when the TAT leads by one
    -- interval below 1e8 µs.
    local ttl = v - server + 999
    if caller then
      ttl = ttl + max_skew
    end
    ttl = (ttl - ttl % 1000) / 1000
    local state
    if last == interval and interval < 1e8 then
      state = format('2%010d%08d', v % 1e10, interval)
    elseif last >= interval and last <= tolerance then
      state = format('g%016d%d/%d', v, interval, last - interval)
    else
      -- Only a refund (a lead below one interval) or a charge (past a full
      -- burst) leaves these: the debt is what passes the burst.
      state = format('g%016d%d=%d+%d', v, interval, last, last > tolerance and last - tolerance or 0)
    end
    redis.call('SET', KEYS[k], state, 'PX', format('%d', ttl > 1 and ttl or 1))
  end
end
return reply
