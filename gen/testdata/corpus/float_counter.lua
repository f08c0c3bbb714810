--- Adds a fractional amount to a counter (INCRBYFLOAT) and answers the new
--- total, as a string, as Redis keeps it.
--- @key    counter  string
--- @arg    by       float
--- @return total    float
local counter = KEYS[1]
local by = ARGV[1]
return redis.call('INCRBYFLOAT', counter, by)
