package validate

import "decisiongateway/shared/contract"

// number checks the grammar of the number at start and that its value lies
// inside the finite float64 range, and returns the offset after it.
func (s *scanner) number(b []byte, start int) int {
	i := start
	if b[i] == '-' {
		i++
	}
	intStart := i
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return s.fail(contract.InvalidJSON, i, "invalid number")
	}
	intEnd, fracStart, fracEnd := i, i, i
	if i < len(b) && b[i] == '.' {
		i++
		fracStart = i
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		if i == fracStart {
			return s.fail(contract.InvalidJSON, i, "invalid number: no digit after '.'")
		}
		fracEnd = i
	}
	expStart, expEnd, expNeg := i, i, false
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			expNeg = b[i] == '-'
			i++
		}
		expStart = i
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		if i == expStart {
			return s.fail(contract.InvalidJSON, i, "invalid number: no digit in exponent")
		}
		expEnd = i
	}
	// Without an exponent fewer than 309 integer digits are always finite.
	if (expEnd > expStart || intEnd-intStart >= len(overflowDigits)) &&
		!finite(b[intStart:intEnd], b[fracStart:fracEnd], b[expStart:expEnd], expNeg) {
		return s.fail(contract.NumberOutOfRange, start, "number outside the finite float64 range")
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// overflowDigits are the significant digits of 2^1024 - 2^970, the midpoint
// between math.MaxFloat64 and 2^1024. Rounding to nearest-even takes that
// midpoint and everything above it to infinity, so it is the smallest
// magnitude strconv.ParseFloat rejects; its decimal exponent is 309.
const overflowDigits = "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792"

// finite reports whether the number with the given integer, fraction and
// exponent digits rounds to a finite float64. It works on the digits alone,
// so a 2,000-digit integer costs no allocation and no float conversion, and
// large integers and tiny exponents keep their text (spec §2.2 rule 3).
// Magnitudes below the smallest subnormal round to zero and are finite.
func finite(intDigits, fracDigits, expDigits []byte, expNeg bool) bool {
	// Write the value as 0.d1d2… × 10^adj with d1 != 0.
	var adj int
	if intDigits[0] != '0' {
		adj = len(intDigits) // the grammar allows no leading zero here
	} else {
		lead := 0
		for lead < len(fracDigits) && fracDigits[lead] == '0' {
			lead++
		}
		if lead == len(fracDigits) {
			return true // the value is zero
		}
		adj = -lead
	}
	// int64 because int is 32 bits under TinyGo on wasm; the saturation
	// bound is far beyond what the digits of any body can offset.
	var exp int64
	for _, c := range expDigits {
		exp = exp*10 + int64(c-'0')
		if exp > 1e15 {
			exp = 1e15
		}
	}
	if expNeg {
		exp = -exp
	}
	switch a := int64(adj) + exp; {
	case a < int64(len(overflowDigits)):
		return true
	case a > int64(len(overflowDigits)):
		return false
	}
	// Same decimal exponent as the threshold: compare digit by digit.
	k := 0
	for _, part := range [2][]byte{intDigits, fracDigits} {
		for _, c := range part {
			if k == 0 && c == '0' {
				continue // leading zero, not significant
			}
			if k == len(overflowDigits) {
				return false // the threshold is a prefix: value ≥ threshold
			}
			if c != overflowDigits[k] {
				return c < overflowDigits[k]
			}
			k++
		}
	}
	return k < len(overflowDigits)
}
