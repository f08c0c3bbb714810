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
--- same time out twice. So no clock dates state more than 60 s past TIME,
--- and a state dated further is BADSTATE, whatever wrote it: a call with
--- the server's clock waits at most the time to drain a full bucket plus
--- 60 s, a key lives at most the time to drain a full bucket plus 120 s,
--- and waits count from the caller's own clock. A caller clock behind the
--- stored state is judged at the stored time, so out-of-order calls never
--- drain the same time twice.
--- Settling a reservation (a pour, then its final cost), with one more
--- argument: refund gives cost units back, lowering the water by cost
--- units but never below empty, so no more than what has not drained comes
--- back; a key with no state (never used, expired or reset) or already
--- empty gets nothing back and nothing is written. charge pours cost units
--- whatever the limit: past a full bucket if need be (debt: pours are
--- denied until it drains), at most what keeps the debt within 1e15 µs
--- (31 years) past a full bucket; a key with no state is charged from the
--- instant. Neither is ever denied, and both use the current limit's unit,
--- whatever the reservation was made under. The bucket has no windows:
--- a settle after a limit change moves the water as the change left it, and
--- after a reset a refund finds nothing and a charge starts the bucket
--- afresh. A cost of 0 moves nothing and writes nothing. Their reply:
--- allowed, whether any unit moved; remaining, whole units that fit now;
--- retry_after, until a pour of 1 fits (0: now); reset_after, until the
--- bucket is empty. The debt is the one state that makes a call wait, or a
--- key live, past the bounds below: by the debt it holds, no more.
--- Changed limits apply from the last pour: the water then is counted in
--- units of the new rate and period, rounding up (a lower rate frees no
--- room, a higher one frees what it drains), capped at a full bucket of the
--- new capacity (a lowered capacity is full, never locked out), and drains
--- at the new rate since. A debt is counted in units of the new rate too,
--- rounding up, and is not capped by the capacity (to at most 1e15 µs).
--- State: a string in one of two forms, all in µs, numbers without
--- leading zeros. 'l<ts><unit>/<more>': the tag l (the leaky bucket's:
--- every script's state starts with its own, see docs/scripts.md), ts, the
--- last time water was poured, as exactly 16 digits of µs, then the µs per
--- unit it was poured at (1..1e14) and, after the '/', the µs of water then
--- (1..1e15) less one unit (0 after one unit poured into an empty bucket).
--- The settled one, 'l<ts><unit>=<water>+<debt>', which only a refund or a
--- charge writes, for water below one unit or past a full bucket: the water
--- in full and the part of it past the writing limit's full bucket (the
--- debt, at most 1e15 µs; the rest at most 1e15 µs too); earlier versions
--- refuse it, and multi.lua reads only gcra.lua's states. A ts more than
--- 60 s past TIME was not written by this script. Anything else at the key,
--- of any type, is an error and the key is left untouched (value and TTL);
--- that includes the untagged states and the hash {level, ts, unit} of
--- earlier versions of this script.
--- Many keys: 2 to 64 keys are the multi-key form's layout
--- (docs/scripts.md), which this file takes itself: per call, '1' (its
--- key), its argument count and its arguments; the reply holds each
--- call's own reply or error reply, each call run in turn exactly as a
--- call of its own at that instant, so calls of any limits, and one key
--- twice, go together. One key is always one call.
--- @key    bucket       string 'l<ts><unit>/<more>' or 'l<ts><unit>=<water>+<debt>': µs of water at ts, the last time water was poured; expires once empty
--- @arg    capacity     int[1..1e9]       units the bucket holds
--- @arg    rate         int[1..1e9]       units drained per period, at most one per µs
--- @arg    period       ms[1..1e11]       drain period; capacity*period/rate at most 1e15 µs (31 years)
--- @arg    cost         int[0..1e9]       units to pour; 0 only peeks
--- @arg    now          unix_us[1..2^52]|server_clock=0  caller clock, within 60 s of the server's TIME
--- @arg    deadline     unix_us[1..2^52]|none=0  when the caller stops waiting: a call the server runs at or after it answers EXPIRED; 0: none
--- @arg    ...settle[0..1] enum(refund|charge)  none: a pour; refund: cost units come back, up to the water left; charge: cost units are poured, into debt if need be
--- @return allowed      bool              refund, charge: whether any unit moved
--- @return remaining    int[0..]          whole units that still fit, never negative
--- @return retry_after  ms[0..]|never=-1          0 when allowed (refund, charge: until a pour of 1 fits); -1 when cost exceeds capacity
--- @return reset_after  ms[0..]           until the bucket is empty
--- @error  BADARG       an argument is missing, extra, not a plain decimal integer, or out of range; a settle word other than refund or charge
--- @error  EXPIRED      the server ran the call at or after its deadline; nothing changed
--- @error  WRONGTYPE    the key holds another type of value; it is left untouched
--- @error  BADSTATE     the key is a string but not this script's state (another script's, another layout, a number out of range); it is left untouched
--- @multi  itself: its multi-key form (docs/scripts.md) runs up to 64 calls of this script, each on its own keys, in one EVALSHA, each answered as a call of its own; this file takes that layout itself when sent 2 or more keys, at less cost
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

-- One call: KEYS and ARGV as the header gives them. 2 or more keys are the
-- multi-key form's layout, which this file takes itself (calls, in the
-- prologue): the loop below runs each call in turn, exactly as a call of
-- its own at that instant, into one reply; an error reply is that call's
-- element. A Redis error raised mid-call (OOM or READONLY, at the first
-- write) is the whole call's, and nothing was written.
local bucket   = KEYS[1]
local capacity = ARGV[1]
local rate     = ARGV[2]
local period   = ARGV[3]
local cost     = ARGV[4]
local now      = ARGV[5]
local deadline = ARGV[6]
local take     = ARGV[7]
local nk, na = #KEYS, #ARGV
local plan, ncalls = nil, 1
if nk > 1 then
  plan, ncalls = calls()
  if not plan then return ncalls end
end
local out = plan and {} -- the reply of many calls
-- One TIME for every call: they run at one instant. Calls of one limiter
-- share their capacity, rate and period: the strings read for the call
-- before (Lua keeps one copy of each) are not read again.
local server0, rcapacity, vcapacity, rrate, vrate, rperiod, vperiod
-- Calls on one key in a row (a hot key's batch) read it once and write it
-- once: run is the key, ran whether it was read, runerr the error reply its
-- value gives (another type, another state) or nil, runts, runwas, runlevel
-- and runowed its state since, read once and kept as numbers (runts nil: no
-- state; runsettled, whether it takes the settled form), and runttl the PX of
-- the write to come (ms; nil: none). The write goes once the next call names
-- another key, or no call follows; the state is formatted then, once. A run's
-- state is one its own calls wrote or one that passed the check, so the check
-- is not run again. The calls run at one instant, so the replies, and the
-- key's value and TTL after, are those of calls of their own, at two Redis
-- commands less for each call of the run after the first.
local run, ran, runerr, runts, runwas, runlevel, runowed, runsettled, runttl = bucket, false, nil, nil, nil, nil, nil, nil, nil
for i = 1, ncalls do
  local reply
  repeat -- break leaves it with the call's reply
    if plan then
      local k, a
      k, nk, a, na = plan[4 * i - 3], plan[4 * i - 2], plan[4 * i - 1], plan[4 * i]
      bucket = nk > 0 and KEYS[k + 1] or nil
      if na == 6 then
        capacity, rate, period, cost, now, deadline, take = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6], nil
      else
        capacity, rate, period, cost, now, deadline, take = unpack(ARGV, a + 1, a + (na < 7 and na or 7))
      end
      bad = nil
    end
    if capacity == rcapacity and vcapacity then
      capacity = vcapacity
    else
      rcapacity, capacity = capacity, int(capacity, 'capacity', 1, 1e9)
      vcapacity = capacity
    end
    if rate == rrate and vrate then
      rate = vrate
    else
      rrate, rate = rate, int(rate, 'rate', 1, 1e9)
      vrate = rate
    end
    if period == rperiod and vperiod then
      period = vperiod
    else
      rperiod, period = period, int(period, 'period', 1, 1e11)
      vperiod = period
    end
    cost     = int(cost, 'cost', 0, 1e9)
    now      = int(now, 'now', 0, 2^52)
    deadline = int(deadline, 'deadline', 0, 2^52)
    -- settle is -1 for refund, 1 for charge, nil for a pour (no 7th argument).
    local settle
    if take == 'refund' then
      settle = -1
    elseif take == 'charge' then
      settle = 1
    elseif take ~= nil then
      bad = bad or "BADARG settle must be 'refund' or 'charge' (or absent, for a pour)"
    end
    if bucket == nil then bad = bad or 'BADARG bucket key is missing' end
    exactly(1, settle and 7 or 6, nk, na)
    if not bad and rate > period * 1000 then
      bad = 'BADARG rate must be at most one per µs (period*1000)'
    end
    if bad then reply = redis.error_reply(bad) break end

    -- I.371's increment I: the µs one unit takes to drain, rounded up (exact:
    -- period*1000 is below 2^53). A full bucket bounds every level, so keeping
    -- it at most 1e15 µs (31 years) keeps every instant below 2^53. Integer
    -- division is written with %, which is exact below 2^53 and costs less
    -- than a call to math.floor or math.ceil.
    local unit = period * 1000
    local part = unit % rate
    unit = (unit - part) / rate
    if part > 0 then
      unit = unit + 1
    end
    local full = capacity * unit
    if full > 1e15 then
      reply = redis.error_reply('BADARG capacity*period/rate must be at most 1e15 µs (31 years)')
      break
    end

    local server, caller
    now, server, caller = clock(now, deadline, server0)
    server0 = server
    if bad then reply = redis.error_reply(bad) break end

    if not ran or bucket ~= run then
      -- GET answers a key of another type with an error table (stored.err);
      -- a string has no err field.
      local stored = redis.pcall('GET', bucket)
      run, ran, runerr, runts, runwas, runlevel, runowed = bucket, true, nil, nil, nil, nil, nil
      if stored and stored.err then
        runerr = 'WRONGTYPE the key holds another type of value; it is left untouched'
      elseif stored then
        -- One pattern checks the whole state: the tag, 16 digits, then two
        -- numbers; the length bound keeps every number short enough to
        -- convert exactly, and a number of more than one digit that sorts
        -- below '1' (all digits) has a leading zero. No write dates ts more
        -- than max_skew past TIME (server is the same for every call of the
        -- run).
        local ts, was, more, level
        local owed = 0
        if #stored <= 49 then
          ts, was, more = match(stored, '^l(%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d)([1-9]%d*)/(%d+)$')
        end
        if ts and (#more == 1 or more >= '1') then
          -- tonumber, not + 0, for the fixed-width field: gopher-lua
          -- (miniredis) reads a string with a leading 0 as octal in
          -- arithmetic, Redis's Lua never does; tonumber is decimal in both.
          ts, was = tonumber(ts), was + 0
          level = was + more
        elseif not ts and #stored <= 66 then
          -- The settled form, which only a refund or a charge writes: the
          -- water in full and the part of it a charge put past a full bucket.
          ts, was, level, owed = match(stored, '^l(%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d)([1-9]%d*)=(%d+)%+(%d+)$')
          if ts and (#level == 1 or level >= '1') and (#owed == 1 or owed >= '1') and #level <= 16 and #owed <= 16 then
            ts, was, level, owed = tonumber(ts), was + 0, level + 0, owed + 0
            if owed > level or owed > 1e15 or level - owed > 1e15 then
              level = nil
            end
          else
            level = nil
          end
        end
        if not level or ts > server + max_skew or was > 1e14 or level - owed > 1e15 then
          runerr = 'BADSTATE the key is not a leaky bucket l<ts><unit>/<more> or l<ts><unit>=<water>+<debt>; it is left untouched'
        else
          runts, runwas, runlevel, runowed = ts, was, level, owed
        end
      end
    end
    if runerr then reply = redis.error_reply(runerr) break end
    -- A late caller is judged at the stored time; own is its clock, which its
    -- waits are measured from. A key that holds nothing is judged at the later
    -- of the caller's clock and the server's: a key the server's clock expired
    -- must not let a caller that lags it drain the same time again.
    local own = now
    local water = 0
    local ts, was, level, owed = runts, runwas, runlevel, runowed
    if not ts then
      if server > now then
        now = server
      end
    else
      if now < ts then
        now = ts
      end
      -- A changed rate or capacity applies from the last pour: the level then
      -- is counted in units of the current rate (whole units exactly, a part
      -- unit rounded up) and capped at a full bucket (fewer than capacity
      -- whole units and a part one never pass it). It depends on the stored
      -- state alone, so waits stay exact while denied calls change nothing.
      -- A debt a charge owes is not capped: it is counted in units of the
      -- current rate too, rounding up, to at most 1e15 µs.
      if was ~= unit or level - owed > full then
        local keep = level - owed
        local units = keep % was
        units = (keep - units) / was
        if units >= capacity then
          keep = full
        else
          local q, r = muldiv(keep - units * was, unit, was)
          if r > 0 then
            q = q + 1
          end
          keep = units * unit + q
        end
        if owed > 0 then
          local q, r = muldiv(owed, unit, was)
          if r > 0 then
            q = q + 1
          end
          owed = q < 1e15 and q or 1e15
        end
        level = keep + owed
      end
      -- I.371's X' = X - (ta - LCT), floored at 0: the water left now. It is
      -- an exact integer, so every wait below is exact too.
      water = level - (now - ts)
      if water < 0 then
        water = 0
      end
    end

    -- A refund or a charge, never denied: moved is the units it moves. A
    -- refund lowers the water by cost units, never below empty (a part of a
    -- unit counts as one), and finds nothing on a key with no state; a charge
    -- raises it by cost units, past a full bucket if need be (debt), up to
    -- 1e15 µs past a full bucket (cost * unit can pass 2^53; moved * unit
    -- cannot). Then the call answers as a peek would, and writes what moved.
    local moved = 0
    if settle then
      if settle < 0 then
        if ts and water > 0 then
          local used = water % unit
          used = (water - used) / unit + (used > 0 and 1 or 0)
          if cost < used then
            moved, water = cost, water - cost * unit
          else
            moved, water = used, 0
          end
        end
      else
        local room = full + 1e15 - water
        if room > 0 then
          room = (room - room % unit) / unit
          moved = cost < room and cost or room
          water = water + moved * unit
        end
      end
      cost = 0
    end

    -- Waits are whole ms rounded up, counted from the caller's own clock:
    -- (x + 999 - (x + 999) % 1000) / 1000 is ceil(x / 1000) for integers.
    local remaining = 0
    if water < full then
      remaining = (full - water) % unit
      remaining = (full - water - remaining) / unit
    end
    local reset = 0
    if water > 0 then
      reset = now + water - own + 999
      reset = (reset - reset % 1000) / 1000
    end
    local want = cost > 0 and cost or 1
    if moved > 0 then
      -- Keys expire by the server's clock, max_skew later for a caller's
      -- write (as a pour's below). Water below one unit or past a full bucket
      -- takes the settled form.
      local ttl = now + water - server + 999
      if caller then
        ttl = ttl + max_skew
      end
      ttl = (ttl - ttl % 1000) / 1000
      runts, runwas, runlevel, runttl = now, unit, water, ttl > 1 and ttl or 1
      runsettled = water < unit or water > full
      runowed = runsettled and water > full and water - full or 0
    end
    if settle then
      local wait = 0
      if water + unit > full then
        wait = now + water + unit - full - own + 999
        wait = (wait - wait % 1000) / 1000
      end
      reply = {moved > 0 and 1 or 0, remaining, wait, reset}
      break
    end
    if want > capacity then
      reply = {0, remaining, -1, reset}
      break
    elseif water + want * unit > full then
      local wait = now + water + want * unit - full - own + 999
      reply = {0, remaining, (wait - wait % 1000) / 1000, reset}
      break
    elseif cost == 0 then
      reply = {1, remaining, 0, reset}
      break
    end

    water = water + cost * unit
    -- Keys expire by the server's clock. A caller's write keeps the key
    -- max_skew past the instant the bucket is empty, so a call whose clock
    -- lags the server's by up to max_skew still finds the water.
    local ttl = now + water - server + 999
    if caller then
      ttl = ttl + max_skew
    end
    ttl = (ttl - ttl % 1000) / 1000
    runts, runwas, runlevel, runowed, runsettled, runttl = now, unit, water, 0, false, ttl > 1 and ttl or 1
    reset = now + water - own + 999
    reply = {1, remaining - cost, 0, (reset - reset % 1000) / 1000}
  until true
  if runttl and (i == ncalls or plan[4 * i + 2] == 0 or KEYS[plan[4 * i + 1] + 1] ~= run) then
    local state
    if runsettled then
      state = format('l%016d%d=%d+%d', runts, runwas, runlevel, runowed)
    else
      state = format('l%016d%d/%d', runts, runwas, runlevel - runwas)
    end
    redis.call('SET', run, state, 'PX', format('%d', runttl))
    runttl = nil
  end
  if not plan then
    return reply
  end
  out[i] = reply
end
return out
