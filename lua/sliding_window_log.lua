--- Sliding window log: an exact rolling window. Every admitted unit of cost
--- is one member of a sorted set, scored by its time in µs, and counts while
--- its time t satisfies t > now - window; a call is admitted when the live
--- members plus its cost fit within limit. There is no boundary burst and no
--- approximation, at a price: memory and work per call grow with limit. The
--- set never holds more than limit members and an admit removes and adds at
--- most limit, so limit is capped at 10000; above that, use
--- sliding_window_counter. A cost of 0 peeks: it answers for a cost of 1 and
--- writes nothing. A cost above limit can never pass: it is denied with
--- retry_after -1. Denied calls change nothing: expired members are removed
--- only by an admit. A caller clock that runs behind the newest member is
--- treated as that member's time, so the log stays in time order. With a
--- caller clock the key lives until its newest member leaves the window by
--- the server's clock too, and a window more, for calls that reach Redis late.
--- @key    log          sorted set of members '<us>-<n>' scored by their time in µs; expires with its newest member
--- @arg    limit        int     most cost admitted within any window (1..10000)
--- @arg    window       ms      window length (1..1e11 ms)
--- @arg    cost         int     units to admit (0..1e9); 0 only peeks
--- @arg    now          us      caller clock in µs since the epoch; 0 uses the server's TIME
--- @return allowed      bool
--- @return remaining    int     units that still fit in the window, never negative
--- @return retry_after  ms      0 when allowed; -1 when cost exceeds limit
--- @return reset_after  ms      until the newest member leaves the window
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

local log    = KEYS[1]
local limit  = int(ARGV[1], 'limit', 1, 10000)
local window = int(ARGV[2], 'window', 1, 1e11)
local cost   = int(ARGV[3], 'cost', 0, 1e9)
local now    = int(ARGV[4], 'now', 0, 2^52)
if log == nil then bad = bad or 'BADARG log key is missing' end
if bad then return redis.error_reply(bad) end

-- now (<= 2^52) plus the window (<= 1e14 µs) stays below 2^53, so every time
-- below is exact in a double without a derived bound.
local window_us = window * 1000

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

-- Members are added at the newest time or later, so the log's last member
-- holds its newest time; a late caller is judged at that time.
local last = tonumber(redis.call('ZRANGE', log, '-1', '-1', 'WITHSCORES')[2])
if last ~= nil and now < last then
  now = last
end

-- A member at gone or before has left the window. Counting instead of
-- trimming keeps denied calls and peeks free of writes.
local gone = now - window_us
local live = 0
if last ~= nil and last > gone then
  live = redis.call('ZCOUNT', log, '(' .. string.format('%d', gone), '+inf')
end

local reset_ms = 0
if live > 0 then
  reset_ms = math.ceil((last + window_us - now) / 1000)
end
local remaining = math.max(0, limit - live)

local want = math.max(cost, 1)
local retry_us = -1000
if want <= limit then
  retry_us = 0
  if live + want > limit then
    -- No member is newer than now, so the live ones are the newest: the
    -- call fits once the (limit-want+1)-th newest has left, older ones first.
    local at = string.format('%d', want - limit - 1)
    retry_us = tonumber(redis.call('ZRANGE', log, at, at, 'WITHSCORES')[2]) + window_us - now
  end
end
if retry_us ~= 0 then
  return {0, remaining, math.ceil(retry_us / 1000), reset_ms}
elseif cost == 0 then
  return {1, remaining, 0, reset_ms}
end

redis.call('ZREMRANGEBYSCORE', log, '-inf', string.format('%d', gone))
-- Members at one time are numbered 1, 2, ... and all leave together, so
-- their count is the last number in use.
local stamp = string.format('%d', now)
local n = 0
if last == now then
  n = redis.call('ZCOUNT', log, stamp, stamp)
end
-- unpack is limited by Lua's C stack (about 8000 values): add in chunks.
local batch, size = {}, 0
for i = 1, cost do
  batch[size + 1] = stamp
  batch[size + 2] = stamp .. '-' .. string.format('%d', n + i)
  size = size + 2
  if size == 2000 or i == cost then
    redis.call('ZADD', log, unpack(batch, 1, size))
    size = 0
  end
end
-- The log is over once its newest member leaves the window.
-- Keys expire by the server's clock. With a caller clock the key lasts until
-- the caller's instant now+window has passed by the server's clock too, and
-- one window more, so a call that reaches Redis up to a window after its own
-- timestamp still finds the state it is judged against.
local ttl_us = window_us
if caller then
  ttl_us = math.max(window_us, now + window_us - clock()) + window_us
end
local ttl_ms = math.ceil(ttl_us / 1000)
redis.call('PEXPIRE', log, string.format('%d', ttl_ms))
return {1, remaining - cost, 0, window}
