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
--- retry_after -1. Denied calls change nothing. A caller clock that runs
--- behind the stored window is judged at the start of the stored window,
--- where the previous count weighs most; its waits are measured from its own
--- clock. The key lasts until both counts weigh 0 by the caller's clock and
--- by the server's, which expires it, so a server clock that lags never drops
--- a count; with a caller clock, a window more, for calls that reach Redis
--- late. Both counts live in one key, so it runs on Redis Cluster.
--- @key    counts       hash {w, cur, prev}: counts of window number w and w-1; expires when both weigh 0
--- @arg    limit        int     most cost the estimate admits (1..1e9)
--- @arg    window       ms      window length (1..1e11 ms), aligned to the epoch
--- @arg    cost         int     cost to count (0..1e9); 0 only peeks
--- @arg    now          us      caller clock in µs since the epoch; 0 uses the server's TIME
--- @return allowed      bool
--- @return remaining    int     most cost admitted right now, never negative
--- @return retry_after  ms      0 when allowed; -1 when cost exceeds limit
--- @return reset_after  ms      until both counts weigh 0
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

local counts = KEYS[1]
local limit  = int(ARGV[1], 'limit', 1, 1e9)
local window = int(ARGV[2], 'window', 1, 1e11)
local cost   = int(ARGV[3], 'cost', 0, 1e9)
local now    = int(ARGV[4], 'now', 0, 2^52)
if counts == nil then bad = bad or 'BADARG counts key is missing' end
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

-- Times stay below 2^52 + 2e14 < 2^53, and floor(x / y) is exact for
-- integers whose sum is below 2^53. A count times a window (up to 1e23) is
-- not exact in a double, so those products go through muldiv instead of
-- needing a bound on limit * window.
local window_us = window * 1000
local w = math.floor(now / window_us)

-- floor(a * b / c) and a * b mod c for integers a, b >= 0 and c >= 1,
-- taking a one bit at a time so that no intermediate exceeds 3 * c or the
-- quotient.
local function muldiv(a, b, c)
  local bq, br = math.floor(b / c), b % c
  local bit = 1
  while bit * 2 <= a do
    bit = bit * 2
  end
  local q, r = 0, 0
  while bit >= 1 do
    q = q * 2 + (a >= bit and bq or 0)
    r = r * 2 + (a >= bit and br or 0)
    if a >= bit then
      a = a - bit
    end
    local carry = math.floor(r / c)
    q = q + carry
    r = r - carry * c
    bit = bit / 2
  end
  return q, r
end

local state = redis.call('HMGET', counts, 'w', 'cur', 'prev')
local stored, cur, prev = tonumber(state[1]), tonumber(state[2]), tonumber(state[3])
if stored == nil or cur == nil or prev == nil then
  stored, cur, prev = w, 0, 0
end
-- at is the instant the call is judged at: a late caller is judged at the
-- start of the stored window, so the state never moves back.
local at = now
if stored > w then
  w, at = stored, stored * window_us
elseif stored == w - 1 then
  -- Not "cur, prev = 0, cur": gopher-lua (the test tier) assigns a multiple
  -- assignment's targets one by one, so the second would read the new cur.
  prev = cur
  cur = 0
elseif stored < w - 1 then
  cur, prev = 0, 0
end
local start = w * window_us
local want = math.max(cost, 1)

-- ceil(p * (window - elapsed) / window): the previous count's weight.
local function weighted(p, elapsed)
  local q, r = muldiv(p, window_us - elapsed, window_us)
  return r > 0 and q + 1 or q
end

-- The first instant from t on, inside the window that begins at ws, at which
-- c + want + weighted(p) <= limit; nil when there is none in that window.
-- weighted(p, e) <= room  <=>  p * (window - e) <= room * window
--                         <=>  e >= window - floor(room * window / p).
local function first(c, p, ws, t)
  local room = limit - c - want
  if room < 0 then
    return nil
  elseif room >= p then
    return t
  end
  local e = window_us - muldiv(room, window_us, p)
  if e >= window_us then
    return nil
  end
  return math.max(t, ws + e)
end

local remaining = math.max(0, limit - cur - weighted(prev, at - start))
local until_us = 0
if cur > 0 then
  until_us = start + 2 * window_us - now
elseif prev > 0 then
  until_us = start + window_us - now
end
local reset_ms = math.ceil(until_us / 1000)

if want > limit then
  return {0, remaining, -1, reset_ms}
end
-- The estimate only falls while nothing is admitted, and two windows on
-- both counts weigh 0, so the first admitting instant is one of these.
local ok_at = first(cur, prev, start, at)
  or first(0, cur, start + window_us, start + window_us)
  or start + 2 * window_us
if ok_at > at then
  return {0, remaining, math.ceil((ok_at - now) / 1000), reset_ms}
elseif cost == 0 then
  return {1, remaining, 0, reset_ms}
end

-- The server's clock expires the key. When it lags the caller's, the key
-- must still last until the counts weigh 0 by the server's clock, or callers
-- whose clocks are not there yet would find them gone. With a caller clock
-- it lasts one window more, so a call that reaches Redis up to a window after
-- its own timestamp still finds them.
server = server or server_time()
local ttl_us = start + 2 * window_us - math.min(now, server)
if caller then
  ttl_us = ttl_us + window_us
end
local ttl_ms = math.ceil(ttl_us / 1000)
cur = cur + cost
reset_ms = math.ceil((start + 2 * window_us - now) / 1000)
redis.call('HSET', counts, 'w', string.format('%d', w), 'cur', string.format('%d', cur),
  'prev', string.format('%d', prev))
redis.call('PEXPIRE', counts, string.format('%d', math.max(1, ttl_ms)))
return {1, remaining - cost, 0, reset_ms}
