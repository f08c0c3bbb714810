module github.com/redlimit/redlimit/compat/redis_rate

go 1.22

replace github.com/redlimit/redlimit => ../..

require (
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/google/go-cmp v0.6.0
	github.com/redis/go-redis/v9 v9.7.3
	github.com/redlimit/redlimit v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.8.4
)

require (
	github.com/cespare/xxhash/v2 v2.2.0 // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
