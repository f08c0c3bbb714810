-- Floors under fixed_window.lua's cost inside Redis (docs/envoy.md, with
-- make bench-cost): the call, reading the server's clock, reading the key
-- and writing it with a TTL (a state of the fixed window's size, which
-- Redis keeps as an integer), answering four integers. No checks, no
-- arithmetic: what any script that keeps a descriptor's state must do.
local t = redis.call('TIME')
redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], '1' .. t[1] .. '0001', 'PX', 1000)
return {1, 99, 0, 1000}
