--- Exercises every header type: echoes each argument back as the matching
--- return, and counts calls in a string key.
--- @key    counter    string key counting calls
--- @arg    count      int     added to the counter
--- @arg    ratio      float   returned as a string
--- @arg    enabled    bool
--- @arg    label      string  echoed
--- @arg    window     ms
--- @arg    precision  us
--- @arg    ttl        s       expiry of the counter
--- @return ok         bool
--- @return total      int     counter after the call
--- @return share      float
--- @return name       string
--- @return wait       ms
--- @return elapsed    us
--- @return expires    s
--- @error  BADARG     an argument is not a number
--- @error  TOO_MANY   the counter passed 100
local counter   = KEYS[1]
local count     = tonumber(ARGV[1])
local ratio     = ARGV[2]
local enabled   = ARGV[3] == '1'
local label     = ARGV[4]
local window    = tonumber(ARGV[5])
local precision = tonumber(ARGV[6])
local ttl       = tonumber(ARGV[7])
if count == nil or tonumber(ratio) == nil or window == nil or precision == nil or ttl == nil then
  return redis.error_reply('BADARG count, ratio, window, precision and ttl must be numbers')
end
local total = redis.call('INCRBY', counter, string.format('%d', count))
if total > 100 then
  return redis.error_reply('TOO_MANY counter is ' .. string.format('%d', total))
end
redis.call('EXPIRE', counter, string.format('%d', ttl))
return {enabled and 1 or 0, total, ratio, label, window, precision, ttl}
