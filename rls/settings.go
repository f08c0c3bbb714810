package rls

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Settings are the server's settings, read from the reference's
// environment variables with the reference's defaults (its
// src/settings/settings.go), plus this server's own, which start with
// REDLIMIT_.
type Settings struct {
	Host       string // HOST: /healthcheck and /json
	Port       int    // PORT
	DebugHost  string // DEBUG_HOST: /debug/pprof
	DebugPort  int    // DEBUG_PORT
	GRPCHost   string // GRPC_HOST
	GRPCPort   int    // GRPC_PORT
	GRPCUDS    string // GRPC_UDS: a Unix socket instead of GRPC_HOST:GRPC_PORT
	GRPCMaxAge time.Duration
	GRPCGrace  time.Duration
	GRPCTLS    bool   // GRPC_SERVER_USE_TLS
	GRPCCert   string // GRPC_SERVER_TLS_CERT
	GRPCKey    string // GRPC_SERVER_TLS_KEY
	GRPCCACert string // GRPC_CLIENT_TLS_CACERT: client certificates must chain to it

	LogLevel  string // LOG_LEVEL
	LogFormat string // LOG_FORMAT: text or json

	// ConfigType (CONFIG_TYPE) is FILE, the files under ConfigDir, or
	// GRPC_XDS_SOTW, the RateLimitConfig resources of an xDS server.
	ConfigType      string
	XDSServerURL    string            // CONFIG_GRPC_XDS_SERVER_URL
	XDSNodeID       string            // CONFIG_GRPC_XDS_NODE_ID
	XDSNodeMetadata map[string]string // CONFIG_GRPC_XDS_NODE_METADATA: "k1=v1,k2=v2"
	XDSHeaders      map[string]string // CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS: "k1:v1,k2:v2"
	XDSTLS          bool              // CONFIG_GRPC_XDS_SERVER_USE_TLS
	XDSCert         string            // CONFIG_GRPC_XDS_CLIENT_TLS_CERT
	XDSKey          string            // CONFIG_GRPC_XDS_CLIENT_TLS_KEY
	XDSCACert       string            // CONFIG_GRPC_XDS_SERVER_TLS_CACERT: else the system's roots
	XDSServerName   string            // CONFIG_GRPC_XDS_SERVER_TLS_SAN: else the URL's host
	XDSMaxMsgSize   int               // XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES: 0 is gRPC's 4 MiB
	// XDSBackoff* (XDS_CLIENT_BACKOFF_*) space reconnections: the first
	// wait is Initial, each next one twice the last up to Max, each
	// randomized by ±Random when Jitter is set.
	XDSBackoffInitial time.Duration
	XDSBackoffMax     time.Duration
	XDSBackoffRandom  float64
	XDSBackoffJitter  bool
	// With xDS, health waits for the first configuration unless
	// ForceStart (FORCE_START_WITHOUT_INITIAL_CONFIG) is set and
	// HealthyWithConfig (HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED) is not.
	ForceStart        bool
	HealthyWithConfig bool

	RuntimeRoot   string // RUNTIME_ROOT
	RuntimeSubdir string // RUNTIME_SUBDIRECTORY
	RuntimeAppDir string // RUNTIME_APPDIRECTORY
	MergeDomains  bool   // MERGE_DOMAIN_CONFIG

	Prometheus     bool   // USE_PROMETHEUS
	PrometheusAddr string // PROMETHEUS_ADDR
	PrometheusPath string // PROMETHEUS_PATH

	LocalCacheBytes int     // LOCAL_CACHE_SIZE_IN_BYTES: the deny cache
	NearLimitRatio  float32 // NEAR_LIMIT_RATIO
	CacheKeyPrefix  string  // CACHE_KEY_PREFIX

	Headers         bool   // LIMIT_RESPONSE_HEADERS_ENABLED
	LimitHeader     string // LIMIT_LIMIT_HEADER
	RemainingHeader string // LIMIT_REMAINING_HEADER
	ResetHeader     string // LIMIT_RESET_HEADER

	ShadowMode bool // SHADOW_MODE
	QuotaMode  bool // QUOTA_MODE

	RedisSocketType   string        // REDIS_SOCKET_TYPE: unix or tcp
	RedisType         string        // REDIS_TYPE: single, cluster or sentinel
	RedisURL          string        // REDIS_URL: an address; for a cluster a list; for sentinel "master,sentinel1,..."
	RedisPoolSize     int           // REDIS_POOL_SIZE
	RedisAuth         string        // REDIS_AUTH: "password" or "user:password"
	RedisSentinelAuth string        // REDIS_SENTINEL_AUTH
	RedisTLS          bool          // REDIS_TLS
	RedisTLSCert      string        // REDIS_TLS_CLIENT_CERT
	RedisTLSKey       string        // REDIS_TLS_CLIENT_KEY
	RedisTLSCACert    string        // REDIS_TLS_CACERT
	RedisTLSSkipHost  bool          // REDIS_TLS_SKIP_HOSTNAME_VERIFICATION
	RedisTimeout      time.Duration // REDIS_TIMEOUT: connecting, each read and write, and each decision
	RedisHealthCheck  bool          // REDIS_HEALTH_CHECK_ACTIVE_CONNECTION: health follows Redis after start too

	// OnRedisFailure (REDLIMIT_ON_REDIS_FAILURE) is what a call gets when
	// Redis fails: "error" (gRPC UNAVAILABLE, for Envoy's
	// failure_mode_deny to decide), "allow" (OK), "deny" (OVER_LIMIT) or
	// "local:<share>" (limits in this process at share of each limit).
	OnRedisFailure string

	// AutoPipeline (REDLIMIT_AUTOPIPELINE, true by default) sends the
	// scripts of concurrent requests to a single Redis together, in one
	// write (Cluster and Sentinel clients go through ratelimit's failover
	// guard instead);
	// PipelineWindow (REDIS_PIPELINE_WINDOW, 0 by default) waits that long
	// for more before a write.
	AutoPipeline   bool
	PipelineWindow time.Duration

	// Ignored lists the reference's variables that are set and that this
	// server does not support; Run logs them in one line.
	Ignored []string
}

// ConfigDir is where the configuration files are read:
// RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY.
func (s Settings) ConfigDir() string {
	return filepath.Join(s.RuntimeRoot, s.RuntimeSubdir, s.RuntimeAppDir)
}

// referenceVariables are every variable the reference reads.
var referenceVariables = strings.Fields(`HOST PORT DEBUG_HOST DEBUG_PORT GRPC_UDS GRPC_HOST GRPC_PORT
GRPC_MAX_CONNECTION_AGE GRPC_MAX_CONNECTION_AGE_GRACE GRPC_SERVER_USE_TLS GRPC_SERVER_TLS_CERT
GRPC_SERVER_TLS_KEY GRPC_CLIENT_TLS_CACERT GRPC_CLIENT_TLS_SAN LOG_LEVEL LOG_FORMAT CONFIG_TYPE
FORCE_START_WITHOUT_INITIAL_CONFIG CONFIG_GRPC_XDS_NODE_ID CONFIG_GRPC_XDS_NODE_METADATA
CONFIG_GRPC_XDS_SERVER_URL CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL
CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS CONFIG_GRPC_XDS_SERVER_USE_TLS CONFIG_GRPC_XDS_CLIENT_TLS_CERT
CONFIG_GRPC_XDS_CLIENT_TLS_KEY CONFIG_GRPC_XDS_SERVER_TLS_CACERT CONFIG_GRPC_XDS_SERVER_TLS_SAN
XDS_CLIENT_BACKOFF_INITIAL_INTERVAL XDS_CLIENT_BACKOFF_MAX_INTERVAL XDS_CLIENT_BACKOFF_RANDOM_FACTOR
XDS_CLIENT_BACKOFF_JITTER XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES USE_DOG_STATSD USE_DOG_STATSD_MOGRIFIERS
USE_STATSD STATSD_HOST STATSD_PORT EXTRA_TAGS STATS_FLUSH_INTERVAL DISABLE_STATS USE_PROMETHEUS
PROMETHEUS_ADDR PROMETHEUS_PATH PROMETHEUS_MAPPER_YAML RUNTIME_ROOT RUNTIME_SUBDIRECTORY
RUNTIME_APPDIRECTORY RUNTIME_IGNOREDOTFILES RUNTIME_WATCH_ROOT EXPIRATION_JITTER_MAX_SECONDS
LOCAL_CACHE_SIZE_IN_BYTES NEAR_LIMIT_RATIO CACHE_KEY_PREFIX BACKEND_TYPE
STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT LIMIT_RESPONSE_HEADERS_ENABLED LIMIT_LIMIT_HEADER
LIMIT_REMAINING_HEADER LIMIT_RESET_HEADER HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED REDIS_SOCKET_TYPE
REDIS_TYPE REDIS_URL REDIS_POOL_SIZE REDIS_AUTH REDIS_TLS REDIS_TLS_CLIENT_CERT REDIS_TLS_CLIENT_KEY
REDIS_TLS_CACERT REDIS_TLS_SKIP_HOSTNAME_VERIFICATION REDIS_PIPELINE_WINDOW REDIS_PIPELINE_LIMIT
REDIS_PERSECOND REDIS_PERSECOND_SOCKET_TYPE REDIS_PERSECOND_TYPE REDIS_PERSECOND_URL
REDIS_PERSECOND_POOL_SIZE REDIS_PERSECOND_AUTH REDIS_PERSECOND_TLS REDIS_SENTINEL_AUTH
REDIS_PERSECOND_SENTINEL_AUTH REDIS_PERSECOND_PIPELINE_WINDOW REDIS_PERSECOND_PIPELINE_LIMIT
REDIS_HEALTH_CHECK_ACTIVE_CONNECTION REDIS_TIMEOUT REDIS_PERSECOND_TIMEOUT REDIS_POOL_ON_EMPTY_BEHAVIOR
REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR MEMCACHE_HOST_PORT MEMCACHE_MAX_IDLE_CONNS MEMCACHE_SRV
MEMCACHE_SRV_REFRESH MEMCACHE_TLS MEMCACHE_TLS_CLIENT_CERT MEMCACHE_TLS_CLIENT_KEY MEMCACHE_TLS_CACERT
MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION SHADOW_MODE QUOTA_MODE RESPONSE_DYNAMIC_METADATA
MERGE_DOMAIN_CONFIG TRACING_ENABLED TRACING_SERVICE_NAME TRACING_SERVICE_NAMESPACE
TRACING_SERVICE_INSTANCE_ID TRACING_EXPORTER_PROTOCOL TRACING_SAMPLING_RATE`)

// accepted are the reference's variables read here, or whose every value
// is what this server does anyway, or that only tune what it does not do
// unless another variable asks for it.
var accepted = map[string]bool{}

func init() {
	for _, v := range strings.Fields(`HOST PORT DEBUG_HOST DEBUG_PORT GRPC_UDS GRPC_HOST GRPC_PORT
GRPC_MAX_CONNECTION_AGE GRPC_MAX_CONNECTION_AGE_GRACE GRPC_SERVER_USE_TLS GRPC_SERVER_TLS_CERT
GRPC_SERVER_TLS_KEY GRPC_CLIENT_TLS_CACERT LOG_LEVEL LOG_FORMAT CONFIG_TYPE
FORCE_START_WITHOUT_INITIAL_CONFIG USE_PROMETHEUS PROMETHEUS_ADDR PROMETHEUS_PATH RUNTIME_ROOT
RUNTIME_SUBDIRECTORY RUNTIME_APPDIRECTORY RUNTIME_WATCH_ROOT LOCAL_CACHE_SIZE_IN_BYTES
NEAR_LIMIT_RATIO CACHE_KEY_PREFIX BACKEND_TYPE STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT
LIMIT_RESPONSE_HEADERS_ENABLED LIMIT_LIMIT_HEADER LIMIT_REMAINING_HEADER LIMIT_RESET_HEADER
HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED REDIS_SOCKET_TYPE REDIS_TYPE REDIS_URL REDIS_POOL_SIZE
REDIS_AUTH REDIS_TLS REDIS_TLS_CLIENT_CERT REDIS_TLS_CLIENT_KEY REDIS_TLS_CACERT
REDIS_TLS_SKIP_HOSTNAME_VERIFICATION REDIS_SENTINEL_AUTH REDIS_HEALTH_CHECK_ACTIVE_CONNECTION
REDIS_TIMEOUT REDIS_PIPELINE_WINDOW SHADOW_MODE QUOTA_MODE MERGE_DOMAIN_CONFIG CONFIG_GRPC_XDS_NODE_ID
CONFIG_GRPC_XDS_NODE_METADATA CONFIG_GRPC_XDS_SERVER_URL CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL
CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS CONFIG_GRPC_XDS_SERVER_USE_TLS CONFIG_GRPC_XDS_CLIENT_TLS_CERT
CONFIG_GRPC_XDS_CLIENT_TLS_KEY CONFIG_GRPC_XDS_SERVER_TLS_CACERT CONFIG_GRPC_XDS_SERVER_TLS_SAN
XDS_CLIENT_BACKOFF_INITIAL_INTERVAL XDS_CLIENT_BACKOFF_MAX_INTERVAL XDS_CLIENT_BACKOFF_RANDOM_FACTOR
XDS_CLIENT_BACKOFF_JITTER XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES`) {
		accepted[v] = true
	}
}

// offByDefault are switches of what this server does not do: set to
// false (or DISABLE_STATS to true) they ask for nothing and are not
// reported.
var offByDefault = map[string]string{
	"USE_STATSD": "false", "USE_DOG_STATSD": "false", "TRACING_ENABLED": "false",
	"REDIS_PERSECOND": "false", "RESPONSE_DYNAMIC_METADATA": "false", "DISABLE_STATS": "true",
	"RUNTIME_IGNOREDOTFILES": "true", // dot files are never read here
}

// LoadSettings reads the settings from the environment through lookup
// (os.LookupEnv). It refuses a value it cannot read, and a setting it
// cannot honour without changing what is asked (BACKEND_TYPE other than
// redis, GRPC_CLIENT_TLS_SAN).
func LoadSettings(lookup func(string) (string, bool)) (Settings, error) {
	r := envReader{lookup: lookup}
	s := Settings{
		Host: r.str("HOST", "0.0.0.0"), Port: r.int("PORT", 8080),
		DebugHost: r.str("DEBUG_HOST", "0.0.0.0"), DebugPort: r.int("DEBUG_PORT", 6070),
		GRPCHost: r.str("GRPC_HOST", "0.0.0.0"), GRPCPort: r.int("GRPC_PORT", 8081), GRPCUDS: r.str("GRPC_UDS", ""),
		GRPCMaxAge: r.duration("GRPC_MAX_CONNECTION_AGE", 24*time.Hour), GRPCGrace: r.duration("GRPC_MAX_CONNECTION_AGE_GRACE", time.Hour),
		GRPCTLS: r.bool("GRPC_SERVER_USE_TLS", false), GRPCCert: r.str("GRPC_SERVER_TLS_CERT", ""),
		GRPCKey: r.str("GRPC_SERVER_TLS_KEY", ""), GRPCCACert: r.str("GRPC_CLIENT_TLS_CACERT", ""),
		LogLevel: r.str("LOG_LEVEL", "WARN"), LogFormat: r.str("LOG_FORMAT", "text"),
		RuntimeRoot: r.str("RUNTIME_ROOT", "/srv/runtime_data/current"), RuntimeSubdir: r.str("RUNTIME_SUBDIRECTORY", ""),
		RuntimeAppDir: r.str("RUNTIME_APPDIRECTORY", "config"), MergeDomains: r.bool("MERGE_DOMAIN_CONFIG", false),
		Prometheus: r.bool("USE_PROMETHEUS", false), PrometheusAddr: r.str("PROMETHEUS_ADDR", ":9090"),
		PrometheusPath:  r.str("PROMETHEUS_PATH", "/metrics"),
		LocalCacheBytes: r.int("LOCAL_CACHE_SIZE_IN_BYTES", 0), NearLimitRatio: r.float32("NEAR_LIMIT_RATIO", 0.8),
		CacheKeyPrefix: r.str("CACHE_KEY_PREFIX", ""),
		Headers:        r.bool("LIMIT_RESPONSE_HEADERS_ENABLED", false), LimitHeader: r.str("LIMIT_LIMIT_HEADER", "RateLimit-Limit"),
		RemainingHeader: r.str("LIMIT_REMAINING_HEADER", "RateLimit-Remaining"), ResetHeader: r.str("LIMIT_RESET_HEADER", "RateLimit-Reset"),
		ShadowMode: r.bool("SHADOW_MODE", false), QuotaMode: r.bool("QUOTA_MODE", false),
		RedisSocketType: strings.ToLower(r.str("REDIS_SOCKET_TYPE", "unix")), RedisType: strings.ToLower(r.str("REDIS_TYPE", "SINGLE")),
		RedisURL: r.str("REDIS_URL", "/var/run/nutcracker/ratelimit.sock"), RedisPoolSize: r.int("REDIS_POOL_SIZE", 10),
		RedisAuth: r.str("REDIS_AUTH", ""), RedisSentinelAuth: r.str("REDIS_SENTINEL_AUTH", ""),
		RedisTLS: r.bool("REDIS_TLS", false), RedisTLSCert: r.str("REDIS_TLS_CLIENT_CERT", ""),
		RedisTLSKey: r.str("REDIS_TLS_CLIENT_KEY", ""), RedisTLSCACert: r.str("REDIS_TLS_CACERT", ""),
		RedisTLSSkipHost: r.bool("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", false),
		RedisTimeout:     r.duration("REDIS_TIMEOUT", 10*time.Second), RedisHealthCheck: r.bool("REDIS_HEALTH_CHECK_ACTIVE_CONNECTION", false),
		OnRedisFailure: r.str("REDLIMIT_ON_REDIS_FAILURE", "error"),
		AutoPipeline:   r.bool("REDLIMIT_AUTOPIPELINE", true), PipelineWindow: r.duration("REDIS_PIPELINE_WINDOW", 0),
	}
	r.bool("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", false)                   // checked, no effect: a denial never counts
	r.bool("RUNTIME_WATCH_ROOT", true)                                         // checked, no effect: changes are always watched
	r.duration("CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", 3*time.Second) // checked, no effect (none there either): XDS_CLIENT_BACKOFF_* space reconnections
	s.ConfigType = strings.ToUpper(r.str("CONFIG_TYPE", "FILE"))
	switch s.ConfigType {
	case "FILE", "GRPC_XDS_SOTW":
	default:
		r.fail("CONFIG_TYPE", s.ConfigType, "want FILE or GRPC_XDS_SOTW")
	}
	readXDS(&r, &s)
	if v := r.str("BACKEND_TYPE", "redis"); !strings.EqualFold(v, "redis") {
		r.fail("BACKEND_TYPE", v, "only redis is supported")
	}
	if v, ok := lookup("GRPC_CLIENT_TLS_SAN"); ok && v != "" {
		r.fail("GRPC_CLIENT_TLS_SAN", v, "checking a client certificate's SAN is not supported; refusing to start without the check")
	}
	switch s.RedisType {
	case "single", "cluster", "sentinel":
	default:
		r.fail("REDIS_TYPE", s.RedisType, "want single, cluster or sentinel")
	}
	switch s.RedisSocketType {
	case "unix", "tcp":
	default:
		r.fail("REDIS_SOCKET_TYPE", s.RedisSocketType, "want unix or tcp")
	}
	switch strings.ToLower(s.LogFormat) {
	case "text", "json":
	default:
		r.fail("LOG_FORMAT", s.LogFormat, "want text or json")
	}
	if s.LocalCacheBytes < 0 {
		r.fail("LOCAL_CACHE_SIZE_IN_BYTES", strconv.Itoa(s.LocalCacheBytes), "want 0 (off) or more")
	}
	if s.RedisTimeout < 0 {
		r.fail("REDIS_TIMEOUT", s.RedisTimeout.String(), "want 0 (none) or a positive duration")
	}
	if r.err != nil {
		return Settings{}, r.err
	}
	for _, v := range referenceVariables {
		val, ok := lookup(v)
		if ok && !accepted[v] && offByDefault[v] != strings.ToLower(val) {
			s.Ignored = append(s.Ignored, v)
		}
	}
	sort.Strings(s.Ignored)
	return s, nil
}

// denyCacheEntries turns LOCAL_CACHE_SIZE_IN_BYTES into deny cache
// entries: one per 256 bytes, about what an entry with its key and map
// slot takes.
func (s Settings) denyCacheEntries() int { return s.LocalCacheBytes / 256 }

// readXDS reads the xDS client's settings, as the reference names them
// and with its defaults.
func readXDS(r *envReader, s *Settings) {
	s.XDSServerURL = r.str("CONFIG_GRPC_XDS_SERVER_URL", "localhost:18000")
	s.XDSNodeID = r.str("CONFIG_GRPC_XDS_NODE_ID", "default")
	s.XDSNodeMetadata = r.pairs("CONFIG_GRPC_XDS_NODE_METADATA", "=")
	s.XDSHeaders = r.pairs("CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", ":")
	s.XDSTLS = r.bool("CONFIG_GRPC_XDS_SERVER_USE_TLS", false)
	s.XDSCert, s.XDSKey = r.str("CONFIG_GRPC_XDS_CLIENT_TLS_CERT", ""), r.str("CONFIG_GRPC_XDS_CLIENT_TLS_KEY", "")
	s.XDSCACert, s.XDSServerName = r.str("CONFIG_GRPC_XDS_SERVER_TLS_CACERT", ""), r.str("CONFIG_GRPC_XDS_SERVER_TLS_SAN", "")
	s.XDSMaxMsgSize = r.int("XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", 0)
	s.XDSBackoffInitial = r.duration("XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", 10*time.Second)
	s.XDSBackoffMax = r.duration("XDS_CLIENT_BACKOFF_MAX_INTERVAL", 60*time.Second)
	s.XDSBackoffRandom = float64(r.float32("XDS_CLIENT_BACKOFF_RANDOM_FACTOR", 0.5))
	s.XDSBackoffJitter = r.bool("XDS_CLIENT_BACKOFF_JITTER", true)
	s.ForceStart = r.bool("FORCE_START_WITHOUT_INITIAL_CONFIG", false)
	s.HealthyWithConfig = r.bool("HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", false)
	switch {
	case s.XDSBackoffInitial <= 0:
		r.fail("XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", s.XDSBackoffInitial.String(), "want a positive duration")
	case s.XDSBackoffMax < s.XDSBackoffInitial:
		r.fail("XDS_CLIENT_BACKOFF_MAX_INTERVAL", s.XDSBackoffMax.String(), "want at least XDS_CLIENT_BACKOFF_INITIAL_INTERVAL")
	case !(s.XDSBackoffRandom >= 0 && s.XDSBackoffRandom <= 1):
		r.fail("XDS_CLIENT_BACKOFF_RANDOM_FACTOR", fmt.Sprint(s.XDSBackoffRandom), "want 0 to 1")
	case s.XDSMaxMsgSize < 0:
		r.fail("XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", strconv.Itoa(s.XDSMaxMsgSize), "want 0 (gRPC's default) or more")
	case s.XDSTLS && (s.XDSCert == "") != (s.XDSKey == ""):
		r.fail("CONFIG_GRPC_XDS_CLIENT_TLS_CERT", s.XDSCert, "give both CONFIG_GRPC_XDS_CLIENT_TLS_CERT and CONFIG_GRPC_XDS_CLIENT_TLS_KEY, or neither")
	}
}

type envReader struct {
	lookup func(string) (string, bool)
	err    error
}

func (r *envReader) fail(name, value, why string) {
	if r.err == nil {
		r.err = fmt.Errorf("%s=%s: %s", name, value, why)
	}
}

// get is a variable's value; a variable set to "" reads as its type's
// zero value, not its default, as the reference's envconfig reads it.
func (r *envReader) get(name string) (v string, set bool) {
	v, set = r.lookup(name)
	return v, set
}

func (r *envReader) str(name, def string) string {
	if v, ok := r.get(name); ok {
		return v
	}
	return def
}

// pairs reads "k1<sep>v1,k2<sep>v2"; an item without sep is refused.
func (r *envReader) pairs(name, sep string) map[string]string {
	v, _ := r.get(name)
	m := map[string]string{}
	for _, item := range strings.Split(v, ",") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		k, val, ok := strings.Cut(item, sep)
		if !ok {
			r.fail(name, v, fmt.Sprintf("the item %q has no %q (want k1%sv1,k2%sv2)", item, sep, sep, sep))
		}
		m[k] = val
	}
	return m
}

func (r *envReader) int(name string, def int) int {
	v, ok := r.get(name)
	if !ok {
		return def
	}
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		r.fail(name, v, "not an integer")
	}
	return n
}

func (r *envReader) bool(name string, def bool) bool {
	v, ok := r.get(name)
	if !ok {
		return def
	}
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail(name, v, "not a boolean")
	}
	return b
}

func (r *envReader) float32(name string, def float32) float32 {
	v, ok := r.get(name)
	if !ok {
		return def
	}
	if v == "" {
		return 0
	}
	f, err := strconv.ParseFloat(v, 32)
	if err != nil {
		r.fail(name, v, "not a number")
	}
	return float32(f)
}

func (r *envReader) duration(name string, def time.Duration) time.Duration {
	v, ok := r.get(name)
	if !ok {
		return def
	}
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		r.fail(name, v, "not a duration (such as 10s)")
	}
	return d
}
