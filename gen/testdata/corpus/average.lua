--- Keeps a running average of reported values (latency, ratings) and
--- answers it; a copy of a blog's script that prints it with tostring.
--- @key    stats    hash {sum, n}
--- @arg    value    int
--- @return n        int
--- @return average  string
local stats = KEYS[1]
local value = ARGV[1]
local sum = redis.call('HINCRBY', stats, 'sum', value)
local n = redis.call('HINCRBY', stats, 'n', 1)
return {n, tostring(math.floor(sum / n))}
