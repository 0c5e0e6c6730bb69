// Package pricing is what a decision costs in credits (spec §8). It is its
// own package, apart from the canonical form it prices, so a change of
// price is a change here and nowhere else, and the canonical form stays
// about what a request means.
package pricing

// billingUnit is the number of request bytes one credit covers per
// question (spec §8).
const billingUnit = 4096

// Cost is the credit price of a decision: questions × ⌈pricedLen / 4096⌉
// (spec §8, billing on the parsed canonical request of §4.1 rule 2).
// pricedLen is shared/canon's Encoder.PricedLen: the canonical form's
// length with each number at its shortest spelling. So reformatting a body
// never changes its price, and no body costs more than its own bytes
// would (a 64 KiB body at most 16 credits a question), the default model's
// member aside when the request names none (schema/usage.md).
// No questions or no text costs 0, never less.
func Cost(questions, pricedLen int) int64 {
	if questions <= 0 || pricedLen <= 0 {
		return 0
	}
	return int64(questions) * int64((pricedLen+billingUnit-1)/billingUnit)
}
