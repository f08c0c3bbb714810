--- Fixed window: counts cost against limit in windows of a fixed length that
--- are aligned to the epoch (window k covers [k*window, (k+1)*window)), so every
--- app server agrees on the boundaries and a day-long window starts at UTC
--- midnight. Known weakness: the count starts again at every boundary, so up
--- to 2*limit can pass within a moment (limit at the end of one window, limit
--- at the start of the next); a span of any length d touches at most
--- ceil(d/window)+1 windows and admits at most limit in each. A cost of 0
--- peeks: it answers for a cost of 1 and writes nothing. A cost above limit
--- can never pass: it is denied with retry_after -1. Denied calls change
--- nothing. A caller clock that runs behind the stored window is counted in
--- the stored window, so the count never moves back to an earlier window; its
--- waits are measured from its own clock, so they are never too short for it.
--- The key lasts until the window ends by the caller's clock and by the
--- server's, which expires it, so a server clock that lags never drops a
--- count; with a caller clock, a window more, for calls that reach Redis late.
--- @key    counter      hash {n, w}: n counted in window number w; expires when that window ends
--- @arg    limit        int     most cost admitted per window (1..1e9)
--- @arg    window       ms      window length (1..1e11 ms), aligned to the epoch
--- @arg    cost         int     cost to count (0..1e9); 0 only peeks
--- @arg    now          us      caller clock in µs since the epoch; 0 uses the server's TIME
--- @return allowed      bool
--- @return remaining    int     cost still admitted in this window, never negative
--- @return retry_after  ms      0 when allowed; -1 when cost exceeds limit
--- @return reset_after  ms      until the window ends; 0 when nothing is counted
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

local counter = KEYS[1]
local limit   = int(ARGV[1], 'limit', 1, 1e9)
local window  = int(ARGV[2], 'window', 1, 1e11)
local cost    = int(ARGV[3], 'cost', 0, 1e9)
local now     = int(ARGV[4], 'now', 0, 2^52)
if counter == nil then bad = bad or 'BADARG counter key is missing' end
if bad then return redis.error_reply(bad) end

local function server_time()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local server
local caller = now ~= 0
if not caller then
  server = server_time()
  now = server
end

-- now <= 2^52 and window_us <= 1e14 keep every product below 2^53, and
-- floor(now / window_us) is exact for integers whose sum is below 2^53, so
-- no argument combination needs a bound of its own.
local window_us = window * 1000
local w = math.floor(now / window_us)

local state = redis.call('HMGET', counter, 'n', 'w')
local n, stored = tonumber(state[1]), tonumber(state[2])
if n == nil or stored == nil then
  n, stored = 0, w
end
-- A late caller counts in the stored window. A stale window counts as
-- empty: the key outlives its window when the TTL was set from a clock that
-- lagged (the server's or a late caller's).
if stored > w then
  w = stored
elseif stored < w then
  n = 0
end

local end_ms = math.ceil(((w + 1) * window_us - now) / 1000)
local reset_ms = n > 0 and end_ms or 0
local want = math.max(cost, 1)
if want > limit then
  return {0, math.max(0, limit - n), -1, reset_ms}
elseif n + want > limit then
  return {0, math.max(0, limit - n), end_ms, reset_ms}
elseif cost == 0 then
  return {1, limit - n, 0, reset_ms}
end

-- The server's clock expires the key. When it lags the caller's, the key
-- must still last until the window ends by the server's clock, or callers
-- whose clocks are still inside the window would find it gone and start the
-- count again. With a caller clock it lasts one window more, so a call that
-- reaches Redis up to a window after its own timestamp still finds it.
server = server or server_time()
local ttl_us = (w + 1) * window_us - math.min(now, server)
if caller then
  ttl_us = ttl_us + window_us
end
local ttl_ms = math.ceil(ttl_us / 1000)
n = n + cost
redis.call('HSET', counter, 'n', string.format('%d', n), 'w', string.format('%d', w))
redis.call('PEXPIRE', counter, string.format('%d', math.max(1, ttl_ms)))
return {1, limit - n, 0, end_ms}
