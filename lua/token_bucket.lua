--- Token bucket: takes cost tokens from a bucket that holds at most capacity
--- tokens and gains rate tokens every period. Refill "smooth" credits whole
--- tokens as time passes, rate per period (the time a credit took is rounded
--- up to whole µs, so the bucket never runs fast); refill "interval" adds rate
--- tokens at once each time a whole period has passed (the two styles in the
--- Redis guides). A call decides 1 to 64 requests for the key, in order,
--- each answered exactly as the same requests sent one call each at that
--- instant would be, on one read and one write: a batch is its calls in a
--- row. A call of 2 to 64 distinct keys takes one request per key (request
--- i on key i), each decided on its own key exactly as its own call at that
--- instant would be; every key is read before any is written, so an error
--- at one key changes nothing at any. A cost of 0 peeks: it answers for a
--- cost of 1 and writes nothing. A cost above capacity can never pass: it
--- is denied with retry_after -1.
--- Denied requests change nothing. A request the server runs at or after its
--- deadline answers expired (-1) and counts nothing. Arithmetic is exact for
--- every accepted input (products that could pass 2^53 go through muldiv).
--- Settling a reservation (a take, then its final cost): refill
--- smooth_refund or interval_refund (the refill named first) adds cost
--- tokens back after the refill to the instant, up to capacity: a key with
--- no state (never used, expired or reset) is full and gets nothing back,
--- and nothing is written. smooth_charge or interval_charge takes cost
--- tokens whatever is left, below zero if need be (debt: takes are denied
--- until the refill brings the bucket back above their cost); a key with no
--- state is charged from full. Neither is ever denied, and no debt passes
--- the tokens the current limit credits in 1e15 µs (31 years), nor 1e15
--- tokens: a charge takes at most that, and allowed says how many it took
--- (a changed limit's smaller bound caps a stored debt too). Both count at
--- the current limit. A cost of 0 moves nothing and writes nothing. Their
--- reply: allowed, the tokens moved; remaining, tokens left (0 in debt);
--- retry_after, until a take of 1 passes (0: now); reset_after, until the
--- bucket is full. The debt is the one state that makes a call wait, or a
--- key live, past the bounds below: by the time it takes to refill, no
--- more.
--- Clocks: now = 0 uses the server's TIME, one clock for every app server. A
--- caller clock (now > 0) is refused with BADARG when it is more than 60 s
--- from TIME. A write with a caller clock keeps its key 60 s past the instant
--- its state is spent on the server's clock, so a call whose clock lags TIME
--- by up to 60 s still finds the state; a request that finds no state is
--- judged at the later of its clock and TIME, so a key that expired never
--- hands the same time out twice. So no clock dates state more than 60 s
--- past TIME, and a state dated further is BADSTATE, whatever wrote it: a
--- call with the server's clock waits at most the time to fill plus 60 s, a
--- key lives at most the time to fill plus 120 s, and waits count from the
--- caller's own clock. A caller clock behind the stored state is judged at
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
--- bytes) while tokens has at most 3 digits. A charge's debt is written
--- '-<ts>-<debt>': the tokens below zero (1..1e15) after a '-', which
--- earlier versions refuse. A ts more than 60 s past TIME was not written
--- by this script. Anything else at the key, of any type,
--- is an error and the key is left untouched (value and TTL); that includes
--- the untagged '<ts><tokens>' and the hash {tokens, ts} of earlier
--- versions of this script. The 7-argument layout of earlier versions
--- (refill, cost, now, deadline after period) is refused with BADARG.
--- @key    ...buckets[1..64] string '-<ts><tokens>' or, in debt, '-<ts>-<debt>': tokens credited up to ts (µs); expires once full. One key takes 1 to 64 requests; 2 to 64 distinct keys take one request each, in one hash slot on a Cluster
--- @arg    capacity     int[1..1e9]            maximum tokens
--- @arg    rate         int[1..1e9]            tokens added per period
--- @arg    period       ms[1..1e11]            refill period; capacity/rate*period at most 1e15 µs (31 years)
--- @arg    now          unix_us[1..2^52]|server_clock=0  caller clock of every request, within 60 s of the server's TIME
--- @arg    refill       enum(smooth|interval|smooth_refund|smooth_charge|interval_refund|interval_charge)  how tokens come back: smooth credits them as time passes, interval adds rate at once per whole period; _refund: each cost comes back, up to capacity; _charge: each cost is taken, into debt if need be
--- @arg    ...requests[1..64] (cost int[0..1e9], deadline unix_us[1..2^52]|none=0)  decided in turn: cost, tokens to take (0 only peeks; _refund, _charge: tokens to move); deadline, when the caller stops waiting (0: none)
--- @return ...decisions[1..64] (allowed int[0..1e9]|expired=-1, remaining int[0..], retry_after ms[0..]|never=-1, reset_after ms[0..])  per request in turn: allowed, 1 or 0 (_refund, _charge: the tokens moved), expired with zeros for a request run at or after its deadline; remaining, tokens left (0 in debt); retry_after, 0 when it passed (_refund, _charge: until a take of 1 passes), never when its cost exceeds capacity; reset_after, until the bucket is full again
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

local capacity = int(ARGV[1], 'capacity', 1, 1e9)
local rate     = int(ARGV[2], 'rate', 1, 1e9)
local period   = int(ARGV[3], 'period', 1, 1e11)
local now      = int(ARGV[4], 'now', 0, 2^52)
local refill   = ARGV[5]
local smooth = refill == 'smooth'
-- settle is -1 for a refund, 1 for a charge, nil for a take.
local settle
if not smooth and refill ~= 'interval' then
  if refill == 'smooth_refund' then
    smooth, settle = true, -1
  elseif refill == 'smooth_charge' then
    smooth, settle = true, 1
  elseif refill == 'interval_refund' then
    settle = -1
  elseif refill == 'interval_charge' then
    settle = 1
  else
    bad = bad or "BADARG refill must be 'smooth', 'interval', 'smooth_refund', 'smooth_charge', 'interval_refund' or 'interval_charge' (ARGV: capacity, rate, period, now, refill, then cost and deadline per request)"
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
-- max_debt bounds a debt: the tokens credited in 1e15 µs, and at most
-- 1e15, so every count and every instant stays below 2^53. Only a settle
-- or a state in debt needs it (the product takes muldiv's long way).
local max_debt
if settle then
  max_debt = muldiv(1e15, rate, period_us)
  if max_debt > 1e15 then
    max_debt = 1e15
  end
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
-- The state read, tokens and ts, waits in its request's last two reply
-- slots until the request is decided: no table more for it.
-- GET answers a key of another type with an error table (stored.err); a
-- string has no err field. A key that holds nothing is a full bucket at the
-- later of the caller's clock and the server's: a key the server's clock
-- expired must not let a caller that lags it count the same time again.
for k = 1, nkeys do
  local tokens, ts = capacity, server > now and server or now
  local deadline = reply[4 * k - 2]
  if nkeys == 1 or deadline == 0 or server < deadline then
    local stored = redis.pcall('GET', KEYS[k])
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
        -- A debt a charge left: the tokens below zero, after a '-'.
        if #stored <= 34 then
          a, b = match(stored, '^%-(%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d)%-([1-9]%d*)$')
        end
        if a and #b <= 16 then
          ts, tokens = tonumber(a), -(b + 0)
        else
          a = nil
        end
      end
      -- No write credits a bucket past its clock, never more than max_skew
      -- past TIME.
      if not a or ts > server + max_skew or tokens > 1e9 or tokens < -1e15 then
        return redis.error_reply('BADSTATE the key is not a token bucket -<ts><tokens> or -<ts>-<debt>; it is left untouched')
      end
      -- A debt counts at most max_debt of the current limit.
      if tokens < 0 then
        if not max_debt then
          max_debt = muldiv(1e15, rate, period_us)
          if max_debt > 1e15 then
            max_debt = 1e15
          end
        end
        if tokens < -max_debt then
          tokens = -max_debt
        end
      end
    end
  end
  reply[4 * k - 1], reply[4 * k] = tokens, ts
end

-- Each request in turn, as its own call would judge the state the one
-- before it left (ts and tokens, which a write replaces; no state is a
-- full bucket at the later clock, which reads the same). A late caller is
-- judged at the stored time; own is its clock, which its waits are
-- measured from. Refill up to the instant: mark moves only by the time the
-- credited tokens took, so no interval counts twice; a full bucket
-- restarts its clock at the instant. Deciding from the stored state rather
-- than from a refilled copy keeps retry_after exact: refilling rounds, a
-- wait does not. full_at is the instant the bucket is full. Waits are
-- whole ms rounded up, counted from the caller's own clock: (x + 999 - (x
-- + 999) % 1000) / 1000 is ceil(x / 1000) for integers. The last write's
-- full_at is kept in last for the key's TTL.
local own = now
for k = 1, nkeys do
  local from, to = k, k
  if nkeys == 1 then
    from, to = 1, n
  end
  local tokens, ts = reply[4 * k - 1], reply[4 * k]
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
    elseif cost == same_cost then
      reply[j - 3], reply[j - 2], reply[j - 1], reply[j] = reply[same - 3], reply[same - 2], reply[same - 1], reply[same]
    else
      local at = own < ts and ts or own
      local have = tokens < capacity and tokens or capacity
      local held, mark, full_at = capacity, at, at
      if have < capacity then
        full_at = ts + span(capacity - have)
        if at < full_at then
          if smooth then
            local added = muldiv(at - ts, rate, period_us)
            held, mark = have + added, ts + span(added)
          else
            local steps = (at - ts) % period_us
            steps = (at - ts - steps) / period_us
            held, mark = have + steps * rate, ts + steps * period_us
          end
        end
      end
      local reset = 0
      if full_at > at then
        reset = full_at - own + 999
        reset = (reset - reset % 1000) / 1000
      end
      if settle then
        -- A refund or a charge, never denied: count is the tokens it moves.
        -- A refund adds them back up to capacity (a key with no state is
        -- full: nothing); a charge takes them below zero if need be, to a
        -- debt of max_debt.
        local count = 0
        if settle < 0 then
          if held < capacity then
            count = cost < capacity - held and cost or capacity - held
          end
        elseif held + max_debt > 0 then
          count = cost < held + max_debt and cost or held + max_debt
        end
        if count > 0 then
          held = held - settle * count
          full_at = mark + span(capacity - held)
          ts, tokens, last = mark, held, full_at
        end
        reset = 0
        if full_at > at then
          reset = full_at - own + 999
          reset = (reset - reset % 1000) / 1000
        end
        -- retry_after: until a take of 1 passes, from the state as it is now.
        local wait = 0
        have = tokens < capacity and tokens or capacity
        if have < 1 then
          wait = ts + span(1 - have)
          if wait > at then
            wait = wait - own + 999
            wait = (wait - wait % 1000) / 1000
          else
            wait = 0
          end
        end
        reply[j - 3], reply[j - 2], reply[j - 1], reply[j] = count, held > 0 and held or 0, wait, reset
      else
        local want = cost > 0 and cost or 1
        local wait = 0
        if have < want and want <= capacity then
          wait = ts + span(want - have)
        end
        -- A denial in debt (held below 0) answers 0 left.
        if want > capacity then
          reply[j - 3], reply[j - 2], reply[j - 1], reply[j] = 0, held > 0 and held or 0, -1, reset
          same, same_cost = j, cost
        elseif wait > at then
          wait = wait - own + 999
          reply[j - 3], reply[j - 2], reply[j - 1], reply[j] = 0, held > 0 and held or 0, (wait - wait % 1000) / 1000, reset
          same, same_cost = j, cost
        elseif cost == 0 then
          reply[j - 3], reply[j - 2], reply[j - 1], reply[j] = 1, held, 0, reset
          same, same_cost = j, cost
        else
          held = held - cost
          full_at = mark + span(capacity - held)
          ts, tokens, last = mark, held, full_at
          reset = full_at - own + 999
          reply[j - 3], reply[j - 2], reply[j - 1], reply[j] = 1, held, 0, (reset - reset % 1000) / 1000
          same_cost = nil
        end
      end
    end
  end

  if last then
    -- Keys expire by the server's clock. A caller's write keeps the key
    -- max_skew past the instant the bucket is full, so a call whose clock
    -- lags the server's by up to max_skew still finds the state it is judged
    -- against.
    local ttl = last - server + 999
    if caller then
      ttl = ttl + max_skew
    end
    ttl = (ttl - ttl % 1000) / 1000
    redis.call('SET', KEYS[k], format('-%016d%d', ts, tokens), 'PX', format('%d', ttl > 1 and ttl or 1))
  end
end
return reply
