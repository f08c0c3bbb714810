-- The token bucket of the Redis documentation's rate-limiter tutorial,
-- "Token bucket rate limiter with Redis and Go"
-- (https://redis.io/docs/latest/develop/use-cases/rate-limiter/go/; the same
-- script is in every language's page of that tutorial and in
-- content/develop/use-cases/rate-limiter/go/token_bucket.go of the redis/docs
-- repository). This is a rewrite, not a byte-for-byte copy: the same
-- arguments, the same two Redis commands (HMGET then HMSET of the hash
-- {tokens, last_refill}, no TTL), the same arithmetic and the same reply,
-- in our own words. It is kept here only to be measured beside redlimit.
--
-- KEYS[1]  the bucket
-- ARGV[1]  capacity         most tokens the bucket holds
-- ARGV[2]  refill_rate      tokens added per whole refill_interval
-- ARGV[3]  refill_interval  seconds (a float)
-- ARGV[4]  now              the caller's clock in seconds (a float)
-- returns {allowed (1/0), tokens left}
local bucket_key = KEYS[1]
local capacity = tonumber(ARGV[1])
local refill_rate = tonumber(ARGV[2])
local refill_interval = tonumber(ARGV[3])
local now = tonumber(ARGV[4])

local state = redis.call('HMGET', bucket_key, 'tokens', 'last_refill')
local tokens, last_refill = tonumber(state[1]), tonumber(state[2])
if tokens == nil then
  -- a new bucket starts full, refilled as of the caller's now
  tokens, last_refill = capacity, now
end

-- whole intervals since the last refill; last_refill moves on by exactly
-- that many intervals, so a partial interval is kept for the next call
local steps = math.floor((now - last_refill) / refill_interval)
if steps > 0 then
  tokens = math.min(capacity, tokens + steps * refill_rate)
  last_refill = last_refill + steps * refill_interval
end

local allowed = 0
if tokens >= 1 then
  allowed = 1
  tokens = tokens - 1
end

-- written on every call, allowed or not
redis.call('HMSET', bucket_key, 'tokens', tokens, 'last_refill', last_refill)
return {allowed, tokens}
