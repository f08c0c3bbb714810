-- Floors under fixed_window.lua's cost inside Redis (docs/envoy.md, with
-- make bench-cost): the call, answering four integers as a decision does.
return {1, 99, 0, 1000}
