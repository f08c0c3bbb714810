--- Returns the server's clock.
--- @return now  us  microseconds since the epoch
--- @multi  its multi-key form: up to 64 calls in one EVALSHA
local t = redis.call('TIME')
return tonumber(t[1]) * 1000000 + tonumber(t[2])
