--- Sliding window counter (the approximation Cloudflare describes): counts
--- cost in windows aligned to the epoch and admits while the estimate
--- cur + ceil(prev * (window - elapsed) / window) stays within limit, where cur
--- and prev are the counts of the current and the previous window and elapsed
--- is the time since the current window began. It is an approximation: it
--- assumes the previous window's count was spread evenly over that window.
--- Traffic that came early in it is still weighed after it has slid out (more
--- denials than an exact sliding log); traffic that came at its very end
--- weighs less than it should, and that is the worst case: nearly 2*limit can
--- pass within one window length (limit just before a boundary, then almost
--- limit more as its weight decays). Proven bounds: at most limit in one
--- aligned window, and at most limit + floor(limit*(d-1)/window) in any span
--- of d µs (d >= 1). The weighted count is rounded up, so it never admits more
--- than the estimate allows. A cost of 0 peeks: it answers for a cost of 1
--- and writes nothing. A cost above limit can never pass: it is denied with
--- retry_after -1. Denied calls change nothing. Arithmetic is exact for every
--- accepted input (count times window goes through muldiv). Both counts live
--- in one key, so it runs on Redis Cluster.
--- Clocks: now = 0 uses the server's TIME, one clock for every app server. A
--- caller clock (now > 0) is refused with BADARG when it is more than 60 s
--- from TIME. A write with a caller clock keeps its key 60 s past the instant
--- its state is spent on the server's clock, so a call whose clock lags TIME
--- by up to 60 s still finds the state; a call that finds no state is judged
--- at the later of its clock and TIME, so a key that expired never hands the
--- same time out twice. So no clock dates state more than 60 s past TIME,
--- and a state dated further is BADSTATE, whatever wrote it: a call with
--- the server's clock waits at most the two windows plus 60 s, a key lives
--- at most the two windows plus 120 s, and waits count from the caller's
--- own clock. A caller clock in an earlier window than the newest
--- counted call is judged at the start of that call's window, where the
--- previous count weighs most.
--- Changed limits: a new limit applies to the counts at once (lowered: no
--- free burst; raised: the difference passes). The state keeps times, not
--- window numbers: the current count is placed at the newest call it counts
--- and the previous count just before the current window began, and both are
--- counted in whichever window of the new length holds them. A longer window
--- never forgets them (no free burst); a shorter one may count them once
--- more than it would have (never over two windows).
--- Settling a reservation (an admit, then its final cost), with two more
--- arguments, the word and at, the caller clock the reservation was counted
--- at (no more than 60 s past TIME); the call is judged at the later of its
--- clock and at. refund gives cost back from the count of the window (of the
--- current length) that holds at, then what it lacks from the next window,
--- never below 0 in each and never from a window after the current one;
--- once at's window has slid out of the estimate (or the key was reset or
--- expired) nothing comes back and nothing is written. A reservation judged
--- in a later window than at's (a caller with a later clock had counted
--- there, or the key was empty and the server's TIME had passed into the
--- next window, as ratelimit's Reserve, with its own clock, meets on a
--- key's first reservation) counted its n units (n >= cost) in that next
--- window, so the refund finds them: what it takes first from at's window
--- weighs no more than a unit of the next one in the estimate, so it gives
--- back less than an exact refund would, never more. After a reset it may
--- take up to cost from counts written since. charge counts cost in at's
--- window whatever the limit (debt: the counts may pass it, and admits wait
--- until the estimate falls back); once that window has slid out it counts
--- in the current one, so no charge is lost. A count is at most 1e15 (a
--- previous one 2e15): a charge takes what fits that. After a changed
--- window, at's window is the one of the new length that holds at; a
--- changed limit changes no count. Neither is ever denied. A cost of 0 moves nothing
--- and writes nothing. Their reply: allowed, whether any unit moved;
--- remaining, most cost admitted now; retry_after, until a cost of 1 is
--- admitted (0: now); reset_after, until both counts weigh 0.
--- State: a string 'c<s><d>/<cur>/<prev>': the tag c (the sliding window
--- counter's: every script's state starts with its own, see
--- docs/scripts.md), s, the start of the current count's window, as
--- exactly 13 digits of ms (windows are whole ms), then d, the ms from s to
--- its newest call (below 1e11), and the counts cur (1..1e15; 0 only
--- after a refund, which earlier versions refuse) and prev (0..2e15: counts
--- from two windows can merge), numbers without leading zeros; a count
--- past 1e9 (2e9) only a charge writes, and earlier versions refuse it too.
--- A newest call more than 60 s past TIME was not written by this
--- script. Anything else at the key, of any type, is an error and the key
--- is left untouched (value and TTL); that includes the untagged states
--- and the hash {s, t, cur, prev} of earlier versions of this script.
--- Many keys: 2 to 64 keys are the multi-key form's layout
--- (docs/scripts.md), which this file takes itself: per call, '1' (its
--- key), its argument count and its arguments; the reply holds each
--- call's own reply or error reply, each call run in turn exactly as a
--- call of its own at that instant, so calls of any limits, and one key
--- twice, go together. One key is always one call.
--- @key    counts       string 'c<s><d>/<cur>/<prev>': counts of the window from s (ms) and the one before; expires when both weigh 0
--- @arg    limit        int[1..1e9]       most cost the estimate admits
--- @arg    window       ms[1..1e11]       window length, aligned to the epoch
--- @arg    cost         int[0..1e9]       cost to count; 0 only peeks
--- @arg    now          unix_us[1..2^52]|server_clock=0  caller clock, within 60 s of the server's TIME
--- @arg    deadline     unix_us[1..2^52]|none=0  when the caller stops waiting: a call the server runs at or after it answers EXPIRED; 0: none
--- @arg    ...settle[0..1] (take string/^(refund|charge)$/, at unix_us[1..2^52])  none: an admit; refund: cost comes back from the window that holds at, then the next; charge: cost is counted there, into debt if need be; at, the caller clock of the reservation
--- @return allowed      bool              refund, charge: whether any unit moved
--- @return remaining    int[0..]          most cost admitted right now, never negative
--- @return retry_after  ms[0..]|never=-1          0 when allowed (refund, charge: until a cost of 1 is admitted); -1 when cost exceeds limit
--- @return reset_after  ms[0..]           until both counts weigh 0
--- @error  BADARG       an argument is missing, extra, not a plain decimal integer, or out of range; a settle word other than refund or charge; at more than 60 s past TIME
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
local counts   = KEYS[1]
local limit    = ARGV[1]
local window   = ARGV[2]
local cost     = ARGV[3]
local now      = ARGV[4]
local deadline = ARGV[5]
local take, held = ARGV[6], ARGV[7]
local nk, na = #KEYS, #ARGV
local plan, ncalls = nil, 1
if nk > 1 then
  plan, ncalls = calls()
  if not plan then return ncalls end
end

-- ceil(n * (w - elapsed) / w): the previous count's weight, in windows of
-- w µs.
local function weighted(n, elapsed, w)
  local q, r = muldiv(n, w - elapsed, w)
  return r > 0 and q + 1 or q
end

-- The first instant from x on, inside the window of w µs that begins at
-- ws, at which cn + weighted(pn) <= room (the limit less the cost wanted);
-- nil when there is none in that window.
-- weighted(pn, e) <= room  <=>  pn * (w - e) <= room * w
--                          <=>  e >= w - floor(room * w / pn).
local function first(room, cn, pn, ws, x, w)
  room = room - cn
  if room < 0 then
    return nil
  elseif room >= pn then
    return x
  end
  local e = w - muldiv(room, w, pn)
  if e >= w then
    return nil
  end
  return x > ws + e and x or ws + e
end

local out = plan and {} -- the reply of many calls
-- One TIME for every call: they run at one instant. Calls of one limiter
-- share their limit and window: the string read for the call before (Lua
-- keeps one copy of each) is not read again.
local server0, rlimit, vlimit, rwindow, vwindow
-- Calls on one key in a row (a hot key's batch) read it once and write it
-- once: run is the key, ran whether it was read, runerr the error reply its
-- value gives (another type, another state) or nil, runs, runt, runc and runp
-- its state since, read once and kept as numbers (runs nil: no state), and
-- runttl the PX of the write to come (ms; nil: none). The write goes once the
-- next call names another key, or no call follows; the state is formatted
-- then, once. A run's state is one its own calls wrote or one that passed the
-- check, so the check is not run again. The calls run at one instant, so the
-- replies, and the key's value and TTL after, are those of calls of their
-- own, at two Redis commands less for each call of the run after the first.
local run, ran, runerr, runs, runt, runc, runp, runttl = counts, false, nil, nil, nil, nil, nil, nil
for i = 1, ncalls do
  local reply
  repeat -- break leaves it with the call's reply
    if plan then
      local k, a
      k, nk, a, na = plan[4 * i - 3], plan[4 * i - 2], plan[4 * i - 1], plan[4 * i]
      counts = nk > 0 and KEYS[k + 1] or nil
      if na == 5 then
        limit, window, cost, now, deadline, take, held = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], nil, nil
      else
        limit, window, cost, now, deadline, take, held = unpack(ARGV, a + 1, a + (na < 7 and na or 7))
      end
      bad = nil
    end
    if limit == rlimit and vlimit then
      limit = vlimit
    else
      rlimit, limit = limit, int(limit, 'limit', 1, 1e9)
      vlimit = limit
    end
    if window == rwindow and vwindow then
      window = vwindow
    else
      rwindow, window = window, int(window, 'window', 1, 1e11)
      vwindow = window
    end
    cost     = int(cost, 'cost', 0, 1e9)
    now      = int(now, 'now', 0, 2^52)
    deadline = int(deadline, 'deadline', 0, 2^52)
    -- settle is -1 for refund, 1 for charge, nil for an admit (5 arguments);
    -- held is the instant the reservation was counted at.
    local settle
    if take == 'refund' then
      settle = -1
    elseif take == 'charge' then
      settle = 1
    elseif take ~= nil then
      bad = bad or "BADARG settle's take must be 'refund' or 'charge' (or absent, for an admit)"
    end
    if settle then
      held = int(held, 'at', 1, 2^52)
    end
    if counts == nil then bad = bad or 'BADARG counts key is missing' end
    exactly(1, settle and 7 or 5, nk, na)
    if bad then reply = redis.error_reply(bad) break end

    local server, caller
    now, server, caller = clock(now, deadline, server0)
    server0 = server
    if not bad and settle and held > server + max_skew then
      bad = string.format("BADARG at must be at most %d µs past the server's TIME, got '%d'", max_skew, held)
    end
    if bad then reply = redis.error_reply(bad) break end

    if not ran or counts ~= run then
      -- GET answers a key of another type with an error table (stored.err);
      -- a string has no err field.
      local stored = redis.pcall('GET', counts)
      run, ran, runerr, runs, runt, runc, runp = counts, true, nil, nil, nil, nil, nil
      if stored and stored.err then
        runerr = 'WRONGTYPE the key holds another type of value; it is left untouched'
      elseif stored then
        -- One pattern checks the whole state: the tag, 13 digits, then three
        -- numbers; the length bound keeps them short enough to convert
        -- exactly, and a number below 10^(digits-1) was written with a
        -- leading zero. s and t are ms, here in µs; no write dates t more
        -- than max_skew past TIME (server is the same for every call of the
        -- run).
        local a, b, c, e, s, t, cur, prev
        if #stored <= 59 then
          a, b, c, e = match(stored, '^c(%d%d%d%d%d%d%d%d%d%d%d%d%d)(%d+)/(%d+)/(%d+)$')
        end
        if a then
          -- tonumber, not + 0, for the fixed-width field: gopher-lua
          -- (miniredis) reads a string with a leading 0 as octal in
          -- arithmetic, Redis's Lua never does; tonumber is decimal in both.
          s, t, cur, prev = tonumber(a) * 1000, b + 0, c + 0, e + 0
          if (#b > 1 and t < 10 ^ (#b - 1)) or (#c > 1 and cur < 10 ^ (#c - 1)) or (#e > 1 and prev < 10 ^ (#e - 1)) then
            s = nil
          else
            t = s + t * 1000
          end
        end
        if not s or t > server + max_skew or t - s >= 1e14 or cur > 1e15 or prev > 2e15 then
          runerr = 'BADSTATE the key is not a sliding window counter c<s><d>/<cur>/<prev>; it is left untouched'
        else
          runs, runt, runc, runp = s, t, cur, prev
        end
      end
    end
    if runerr then reply = redis.error_reply(runerr) break end
    local s, t, cur, prev = runs, runt, runc, runp

    -- Times stay below 2^52 + 2e14 < 2^53, so windows divide exactly; integer
    -- division is written with %, which costs less than a call to math.floor.
    -- Windows are named by the instant they start.
    local window_us = window * 1000
    -- at is the instant the call is judged at: a late caller is judged at the
    -- start of the newest count's window, so the state never moves back.
    local at = now
    if settle and held > at then
      at = held
    end
    local c, p = 0, 0
    if not s then
      -- A key that holds nothing counts from the later of the caller's clock
      -- and the server's: a key the server's clock expired must not let a
      -- caller that lags it count in those windows again.
      if server > at then
        at = server
      end
    end
    local start = at - at % window_us
    if s then
      -- The current count sits at its newest call, the previous one just
      -- before the current count's window began: each counts in the window of
      -- the current length that holds it.
      local wt, ws = t - t % window_us, s - 1 - (s - 1) % window_us
      if wt > start then
        start, at = wt, wt
      end
      if wt == start then
        c = c + cur
      elseif wt == start - window_us then
        p = p + cur
      end
      if ws == start then
        c = c + prev
      elseif ws == start - window_us then
        p = p + prev
      end
      if p > 2e15 then
        p = 2e15
      end
    end

    -- A refund or a charge, never denied: moved is what it moves, in the
    -- window of the current length that holds held (the current one or the
    -- previous); a charge whose window slid out counts in the current one.
    -- A refund from the previous window takes what it lacks there from the
    -- current one, where a reservation judged after held counted: taking from
    -- the earlier window first gives back less, never more (see the header).
    -- Then the call answers as a peek would, and writes what moved.
    local moved = 0
    if settle then
      local wh = held - held % window_us
      if settle < 0 then
        if wh == start - window_us then
          moved = cost < p and cost or p
          p = p - moved
        end
        if wh == start or wh == start - window_us then
          local more = cost - moved
          more = more < c and more or c
          c = c - more
          moved = moved + more
        end
      elseif wh == start - window_us then
        moved = 2e15 - p
        moved = cost < moved and cost or moved
        p = p + moved
      else
        moved = 1e15 - c
        moved = cost < moved and cost or moved
        c = c + moved
      end
      cost = 0
    end
    local want = cost > 0 and cost or 1

    -- Waits are whole ms rounded up, counted from the caller's own clock:
    -- (x + 999 - (x + 999) % 1000) / 1000 is ceil(x / 1000) for integers.
    local remaining = limit - c
    if p > 0 then
      remaining = remaining - weighted(p, at - start, window_us)
    end
    if remaining < 0 then
      remaining = 0
    end
    local reset = 0
    if c > 0 then
      reset = start + 2 * window_us - now + 999
    elseif p > 0 then
      reset = start + window_us - now + 999
    end
    reset = (reset - reset % 1000) / 1000

    -- What a settle moved is written as an admit's count is (below).
    if settle then
      if moved > 0 then
        -- held is a caller's clock: the key keeps max_skew more, as a
        -- caller's write does.
        local ttl = start + 2 * window_us - server + 999
        if caller or settle then
          ttl = ttl + max_skew
        end
        ttl = (ttl - ttl % 1000) / 1000
        if not t or at > t then
          t = at
        end
        t = t - t % 1000
        runs, runt, runc, runp, runttl = start, t, c, p, ttl > 1 and ttl or 1
      end
    end
    if want > limit then
      reply = {0, remaining, -1, reset}
      break
    end
    -- The estimate only falls while nothing is admitted, and two windows on
    -- both counts weigh 0, so the first admitting instant is one of these.
    local ok_at = first(limit - want, c, p, start, at, window_us)
      or first(limit - want, 0, c, start + window_us, start + window_us, window_us)
      or start + 2 * window_us
    if settle then
      local wait = 0
      if ok_at > at then
        wait = ok_at - now + 999
        wait = (wait - wait % 1000) / 1000
      end
      reply = {moved > 0 and 1 or 0, remaining, wait, reset}
      break
    elseif ok_at > at then
      local wait = ok_at - now + 999
      reply = {0, remaining, (wait - wait % 1000) / 1000, reset}
      break
    elseif cost == 0 then
      reply = {1, remaining, 0, reset}
      break
    end

    -- Keys expire by the server's clock. A caller's write keeps the key
    -- max_skew past the instant both counts weigh 0, so a call whose clock
    -- lags the server's by up to max_skew still finds them.
    local ttl = start + 2 * window_us - server + 999
    if caller then
      ttl = ttl + max_skew
    end
    ttl = (ttl - ttl % 1000) / 1000
    if not t or at > t then
      t = at
    end
    t = t - t % 1000
    runs, runt, runc, runp, runttl = start, t, c + cost, p, ttl > 1 and ttl or 1
    reset = start + 2 * window_us - now + 999
    reply = {1, remaining - cost, 0, (reset - reset % 1000) / 1000}
  until true
  if runttl and (i == ncalls or plan[4 * i + 2] == 0 or KEYS[plan[4 * i + 1] + 1] ~= run) then
    redis.call('SET', run, format('c%013d%d/%d/%d', runs / 1000, (runt - runs) / 1000, runc, runp), 'PX', format('%d', runttl))
    runttl = nil
  end
  if not plan then
    return reply
  end
  out[i] = reply
end
return out
