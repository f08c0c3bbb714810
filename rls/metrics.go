package rls

import (
	"math"
	"regexp"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the reference's Prometheus series, named as its statsd
// mapping (src/stats/prom/default_mapper.yaml) names them: per rule, a
// counter of each outcome labelled with the domain and the first two
// parts of the rule's statistics key ("key1", "key2"; key2 is "" for a
// rule one level deep).
type metrics struct {
	totalHits, overLimit, nearLimit, withinLimit, shadowMode, overLimitLocalCache *prometheus.CounterVec
	notFound                                                                      *prometheus.CounterVec
	callErrors                                                                    *prometheus.CounterVec
	configLoadSuccess, configLoadError, globalShadowMode                          prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	labels := []string{"domain", "key1", "key2"}
	vec := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		reg.MustRegister(c)
		return c
	}
	one := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	return &metrics{
		totalHits:           vec("ratelimit_service_rate_limit_total_hits", "Hits asked for, per rule.", labels...),
		overLimit:           vec("ratelimit_service_rate_limit_over_limit", "Hits denied (a denial counts nothing).", labels...),
		nearLimit:           vec("ratelimit_service_rate_limit_near_limit", "Hits admitted past NEAR_LIMIT_RATIO of the limit.", labels...),
		withinLimit:         vec("ratelimit_service_rate_limit_within_limit", "Hits admitted.", labels...),
		shadowMode:          vec("ratelimit_service_rate_limit_shadow_mode", "Hits a shadow_mode rule would have denied.", labels...),
		overLimitLocalCache: vec("ratelimit_service_rate_limit_over_limit_with_local_cache", "Hits the deny cache denied without Redis.", labels...),
		notFound:            vec("ratelimit_service_rate_limit_domain_not_found", "Calls for a domain no file configures.", "domain"),
		callErrors:          vec("ratelimit_service_should_rate_limit_error", "Calls answered with an error.", "err_type"),
		configLoadSuccess:   one("ratelimit_service_config_load_success", "Configurations loaded."),
		configLoadError:     one("ratelimit_service_config_load_error", "Configurations refused (the last good one kept serving)."),
		globalShadowMode:    one("ratelimit_service_global_shadow_mode", "Calls SHADOW_MODE answered OK although a rule denied them."),
	}
}

// observe counts one descriptor's hits as the reference does, except that
// a denial counts nothing, so its hits are all over the limit and none is
// near it.
func (m *metrics) observe(mt *match, o outcome, hits uint64, nearRatio float32) {
	l := statLabels(mt.statKey)
	h := float64(hits)
	m.totalHits.WithLabelValues(l...).Add(h)
	if !o.allowed {
		m.overLimit.WithLabelValues(l...).Add(h)
		if o.cached {
			m.overLimitLocalCache.WithLabelValues(l...).Add(h)
		}
		if mt.rule.ShadowMode {
			m.shadowMode.WithLabelValues(l...).Add(h)
		}
		return
	}
	m.withinLimit.WithLabelValues(l...).Add(h)
	if mt.rule.lim == nil || o.fallback {
		return
	}
	capacity := uint64(mt.rule.lim.burst)
	used := capacity - uint64(min(max(o.remaining, 0), int64(capacity)))
	near := uint64(math.Floor(float64(float32(capacity) * nearRatio)))
	if used > near {
		m.nearLimit.WithLabelValues(l...).Add(float64(min(hits, used-near)))
	}
}

func (m *metrics) domainNotFound(domain string) {
	m.notFound.WithLabelValues(sanitize(domain)).Inc()
}

func (m *metrics) callError(kind string) { m.callErrors.WithLabelValues(kind).Inc() }

var ipv4 = regexp.MustCompile(`\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}`)

// sanitize is the reference's SanitizeStatName: ':' and '|' become '_',
// and so do the dots of an IPv4 address.
func sanitize(s string) string {
	s = strings.NewReplacer(":", "_", "|", "_").Replace(s)
	return ipv4.ReplaceAllStringFunc(s, func(ip string) string { return strings.ReplaceAll(ip, ".", "_") })
}

// statLabels splits a statistics key as the mapping's patterns do: the
// domain, then the next two dot-separated parts.
func statLabels(statKey string) []string {
	parts := strings.SplitN(sanitize(statKey), ".", 4)
	l := []string{"", "", ""}
	copy(l, parts)
	return l
}
