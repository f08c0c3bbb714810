module github.com/redlimit/redlimit/adapters/chilimit

go 1.24

replace github.com/redlimit/redlimit => ../..

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/redis/go-redis/v9 v9.7.3
	github.com/redlimit/redlimit v0.0.0-00010101000000-000000000000
)

require (
	github.com/cespare/xxhash/v2 v2.2.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/go-chi/chi/v5 v5.5.0
	github.com/yuin/gopher-lua v1.1.1 // indirect
)
