--- Echoes the round-3 grammar back: key records, a lease pattern,
--- sentinels, and GCRA-like triples with per-limit replies.
--- @key    ...slots[1..4] (counter, flag)  two keys per slot
--- @arg    lease          string/^[A-Za-z0-9_-]{1,64}$/        a lease id
--- @arg    now            unix_us[1..2^52]|server_clock=0      caller clock
--- @arg    wait           ms[0..1e11]|never=-1                  echoed
--- @arg    ...limits[1..3] (burst int[1..1e9], rate int[1..1e9], period ms[1..1e11])  one per slot
--- @return lease          string/^[A-Za-z0-9_-]{1,64}$/
--- @return now            unix_us[1..]|server_clock=0
--- @return wait           ms[0..]|never=-1
--- @return keys           int                                   how many keys came
--- @return ...per_limit[1..3] (remaining int[0..], retry_after ms[0..]|never=-1)  one per limit
local lease = ARGV[1]
local now   = ARGV[2]
local wait  = ARGV[3]
local reply = {lease, now, wait, #KEYS}
for i = 4, #ARGV, 3 do
  local burst = tonumber(ARGV[i])
  reply[#reply + 1] = burst - 1
  if burst == 1 then
    reply[#reply + 1] = -1
  else
    reply[#reply + 1] = ARGV[i + 2]
  end
end
return reply
