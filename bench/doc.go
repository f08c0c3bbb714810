// Package bench holds side-by-side benchmarks of redlimit's scripts and
// their peers on a real redis-server; see ../BENCHMARKS.md.
package bench
