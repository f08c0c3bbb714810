--- Token bucket: takes cost tokens from a bucket that holds at most capacity
--- tokens and gains rate tokens every period. Refill "smooth" credits whole
--- tokens as time passes, rate per period (the time a credit took is rounded
--- up to whole µs, so the bucket never runs fast); refill "interval" adds rate
--- tokens at once each time a whole period has passed (the two styles in the
--- Redis guides). A cost of 0 peeks: it answers for a cost of 1 and writes
--- nothing. A cost above capacity can never pass: it is denied with
--- retry_after -1. Denied calls change nothing. A caller clock that runs
--- behind the stored state is treated as the stored time, so out-of-order
--- calls never move the bucket backwards or credit the same time twice. With
--- a caller clock the key lives until the bucket is full by the server's
--- clock too, and a period more, for calls that reach Redis late.
--- @key    bucket       hash {tokens, ts}; expires once full
--- @arg    capacity     int     maximum tokens (1..1e9)
--- @arg    rate         int     tokens added per period (1..1e9)
--- @arg    period       ms      refill period (1..1e11 ms)
--- @arg    refill       string  "smooth" or "interval"
--- @arg    cost         int     tokens to take (0..1e9); 0 only peeks
--- @arg    now          us      caller clock in µs since the epoch; 0 uses the server's TIME
--- @return allowed      bool
--- @return remaining    int     tokens left, never negative
--- @return retry_after  ms      0 when allowed; -1 when cost exceeds capacity
--- @return reset_after  ms      until the bucket is full again
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
local refill   = ARGV[4]
local cost     = int(ARGV[5], 'cost', 0, 1e9)
local now      = int(ARGV[6], 'now', 0, 2^52)
if bucket == nil then bad = bad or 'BADARG bucket key is missing' end
if refill ~= 'smooth' and refill ~= 'interval' then
  bad = bad or "BADARG refill must be 'smooth' or 'interval'"
end
if bad then return redis.error_reply(bad) end

local period_us = period * 1000
local smooth = refill == 'smooth'

-- The longest time the bucket needs to fill bounds every sum below, so
-- keeping it under 1e15 µs (31 years) keeps all arithmetic exact in doubles.
local fill_us = smooth and capacity * period_us / rate or math.ceil(capacity / rate) * period_us
if fill_us > 1e15 then
  return redis.error_reply('BADARG capacity/rate*period must be at most 1e15 µs (31 years)')
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

local state = redis.call('HMGET', bucket, 'tokens', 'ts')
local tokens, ts = tonumber(state[1]), tonumber(state[2])
if tokens == nil or ts == nil then
  tokens, ts = capacity, now
end
if now < ts then
  now = ts
end

-- µs from now until a bucket that held have tokens, credited up to mark,
-- holds n (n <= capacity). Deciding from the stored state rather than from a
-- refilled copy keeps retry_after exact: refilling rounds, a wait does not.
local function wait(have, mark, n)
  if have >= n then
    return 0
  elseif smooth then
    return math.max(0, mark + math.ceil((n - have) * period_us / rate) - now)
  end
  return math.max(0, mark + math.ceil((n - have) / rate) * period_us - now)
end

-- Refill up to now. ts moves only by the time the credited tokens took, so
-- no interval counts twice; a full bucket restarts its clock at now.
local held, mark = tokens, ts
if tokens >= capacity then
  held, mark = capacity, now
elseif smooth then
  local added = math.floor((now - ts) * rate / period_us)
  held, mark = tokens + added, ts + math.ceil(added * period_us / rate)
else
  local steps = math.floor((now - ts) / period_us)
  held, mark = tokens + steps * rate, ts + steps * period_us
end
if held >= capacity then
  held, mark = capacity, now
end

local want = math.max(cost, 1)
local retry_us = -1000
if want <= capacity then
  retry_us = wait(math.min(tokens, capacity), ts, want)
end
if retry_us ~= 0 then
  return {0, held, math.ceil(retry_us / 1000), math.ceil(wait(tokens, ts, capacity) / 1000)}
elseif cost == 0 then
  return {1, held, 0, math.ceil(wait(tokens, ts, capacity) / 1000)}
end

held = held - cost
local reset_us = wait(held, mark, capacity)
-- Keys expire by the server's clock. With a caller clock the key lasts until
-- the caller's instant now+reset has passed by the server's clock too, and
-- one period more, so a call that reaches Redis up to a period after its own
-- timestamp still finds the state it is judged against.
local ttl_us = reset_us
if caller then
  ttl_us = math.max(reset_us, now + reset_us - clock()) + period_us
end
local ttl_ms = math.max(1, math.ceil(ttl_us / 1000))
redis.call('HSET', bucket, 'tokens', string.format('%d', held), 'ts', string.format('%d', mark))
redis.call('PEXPIRE', bucket, string.format('%d', ttl_ms))
return {1, held, 0, math.ceil(reset_us / 1000)}
