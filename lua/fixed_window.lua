--- Fixed window: counts cost against limit in windows of a fixed length that
--- are aligned to the epoch (window k covers [k*window, (k+1)*window)), so every
--- app server agrees on the boundaries and a day-long window starts at UTC
--- midnight; or, in its calendar form, in periods whose boundaries the
--- caller gives (a day, a month in a time zone: see form). Known weakness:
--- the count starts again at every boundary, so up
--- to 2*limit can pass within a moment (limit at the end of one window, limit
--- at the start of the next); a span of any length d touches at most
--- ceil(d/window)+1 windows and admits at most limit in each. A cost of 0
--- peeks: it answers for a cost of 1 and writes nothing. A cost above limit
--- can never pass: it is denied with retry_after -1. Denied calls change
--- nothing. Arithmetic is exact for every accepted input.
--- Calendar periods: window 0 and a form with period_start < period_end <
--- next_end (unix ms) count in the periods [period_start, period_end) and
--- [period_end, next_end): the caller works out the calendar (days of 23 or
--- 25 hours, months), the script only counts. The instant a call is judged
--- at must lie in them, and next_end must be more than 60 s past TIME, so
--- no state and no TTL reaches past the periods given. A call with the
--- epoch and one with a calendar share the state: a count is current while
--- its newest call lies in the period (or window) that holds the instant.
--- Settling a reservation (take all with a caller clock at, then its final
--- cost): take refund gives back up to cost units, never below 0, and only
--- from the count of the window that holds at, while that window holds the
--- call's instant too: once it ended, or when the stored count is another
--- window's, nothing comes back (the old count is gone). A refund to 0
--- deletes the key; otherwise it keeps its TTL. take charge counts cost
--- more in the window that holds at, past the limit if need be (the window
--- is then denied until it ends), up to a count of 1e9; once that window
--- ended, before the call's instant, it counts nothing. Neither is ever
--- denied; a cost of 0 moves nothing and writes nothing. Their reply:
--- allowed, whether any unit moved; the rest as a peek's at the instant.
--- Clocks: now = 0 uses the server's TIME, one clock for every app server. A
--- caller clock (now > 0) is refused with BADARG when it is more than 60 s
--- from TIME. A write with a caller clock keeps its key 60 s past the instant
--- its state is spent on the server's clock, so a call whose clock lags TIME
--- by up to 60 s still finds the state; a call that finds no state is judged
--- at the later of its clock and TIME, so a key that expired never hands the
--- same time out twice. So no clock dates state more than 60 s past TIME,
--- and a state dated further is BADSTATE, whatever wrote it: a call with
--- the server's clock waits at most the window plus 60 s, a key lives at
--- most the window plus 120 s, and waits count from the caller's own clock. A caller clock in an earlier window than the newest counted call is
--- counted in that call's window, so the count never moves back.
--- Changed limits: the state keeps the count and the time of the newest call
--- it counts, not a window number. A new limit applies to the count at once
--- (lowered: denied until the window ends; raised: the difference passes).
--- A new window length counts the stored calls in the new window that holds
--- the newest of them, and nowhere else: a longer window never forgets them
--- (no free burst), a shorter one may count them once in its current window.
--- State: a string '1<t><n>': the tag 1 (the fixed window's: every
--- script's state starts with its own, see docs/scripts.md), t, the ms of
--- the newest counted call, as exactly 13 digits (windows are whole ms, so
--- the ms names the same window as the µs), then the count n (1..1e9)
--- without leading zeros. Redis keeps it as an integer (16 bytes) while n
--- has at most 5 digits. A t more than 60 s past TIME was not written by
--- this script. Anything else at the key, of any type, is an error and the
--- key is left untouched (value and TTL); that includes the untagged
--- '<t><n>' and the hash {n, t} of earlier versions of this script.
--- Layouts: 5 arguments are the epoch form's take, as in earlier versions;
--- 10 add the form. Earlier versions refuse 10 with BADARG. 2 to 64 keys
--- are the multi-key form's layout (docs/scripts.md), which this file takes
--- itself: per call, '1' (its key), its argument count and its arguments;
--- the reply holds each call's own reply or error reply, each call run in
--- turn exactly as a call of its own at that instant, so calls of any
--- limits, and one key twice, go together. One key is always one call.
--- @key    counter      string '1<t><n>': n counted in the window that holds t, the newest counted call (ms); expires when that window ends
--- @arg    limit        int[1..1e9]       most cost admitted per window
--- @arg    window       ms[1..1e11]|calendar=0  window length, aligned to the epoch; 0 with a form's calendar periods
--- @arg    cost         int[0..1e9]       cost to count; 0 only peeks (refund, charge: the units to move)
--- @arg    now          unix_us[1..2^52]|server_clock=0  caller clock, within 60 s of the server's TIME
--- @arg    deadline     unix_us[1..2^52]|none=0  when the caller stops waiting: a call the server runs at or after it answers EXPIRED; 0: none
--- @arg    ...form[0..1] (take string/^(all|refund|charge)$/, at unix_us[1..2^52]|none=0, period_start unix_ms[1..4e12]|epoch=0, period_end unix_ms[1..4e12]|epoch=0, next_end unix_ms[1..4e12]|epoch=0)  none: take all in epoch windows; take: all, refund or charge; at: refund, charge: the instant the reservation was counted at (take all: none); the periods: all three epoch with a window, or increasing with window 0
--- @return allowed      bool              take all: passed; refund, charge: a unit moved
--- @return remaining    int[0..]          cost still admitted in this window, never negative
--- @return retry_after  ms[0..]|never=-1          0 when allowed; -1 when cost exceeds limit
--- @return reset_after  ms[0..]           until the window ends; 0 when nothing is counted
--- @error  BADARG       an argument is missing, extra, not a plain decimal integer, or out of range
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
local counter  = KEYS[1]
local limit    = ARGV[1]
local window   = ARGV[2]
local cost     = ARGV[3]
local now      = ARGV[4]
local deadline = ARGV[5]
local take, at, b0, b1, b2 = ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10]
local nk, na = #KEYS, #ARGV
local plan, ncalls = nil, 1
if nk > 1 then
  plan, ncalls = calls()
  if not plan then return ncalls end
end
local out = plan and {} -- the reply of many calls
-- One TIME for every call: they run at one instant. Calls of one limiter
-- share their limit and window: the string read for the call before (Lua
-- keeps one copy of each) is not read again.
local server0, rlimit, vlimit, rwindow, vwindow
-- Calls on one key in a row (a hot key's batch) read it once and write it
-- once: run is the key, ran whether it was read, runerr the error reply its
-- value gives (another type, another state) or nil, runt and runn its state
-- since, read once and kept as numbers (nil: no state), and runttl the write
-- to come: nil none, false DEL, 'keep' SET KEEPTTL (a refund's: it keeps the
-- PX of a write before it in the run, and follows no DEL, since a deleted key
-- holds no count to refund), else SET PX runttl (ms). The write goes once the
-- next call names another key, or no call follows; the state is formatted
-- then, once. A run's state is one its own calls wrote or one that passed the
-- check, so the check is not run again. The calls run at one instant, so the
-- replies, and the key's value and TTL after, are those of calls of their
-- own, at two Redis commands less for each call of the run after the first.
local run, ran, runerr, runt, runn, runttl = counter, false, nil, nil, nil, nil
for i = 1, ncalls do
  local reply
  repeat -- break leaves it with the call's reply
    if plan then
      local k, a
      k, nk, a, na = plan[4 * i - 3], plan[4 * i - 2], plan[4 * i - 1], plan[4 * i]
      counter = nk > 0 and KEYS[k + 1] or nil
      if na == 5 then
        limit, window, cost, now, deadline, take = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], nil
      else
        limit, window, cost, now, deadline, take, at, b0, b1, b2 = unpack(ARGV, a + 1, a + (na < 10 and na or 10))
      end
      bad = nil
    end
    if limit == rlimit and vlimit then
      limit = vlimit
    else
      rlimit, limit = limit, int(limit, 'limit', 1, 1e9)
      vlimit = limit
    end
    -- window 0 is the calendar's, which takes the form: 5 arguments are
    -- refused 0 as earlier versions refused it.
    if window == rwindow and vwindow and na == 5 then
      window = vwindow
    else
      rwindow, window = window, int(window, 'window', na > 5 and 0 or 1, 1e11)
      vwindow = na == 5 and window
    end
    cost     = int(cost, 'cost', 0, 1e9)
    now      = int(now, 'now', 0, 2^52)
    deadline = int(deadline, 'deadline', 0, 2^52)
    if counter == nil then bad = bad or 'BADARG counter key is missing' end
    -- 5 arguments, or 10 with the form (take, at, period_start, period_end,
    -- next_end).
    exactly(1, na >= 10 and 10 or 5, nk, na)
    -- The form: settle is -1 for take refund, 1 for take charge, nil for take
    -- all; b0 < b1 < b2 (µs) are the calendar's periods, nil for the epoch's.
    local settle
    if not bad and na == 10 then
      if take == 'refund' then
        settle = -1
      elseif take == 'charge' then
        settle = 1
      elseif take ~= 'all' then
        bad = "BADARG take must be 'all', 'refund' or 'charge'"
      end
      at = int(at, 'at', 0, 2^52)
      b0 = int(b0, 'period_start', 0, 4e12)
      b1 = int(b1, 'period_end', 0, 4e12)
      b2 = int(b2, 'next_end', 0, 4e12)
      if bad then
      elseif (at == 0) ~= (settle == nil) then
        bad = 'BADARG at must be 0 with take all and an instant with refund or charge'
      elseif b0 == 0 and b1 == 0 and b2 == 0 then
        b0 = nil
      elseif not (b0 > 0 and b0 < b1 and b1 < b2) then
        bad = 'BADARG period_start, period_end and next_end must be all 0 (the epoch) or increasing'
      else
        b0, b1, b2 = b0 * 1000, b1 * 1000, b2 * 1000
      end
    else
      b0 = nil
    end
    if not bad and (window == 0) ~= (b0 ~= nil) then
      bad = 'BADARG window must be from 1 to 1e11 with the epoch, and 0 with calendar periods'
    end
    if bad then reply = redis.error_reply(bad) break end

    local server, caller
    now, server, caller = clock(now, deadline, server0)
    server0 = server
    if bad then reply = redis.error_reply(bad) break end
    if b0 and (now < b0 or now >= b2) then
      reply = redis.error_reply('BADARG the instant the call is judged at must lie in [period_start, next_end)')
    elseif b0 and server + max_skew >= b2 then
      reply = redis.error_reply(string.format("BADARG next_end must be more than %d µs past the server's TIME", max_skew))
    elseif settle and at > server + max_skew then
      reply = redis.error_reply(string.format("BADARG at must be at most %d µs past the server's TIME", max_skew))
    end
    if reply then break end

    if not ran or counter ~= run then
      -- GET answers a key of another type with an error table (stored.err);
      -- a string has no err field.
      local stored = redis.pcall('GET', counter)
      run, ran, runerr, runt, runn = counter, true, nil, nil, nil
      if stored and stored.err then
        runerr = 'WRONGTYPE the key holds another type of value; it is left untouched'
      elseif stored then
        -- One pattern checks the whole state: the tag, 13 digits, then a
        -- count without a leading zero; the length bound keeps it short
        -- enough to convert exactly. t is the newest call's ms, in µs: no
        -- write dates it more than max_skew past TIME (server is the same
        -- for every call of the run).
        local a, b
        if #stored <= 24 then
          a, b = match(stored, '^1(%d%d%d%d%d%d%d%d%d%d%d%d%d)([1-9]%d*)$')
        end
        if a then
          -- tonumber, not + 0, for the fixed-width field: gopher-lua
          -- (miniredis) reads a string with a leading 0 as octal in
          -- arithmetic, Redis's Lua never does; tonumber is decimal in both.
          runt, runn = tonumber(a) * 1000, b + 0
        end
        if not a or runt > server + max_skew or runn > 1e9 then
          runerr = 'BADSTATE the key is not a fixed window 1<t><n>; it is left untouched'
        end
      end
    end
    if runerr then reply = redis.error_reply(runerr) break end
    local n, t = runn or 0, runt

    -- Times stay below 2^52 + 1e14 < 2^53, so windows divide exactly; integer
    -- division is written with %, which costs less than a call to math.floor.
    local window_us = window * 1000
    -- The stored calls count in the window that holds the newest of them, t; a
    -- late caller counts there too, and a later window starts from 0. A key
    -- that holds nothing counts from the later of the caller's clock and the
    -- server's: a key the server's clock expired must not let a caller that
    -- lags it count in that window again.
    local fresh = not t
    if fresh then
      t = server > now and server or now
    end
    -- k and kt start the windows that hold now and t (end_at and et end
    -- them): aligned to the epoch, or one of the two calendar periods; kt is
    -- nil for a t before them (every instant given is before next_end, see
    -- the checks above).
    local k, end_at, kt, et
    if not b0 then
      k = now - now % window_us
      end_at = k + window_us
      kt = t - t % window_us
      et = kt + window_us
    else
      k, end_at = b0, b1
      if now >= b1 then
        k, end_at = b1, b2
      end
      if t >= b1 then
        kt, et = b1, b2
      elseif t >= b0 then
        kt, et = b0, b1
      end
    end
    if kt and kt > k then
      k, end_at = kt, et
    elseif not kt or kt < k then
      n = 0
    end

    local moved = 0
    if settle and cost > 0 then
      -- The window that holds at, as above.
      local ka, ea
      if not b0 then
        ka = at - at % window_us
        ea = ka + window_us
      elseif at >= b1 then
        ka, ea = b1, b2
      elseif at >= b0 then
        ka, ea = b0, b1
      end
      if ka and ea > now then
        if settle < 0 then
          -- Only the count of at's window, the one that counted the
          -- reservation, gives units back; never a later window's.
          if not fresh and ka == kt and n > 0 then
            moved = cost < n and cost or n
            n = n - moved
            if n == 0 then
              runt, runn, runttl = nil, nil, false
            else
              runt, runn = t, n
              if runttl == nil then
                runttl = 'keep'
              end
            end
          end
        else
          -- Counted where a take at at would count: at's window, or the
          -- stored calls' when that is later (the count never moves back).
          local c = 0
          if not fresh and kt and kt >= ka then
            c = n
            ka, ea = kt, et
          end
          moved = cost < 1e9 - c and cost or 1e9 - c
          if moved > 0 then
            local tt = at
            if not fresh and t > tt then
              tt = t
            end
            local ttl = ea - server + 999
            if caller then
              ttl = ttl + max_skew
            end
            ttl = (ttl - ttl % 1000) / 1000
            runt, runn, runttl = tt - tt % 1000, c + moved, ttl > 1 and ttl or 1
            if ka >= k then
              k, end_at, n = ka, ea, c + moved
            end
          end
        end
      end
    end

    -- Waits are whole ms rounded up, counted from the caller's own clock:
    -- (x + 999 - (x + 999) % 1000) / 1000 is ceil(x / 1000) for integers.
    local wait = end_at - now + 999
    wait = (wait - wait % 1000) / 1000
    local want = cost > 0 and cost or 1
    if settle then
      -- A settle answers as a peek would, after it.
      local left = limit > n and limit - n or 0
      reply = {moved > 0 and 1 or 0, left, left > 0 and 0 or wait, n > 0 and wait or 0}
      break
    elseif want > limit then
      reply = {0, limit > n and limit - n or 0, -1, n > 0 and wait or 0}
      break
    elseif n + want > limit then
      reply = {0, limit > n and limit - n or 0, wait, n > 0 and wait or 0}
      break
    elseif cost == 0 then
      reply = {1, limit - n, 0, n > 0 and wait or 0}
      break
    end

    -- Keys expire by the server's clock. A caller's write keeps the key
    -- max_skew past the window's end, so a call whose clock lags the server's
    -- by up to max_skew still finds the count.
    local ttl = end_at - server + 999
    if caller then
      ttl = ttl + max_skew
    end
    ttl = (ttl - ttl % 1000) / 1000
    if now > t then
      t = now
    end
    n = n + cost
    runt, runn, runttl = t - t % 1000, n, ttl > 1 and ttl or 1
    reply = {1, limit - n, 0, wait}
  until true
  if runttl ~= nil and (i == ncalls or plan[4 * i + 2] == 0 or KEYS[plan[4 * i + 1] + 1] ~= run) then
    if not runn then
      redis.call('DEL', run)
    elseif runttl == 'keep' then
      redis.call('SET', run, format('1%013d%d', runt / 1000, runn), 'KEEPTTL')
    else
      redis.call('SET', run, format('1%013d%d', runt / 1000, runn), 'PX', format('%d', runttl))
    end
    runttl = nil
  end
  if not plan then
    return reply
  end
  out[i] = reply
end
return out
