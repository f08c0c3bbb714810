--- Spends a fractional amount (credits, GB, dollars) from a quota that
--- resets every period. Amounts are stored with %.17g so 0.1 + 0.2 stays
--- 0.30000000000000004 on every server.
--- @key    quota   string: the amount spent in this period
--- @arg    limit   float   the quota per period
--- @arg    amount  float   what this call spends
--- @arg    period  s       how long a period lasts
--- @return allowed bool
--- @return spent   float   spent in this period, as a string
local quota = KEYS[1]
local limit = tonumber(ARGV[1])
local amount = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local spent = tonumber(redis.call('GET', quota) or '0')
if spent + amount > limit then
  return {0, string.format('%.17g', spent)}
end
spent = spent + amount
local ttl = redis.call('TTL', quota)
redis.call('SET', quota, string.format('%.17g', spent))
if ttl < 0 then
  redis.call('EXPIRE', quota, ARGV[3])
else
  redis.call('EXPIRE', quota, ttl)
end
return {1, string.format('%.17g', spent)}
