--- Echoes the extended grammar back: an enum, bounded numbers and
--- instants, and stores the mode.
--- @key    state       string key that holds the last mode
--- @arg    mode        enum(smooth|interval)  how tokens come back
--- @arg    limit       int[1..1e9]            a bounded count
--- @arg    ratio       float[0..1]            a bounded fraction
--- @arg    period      ms[1..1e11]            a bounded duration
--- @arg    now         unix_us[0..2^52]       caller clock; 0 uses the server's TIME
--- @arg    day         unix_s                 an instant in whole seconds
--- @arg    ...stamps   unix_ms                instants in milliseconds
--- @return mode        enum(smooth|interval)
--- @return limit       int[1..]
--- @return ratio       float
--- @return period      ms[1..]
--- @return now         unix_us                the caller's clock, or the server's
--- @return day         unix_s
--- @return ...stamps   unix_ms
--- @error  BADARG      an argument is out of range
local state  = KEYS[1]
local mode   = ARGV[1]
local limit  = ARGV[2]
local ratio  = ARGV[3]
local period = ARGV[4]
local now    = tonumber(ARGV[5])
local day    = ARGV[6]
if mode ~= 'smooth' and mode ~= 'interval' then
  return redis.error_reply('BADARG mode')
end
if now == 0 then
  local t = redis.call('TIME')
  now = string.format('%d', tonumber(t[1]) * 1000000 + tonumber(t[2]))
else
  now = ARGV[5]
end
redis.call('SET', state, mode)
local reply = {mode, limit, ratio, period, now, day}
for i = 7, #ARGV do
  reply[#reply + 1] = ARGV[i]
end
return reply
