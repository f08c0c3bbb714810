#!lua flags=no-writes
--- Reads a hash field: a no-writes script with a #! line, which Redis 7
--- reads and which a Functions library keeps only as a comment (@flags
--- says the same, and goes to register_function).
--- @key    hash   any hash
--- @arg    field  string  the field to read
--- @return value  string  the field's value, or "" when it is missing
--- @flags  no-writes
-- miniredis cannot run this script; Redis 7 can.
-- luagen:ignore shebang
local hash = KEYS[1]
local field = ARGV[1]
return redis.call('HGET', hash, field) or ''
