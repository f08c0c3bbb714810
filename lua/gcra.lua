--- GCRA, the generic cell rate algorithm in its virtual-scheduling form (ITU-T
--- I.371; the algorithm of redis-cell's CL.THROTTLE and go-redis/redis_rate):
--- one string holds the theoretical arrival time (TAT), the instant the steady
--- rate would be caught up. A call of cost c passes when the TAT, pushed c
--- emission intervals on, stays within burst intervals of now; it then stores
--- the pushed TAT. burst counts the requests that may pass at once, as in
--- redis_rate (redis-cell's max_burst is burst - 1). The interval is
--- period/rate rounded up to a whole µs, so the TAT stays an integer, a full
--- burst always passes at once, and a rate that does not divide the period is
--- met from below (by under 1 µs per request); a rate above one per µs is
--- refused (token_bucket takes it). Known weaknesses: the TAT is all it keeps, so it cannot
--- tell how many requests came, and a caller clock that runs behind is judged
--- at its own time against the TAT, so it only waits longer. A cost of 0
--- peeks: it answers for a cost of 1 and writes nothing. A cost above burst
--- can never pass: it is denied with retry_after -1. Denied calls change
--- nothing, and the TAT never moves back. With a caller clock the key lives
--- until the TAT has passed by the server's clock too, and a period more.
--- @key    tat          string TAT in µs since the epoch; expires when now reaches it
--- @arg    burst        int     requests that may pass at once (1..1e9)
--- @arg    rate         int     requests per period at the steady pace (1..1e9)
--- @arg    period       ms      the period of rate (1..1e11 ms)
--- @arg    cost         int     requests this call counts for (0..1e9); 0 only peeks
--- @arg    now          us      caller clock in µs since the epoch; 0 uses the server's TIME
--- @return allowed      bool
--- @return remaining    int     whole requests that would still pass now, never negative
--- @return retry_after  ms      0 when allowed; -1 when cost exceeds burst
--- @return reset_after  ms      until the TAT is reached and a full burst passes again
--- @error  BADARG       an argument is missing, not a number, or out of range
--- @error  WRONGTYPE    the key holds another kind of value, or a string that is not a TAT; it is left alone
local bad
local function int(raw, name, lo, hi)
  local v = tonumber(raw)
  if bad == nil and (v == nil or v ~= v or v % 1 ~= 0 or v < lo or v > hi) then
    bad = string.format('BADARG %s must be an integer from %d to %d, got %s',
      name, lo, hi, raw == nil and 'nothing' or "'" .. string.sub(raw, 1, 40) .. "'")
  end
  return v
end

local tat    = KEYS[1]
local burst  = int(ARGV[1], 'burst', 1, 1e9)
local rate   = int(ARGV[2], 'rate', 1, 1e9)
local period = int(ARGV[3], 'period', 1, 1e11)
local cost   = int(ARGV[4], 'cost', 0, 1e9)
local now    = int(ARGV[5], 'now', 0, 2^52)
if tat == nil then bad = bad or 'BADARG tat key is missing' end
if not bad and rate > period * 1000 then
  bad = 'BADARG rate must be at most one per µs (period*1000)'
end
if bad then return redis.error_reply(bad) end

-- The emission interval T in whole µs, rounded up. The ceil is exact: a
-- quotient that is not whole is at least 1/rate away from the next integer,
-- and with period*1000 < 2^53 the division errs by less than half of that.
local interval = math.ceil(period * 1000 / rate)
-- The tolerance burst*T bounds how far an admitted TAT runs ahead of now, so
-- keeping it under 1e15 µs (31 years) keeps all arithmetic exact in doubles.
local tolerance = burst * interval
if tolerance > 1e15 then
  return redis.error_reply('BADARG burst*period/rate must be at most 1e15 µs (31 years)')
end

local function server_time()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local caller_clock = now ~= 0
if not caller_clock then
  now = server_time()
end

-- A missing key is a TAT at or before now; a TAT behind now counts as now,
-- so idle time never banks more than a burst. A caller clock behind the TAT
-- leaves it where it is: it only sees the TAT further ahead.
local stored = redis.call('GET', tat)
local theo = now
if stored then
  local v = tonumber(stored)
  if v == nil or v ~= v or v % 1 ~= 0 or v < 0 or v > 2^53 then
    return redis.error_reply('WRONGTYPE the key does not hold a TAT in whole µs')
  end
  theo = math.max(v, now)
end

-- ahead is how far the TAT runs ahead of now, in µs; n more requests pass
-- while ahead + n*T <= burst*T.
local ahead = theo - now
local function left(d)
  return math.max(0, burst - math.ceil(d / interval))
end

local want = math.max(cost, 1)
local retry_us = -1000
if want <= burst then
  retry_us = math.max(0, ahead - (burst - want) * interval)
end
if retry_us ~= 0 then
  return {0, left(ahead), math.ceil(retry_us / 1000), math.ceil(ahead / 1000)}
elseif cost == 0 then
  return {1, left(ahead), 0, math.ceil(ahead / 1000)}
end

theo = theo + cost * interval
ahead = ahead + cost * interval
-- Keys expire by the server's clock. With a caller clock the key lasts until
-- the TAT has passed by the server's clock too, and one period more, so a
-- call that reaches Redis up to a period after its own timestamp still finds
-- the TAT it is judged against.
local ttl_us = ahead
if caller_clock then
  ttl_us = math.max(ahead, theo - server_time()) + period * 1000
end
redis.call('SET', tat, string.format('%d', theo), 'PX', string.format('%d', math.ceil(ttl_us / 1000)))
return {1, left(ahead), 0, math.ceil(ahead / 1000)}
