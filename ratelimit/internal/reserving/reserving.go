// Package reserving lets httplimit ask whether ratelimit can reserve with
// a rule, without a name in ratelimit's face.
package reserving

// Check returns ratelimit's error for a rule whose algorithms cannot
// settle a reservation, known before any request; nil when Reserve may
// take it. ratelimit sets it.
var Check func(rule any) error
