--- Reports how many hits a counter holds, without counting one.
--- @key    string  the quota counter (named like Go's string type on purpose)
--- @return used    int  hits counted, 0 when the key is missing
--- @flags  no-writes
local string = KEYS[1]
return tonumber(redis.call('GET', string) or '0')
