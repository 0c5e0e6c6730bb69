// Package pricing is what a decision costs in credits (spec §8). It is its
// own package, apart from the canonical form it prices, so a change of
// price is a change here and nowhere else, and the canonical form stays
// about what a request means.
package pricing

// billingUnit is the number of canonical bytes one credit covers per
// question (spec §8).
const billingUnit = 4096

// Cost is the credit price of a decision: questions × ⌈canonicalLen / 4096⌉
// (spec §8, billing on the parsed canonical request of §4.1 rule 2; the
// length is of shared/canon's form). Since canonical text has no
// whitespace, reformatting a body never changes its price.
// No questions or no text costs 0, never less.
func Cost(questions, canonicalLen int) int64 {
	if questions <= 0 || canonicalLen <= 0 {
		return 0
	}
	return int64(questions) * int64((canonicalLen+billingUnit-1)/billingUnit)
}
