--- Sliding window log: an exact rolling window. Every admitted unit of cost
--- is one member of a sorted set, scored by its time in µs, and counts while
--- its time t satisfies t > now - window; a call is admitted when the live
--- members plus its cost fit within limit. There is no boundary burst and no
--- approximation, at a price: memory and work per call grow with limit. The
--- set holds no more than limit members (a charge may pass it, never 10000),
--- so limit is capped at 10000. At the cap a key takes about 1.3 MB (about
--- 130 bytes a member), and an admit of cost 10000 keeps Redis busy 13 to 22
--- ms (Redis 7.0, MEMORY USAGE and INFO commandstats on a 2-core machine); an
--- admit of cost c adds c members and removes those that left. Where that
--- matters, use sliding_window_counter. A cost of 0 peeks: it answers for a
--- cost of 1 and writes nothing. A cost above limit can never pass: it is
--- denied with retry_after -1. Denied calls change nothing: expired members
--- are removed only by an admit.
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
--- Settling a reservation (an admit, then its final cost), with two more
--- arguments, the word and at, the caller clock the reservation was counted
--- at (no more than 60 s past TIME); the call is judged at the later of its
--- clock, at and the newest member. A reservation is logged at the instant
--- its call was judged at, s >= at: later than at behind another caller's
--- newest member, or on an empty key behind the server's TIME (so usually
--- on a key's first reservation: ratelimit's Reserve sends its own clock).
--- refund removes up to cost members at at or later, the earliest first and
--- the highest numbers within an instant, while at is in the window. That
--- is safe: the reservation's n members (n >= the refund's cost) stay at
--- s until s + window >= at + window, so the walk up from at stops at s or
--- before, and every member it removes is the reservation's or one that
--- leaves no later; the count is exact and the window never frees sooner
--- than an exact refund would (later by s - at at worst). Refunds that
--- interleave may take each other's members, and then in all they remove
--- members no later than their own. After a reset
--- the refund may take up to cost members others logged at at or later.
--- Once at has left the window (or the key was reset or expired and holds
--- nothing at or after at) nothing comes back and nothing is written.
--- charge logs cost members at at whatever the limit (debt: admits wait
--- until enough leave), or at the instant of the call once at has left the
--- window, so no charge is lost; one that would leave more
--- than the 10000 members a log holds is refused with BADARG and changes
--- nothing. A changed limit or window applies to the log as it stands.
--- Neither is ever denied otherwise. A cost of 0 moves nothing and writes
--- nothing. Their reply: allowed, whether any unit moved; remaining, units
--- that fit now; retry_after, until a cost of 1 fits (0: now); reset_after,
--- until the newest member leaves the window.
--- State: a sorted set of at most 10000 members '<us>:<n>', each scored by
--- its <us>, numbered 1, 2, ... within one µs (a refund removes the
--- highest numbers, so they stay 1 to the count; the ':' keeps them apart
--- from concurrency.lua's lease ids, which cannot hold one; see
--- docs/scripts.md). A key of another type, a set with more members, or
--- one whose oldest or newest member is not of that form, or whose newest
--- is more than 60 s past TIME, is an error and the key is left untouched
--- (members and TTL). So is the member a denial's wait is read from, the
--- (limit-cost+1)-th newest (a peek counts cost 1), and every member an
--- admit removes (those that left the window: each is read and checked
--- first, so no member another writer put there is removed). The other
--- members in between are not read: that would cost O(limit) per call.
--- Many keys: 2 to 64 keys are the multi-key form's layout
--- (docs/scripts.md), which this file takes itself: per call, '1' (its
--- key), its argument count and its arguments; the reply holds each
--- call's own reply or error reply, each call run in turn exactly as a
--- call of its own at that instant, so calls of any limits, and one key
--- twice, go together. One key is always one call.
--- @key    log          sorted set of members '<us>:<n>' scored by their time in µs; expires with its newest member
--- @arg    limit        int[1..10000]     most cost admitted within any window
--- @arg    window       ms[1..1e11]       window length
--- @arg    cost         int[0..1e9]       units to admit; 0 only peeks
--- @arg    now          unix_us[1..2^52]|server_clock=0  caller clock, within 60 s of the server's TIME
--- @arg    deadline     unix_us[1..2^52]|none=0  when the caller stops waiting: a call the server runs at or after it answers EXPIRED; 0: none
--- @arg    ...settle[0..1] (take string/^(refund|charge)$/, at unix_us[1..2^52])  none: an admit; refund: up to cost members at at or later are removed, the earliest first; charge: cost members are logged at at, into debt if need be; at, the caller clock of the reservation
--- @return allowed      bool              refund, charge: whether any unit moved
--- @return remaining    int[0..]          units that still fit in the window, never negative
--- @return retry_after  ms[0..]|never=-1          0 when allowed (refund, charge: until a cost of 1 fits); -1 when cost exceeds limit
--- @return reset_after  ms[0..]           until the newest member leaves the window
--- @error  BADARG       an argument is missing, extra, not a plain decimal integer, or out of range; a settle word other than refund or charge; at more than 60 s past TIME; a charge that would leave more than 10000 members
--- @error  EXPIRED      the server ran the call at or after its deadline; nothing changed
--- @error  WRONGTYPE    the key holds another type of value; it is left untouched
--- @error  BADSTATE     the key has this script's type but not its state (another script's members, numbers out of range); it is left untouched
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
local log      = KEYS[1]
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
local out = plan and {} -- the reply of many calls
-- One TIME for every call: they run at one instant. Calls of one limiter
-- share their limit and window: the string read for the call before (Lua
-- keeps one copy of each) is not read again.
local server0, rlimit, vlimit, rwindow, vwindow
for i = 1, ncalls do
  local reply
  repeat -- break leaves it with the call's reply
    if plan then
      local k, a
      k, nk, a, na = plan[4 * i - 3], plan[4 * i - 2], plan[4 * i - 1], plan[4 * i]
      log = nk > 0 and KEYS[k + 1] or nil
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
      rlimit, limit = limit, int(limit, 'limit', 1, 10000)
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
    if log == nil then bad = bad or 'BADARG log key is missing' end
    exactly(1, settle and 7 or 5, nk, na)
    if bad then reply = redis.error_reply(bad) break end

    local server, caller
    now, server, caller = clock(now, deadline, server0)
    server0 = server
    if not bad and settle and held > server + max_skew then
      bad = string.format("BADARG at must be at most %d µs past the server's TIME, got '%d'", max_skew, held)
    end
    if bad then reply = redis.error_reply(bad) break end

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

    -- read returns the log's size and the times of its newest and oldest
    -- members (nil for an empty log), or an error reply. ZCARD answers a key
    -- of another type with an error table (size.err); a number has no err
    -- field. Members are sorted by time, so the last member holds the newest
    -- time and the first the oldest.
    local function read()
      local size = redis.pcall('ZCARD', log)
      if type(size) == 'table' then
        return redis.error_reply('WRONGTYPE the key holds another type of value; it is left untouched')
      elseif size > 10000 then
        return badstate()
      end
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
      return size, last, first
    end
    local size, last, first = read()
    if type(size) == 'table' then
      reply = size
      break
    end
    -- A late caller is judged at the newest member's time, a settle at the
    -- later of that and held. A key that holds nothing is judged at the later
    -- of the caller's clock and the server's: a key the server's clock expired
    -- must not let a caller that lags it log in that window again.
    local own = now
    if settle and held > now then
      now = held
    end
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
    local function count()
      if last and last > gone then
        if first > gone then
          return size
        end
        return redis.call('ZCOUNT', log, '(' .. format('%d', gone), '+inf')
      end
      return 0
    end
    local live = count()

    -- trim removes the members that left the window, the oldest size - live;
    -- each is read and checked before any is removed, so a member some other
    -- writer put in the set is never deleted (BADSTATE, nothing written).
    local function trim()
      if first and first <= gone then
        local old = redis.call('ZRANGE', log, '0', format('%d', size - live - 1), 'WITHSCORES')
        for i = 1, #old, 2 do
          if time(old[i], old[i + 1]) == nil then
            return badstate()
          end
        end
        redis.call('ZREMRANGEBYSCORE', log, '-inf', format('%d', gone))
      end
      return nil
    end
    -- add logs k members at the instant us. Members at one time are numbered
    -- 1, 2, ... and all leave together (a refund removes the highest numbers),
    -- so their count is the last number in use. unpack is limited by Lua's C
    -- stack (about 8000 values): add in chunks.
    local function add(us, k)
      local stamp = format('%d', us)
      local n = 0
      if last and us <= last then
        n = redis.call('ZCOUNT', log, stamp, stamp)
      end
      local batch, used = {}, 0
      for i = 1, k do
        batch[used + 1] = stamp
        batch[used + 2] = stamp .. ':' .. format('%d', n + i)
        used = used + 2
        if used == 2000 or i == k then
          redis.call('ZADD', log, unpack(batch, 1, used))
          used = 0
        end
      end
    end
    -- expire keeps the key until its newest member, at us, leaves the window,
    -- by the server's clock; a caller's write (and a settle's, whose members
    -- are at a caller's clock) keeps it max_skew longer, so a call whose clock
    -- lags the server's by up to max_skew still finds it.
    local function expire(us)
      local ttl = us + window_us - server + 999
      if caller or settle then
        ttl = ttl + max_skew
      end
      ttl = (ttl - ttl % 1000) / 1000
      redis.call('PEXPIRE', log, format('%d', ttl > 1 and ttl or 1))
    end

    -- A refund or a charge, never denied: moved is the units it moves. A
    -- refund removes up to cost members at held or later, the earliest first,
    -- the highest numbers first within an instant (members at one instant are
    -- alike: whose they were does not matter), and none before held; once held
    -- has left the window it finds nothing. The reservation's own members sit
    -- at some instant s >= held (it was judged at the later of its clock, the
    -- newest member and TIME), cost of them, until s + window: walking up from
    -- held stops at s or before, so every member removed is ours or one that
    -- leaves no later than ours (see the header). A charge logs cost members at held, or at now once held
    -- has left the window, past the limit if need be, but never past the
    -- 10000 members a log holds: one that would is refused. Then the call
    -- answers as a peek would.
    local moved = 0
    if settle and cost > 0 then
      if settle < 0 then
        if held > gone then
          -- Up to cost members at held or later, the earliest first: at most
          -- 10000 come back. At each instant the highest numbers go, so those
          -- left are numbered 1 to their count. Every instant but the last one
          -- read comes whole; the last may hold more (ZCOUNT). The members
          -- before held are counted, not read, to find where to start. Each
          -- name is checked first (a member missing, or at another time, is
          -- not this script's log: BADSTATE, nothing written). refund returns
          -- the units it moved, or that error reply.
          local function refund()
            local skip = redis.call('ZCOUNT', log, '-inf', '(' .. format('%d', held))
            local got = redis.call('ZRANGE', log, format('%d', skip), format('%d', skip + cost - 1), 'WITHSCORES')
            local drop, i = {}, 1
            while i <= #got do
              local us, j = time(got[i], got[i + 1]), 0
              if us == nil then
                return badstate()
              end
              local stamp = format('%d', us)
              while i <= #got and got[i + 1] + 0 == us do
                j, i = j + 1, i + 2
              end
              local k = j
              if i > #got and #got == 2 * cost then
                k = redis.call('ZCOUNT', log, stamp, stamp)
              end
              for n = k, k - j + 1, -1 do
                local name = stamp .. ':' .. format('%d', n)
                local score = redis.call('ZSCORE', log, name)
                if not score or score + 0 ~= us then
                  return badstate()
                end
                drop[#drop + 1] = name
              end
            end
            for i = 1, #drop, 1000 do
              redis.call('ZREM', log, unpack(drop, i, i + 999 < #drop and i + 999 or #drop))
            end
            return #drop
          end
          moved = refund()
          if type(moved) == 'table' then
            reply = moved
            break
          end
        end
      else
        local us = held > gone and held or now
        if live + cost > 10000 then
          reply = redis.error_reply(string.format('BADARG a charge of %d would leave %d members in the log, past the 10000 it holds; nothing changed', cost, live + cost))
          break
        end
        reply = trim()
        if reply then
          break
        end
        add(us, cost)
        moved = cost
      end
      if moved > 0 then
        size, last, first = read()
        if last then
          expire(last)
        end
        live = count()
      end
      cost = 0
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
    local denied, wait = false, 0
    if want > limit then
      reply = {0, remaining, -1, reset}
      break
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
          reply = badstate()
          break
        end
      end
      denied, wait = true, us + window_us - own + 999
      wait = (wait - wait % 1000) / 1000
    end
    if settle then
      reply = {moved > 0 and 1 or 0, remaining, wait, reset}
      break
    elseif denied then
      reply = {0, remaining, wait, reset}
      break
    elseif cost == 0 then
      reply = {1, remaining, 0, reset}
      break
    end

    reply = trim()
    if reply then
      break
    end
    add(now, cost)
    expire(now)
    reset = now + window_us - own + 999
    reply = {1, remaining - cost, 0, (reset - reset % 1000) / 1000}
  until true
  if not plan then
    return reply
  end
  out[i] = reply
end
return out
