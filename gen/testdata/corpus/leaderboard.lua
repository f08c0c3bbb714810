--- Adds points to a player and answers the player's rank (0 is the top)
--- and score.
--- @key    board   sorted set of players by score
--- @arg    player  string
--- @arg    points  int
--- @return rank    int     0-based, highest score first
--- @return score   int
local board = KEYS[1]
local player = ARGV[1]
local points = ARGV[2]
local score = redis.call('ZINCRBY', board, points, player)
local rank = redis.call('ZREVRANK', board, player)
return {rank, score}
