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
--- denied with retry_after -1. Denied calls change nothing. A caller clock
--- that runs behind the stored state is treated as the stored time, so
--- out-of-order calls never drain the same time twice. With a caller clock
--- the key lives until the bucket is empty by the server's clock too, and a
--- period more, for calls that reach Redis late.
--- @key    bucket       hash {level, ts}: µs of water at ts, the last time water was poured; expires once empty
--- @arg    capacity     int     units the bucket holds (1..1e9)
--- @arg    rate         int     units drained per period (1..1e9)
--- @arg    period       ms      drain period (1..1e11 ms)
--- @arg    cost         int     units to pour (0..1e9); 0 only peeks
--- @arg    now          us      caller clock in µs since the epoch; 0 uses the server's TIME
--- @return allowed      bool
--- @return remaining    int     whole units that still fit, never negative
--- @return retry_after  ms      0 when allowed; -1 when cost exceeds capacity
--- @return reset_after  ms      until the bucket is empty
--- @error  BADARG       an argument is missing, not a number, or out of range
--- @error  WRONGTYPE    the key holds another kind of value (from Redis); it is left alone
local bad
local function int(raw, name, lo, hi)
  local v = tonumber(raw)
  if bad == nil and (v == nil or v ~= v or v % 1 ~= 0 or v < lo or v > hi) then
    bad = string.format('BADARG %s must be an integer from %d to %d, got %s',
      name, lo, hi, raw == nil and 'nothing' or "'" .. string.sub(raw, 1, 40) .. "'")
  end
  return v
end

local bucket   = KEYS[1]
local capacity = int(ARGV[1], 'capacity', 1, 1e9)
local rate     = int(ARGV[2], 'rate', 1, 1e9)
local period   = int(ARGV[3], 'period', 1, 1e11)
local cost     = int(ARGV[4], 'cost', 0, 1e9)
local now      = int(ARGV[5], 'now', 0, 2^52)
if bucket == nil then bad = bad or 'BADARG bucket key is missing' end
if not bad and rate > period * 1000 then
  bad = 'BADARG rate must be at most one per µs (period*1000)'
end
if bad then return redis.error_reply(bad) end

-- I.371's increment I: the µs one unit takes to drain.
local unit_us = math.ceil(period * 1000 / rate)
-- A full bucket bounds every level below, so keeping it under 1e15 µs
-- (31 years) keeps all arithmetic exact in doubles.
local full_us = capacity * unit_us
if full_us > 1e15 then
  return redis.error_reply('BADARG capacity*period/rate must be at most 1e15 µs (31 years)')
end

-- The server's clock, read at most once: keys expire by it.
local server
local function clock()
  if server == nil then
    local t = redis.call('TIME')
    server = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return server
end
local caller = now ~= 0
if not caller then
  now = clock()
end

local state = redis.call('HMGET', bucket, 'level', 'ts')
local level, ts = tonumber(state[1]), tonumber(state[2])
if level == nil or ts == nil then
  level, ts = 0, now
end
if now < ts then
  now = ts
end

-- I.371's X' = X - (ta - LCT), floored at 0: the water left now. It is an
-- exact integer, so every wait below is exact too.
local water = math.max(0, level - (now - ts))
local remaining = math.max(0, math.floor((full_us - water) / unit_us))

local want = math.max(cost, 1)
local retry_us = -1000
if want <= capacity then
  retry_us = math.max(0, water + want * unit_us - full_us)
end
if retry_us ~= 0 then
  return {0, remaining, math.ceil(retry_us / 1000), math.ceil(water / 1000)}
elseif cost == 0 then
  return {1, remaining, 0, math.ceil(water / 1000)}
end

water = water + cost * unit_us
local reset_ms = math.ceil(water / 1000)
-- Keys expire by the server's clock. With a caller clock the key lasts until
-- the caller's instant now+reset has passed by the server's clock too, and
-- one period more, so a call that reaches Redis up to a period after its own
-- timestamp still finds the state it is judged against.
local ttl_us = water
if caller then
  ttl_us = math.max(water, now + water - clock()) + period * 1000
end
local ttl_ms = math.ceil(ttl_us / 1000)
redis.call('HSET', bucket, 'level', string.format('%d', water), 'ts', string.format('%d', now))
redis.call('PEXPIRE', bucket, string.format('%d', ttl_ms))
return {1, remaining - cost, 0, reset_ms}
