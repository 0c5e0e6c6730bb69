package canon

import "strconv"

// appendNumber appends the canonical text of the JSON number text num, or
// reports false if num is not a JSON number. short is the length of the
// number's shortest JSON spelling (shortestLen), what a decision's price
// counts for it.
//
// The canonical text is a function of the exact decimal value only, computed
// from the digits, never through float64: 1e2, 100, 100.0 and 1.00e+2 all
// become 100, while 0.1 and 0.1000000000000000055511151231257827 (the same
// float64) stay different. Negative zero becomes 0: JSON numbers are
// decimal values and -0 equals 0 as one, so the two never make an
// idempotency conflict. The layout is the one of ECMAScript's
// Number.prototype.toString (as used by RFC 8785), applied to the exact
// digits: plain notation while the decimal point is at most 21 digits to the
// right of the first digit and at most 6 zeros follow "0.", exponent
// notation (1.5e+300, 1e-7) otherwise.
func appendNumber(dst []byte, num string) (_ []byte, short int, ok bool) {
	i := 0
	neg := false
	if i < len(num) && num[i] == '-' {
		neg = true
		i++
	}
	intStart := i
	for i < len(num) && isDigit(num[i]) {
		i++
	}
	intDigits := num[intStart:i]
	if len(intDigits) == 0 || len(intDigits) > 1 && intDigits[0] == '0' {
		return dst, 0, false
	}
	var fracDigits string
	if i < len(num) && num[i] == '.' {
		i++
		s := i
		for i < len(num) && isDigit(num[i]) {
			i++
		}
		fracDigits = num[s:i]
		if fracDigits == "" {
			return dst, 0, false
		}
	}
	expNeg := false
	var expDigits string
	if i < len(num) && (num[i] == 'e' || num[i] == 'E') {
		i++
		if i < len(num) && (num[i] == '+' || num[i] == '-') {
			expNeg = num[i] == '-'
			i++
		}
		s := i
		for i < len(num) && isDigit(num[i]) {
			i++
		}
		expDigits = num[s:i]
		if expDigits == "" {
			return dst, 0, false
		}
	}
	if i != len(num) {
		return dst, 0, false
	}

	// The significant digits are intDigits+fracDigits without leading and
	// trailing zeros; the value is digits × 10^(exp - len(fracDigits) +
	// trailing zeros removed). Work on index ranges of the concatenation.
	all := len(intDigits) + len(fracDigits)
	at := func(k int) byte {
		if k < len(intDigits) {
			return intDigits[k]
		}
		return fracDigits[k-len(intDigits)]
	}
	first := 0
	for first < all && at(first) == '0' {
		first++
	}
	if first == all {
		return append(dst, '0'), 1, true // zero, whatever its sign or exponent
	}
	last := all
	for at(last-1) == '0' {
		last--
	}
	k := last - first
	// n is the position of the decimal point relative to the first
	// significant digit: value = 0.d1…dk × 10^n. shift is the part of n
	// that does not come from the written exponent; |shift| ≤ len(num).
	shift := len(intDigits) - first

	if neg {
		dst = append(dst, '-')
	}
	n, small := smallExponent(expDigits, expNeg, shift)
	start := len(dst)
	digits := func(dst []byte, from, to int) []byte {
		for j := from; j < to; j++ {
			dst = append(dst, at(first+j))
		}
		return dst
	}
	switch {
	case small && k <= n && n <= 21:
		dst = digits(dst, 0, k)
		for j := k; j < n; j++ {
			dst = append(dst, '0')
		}
	case small && 0 < n && n <= 21:
		dst = digits(dst, 0, n)
		dst = append(dst, '.')
		dst = digits(dst, n, k)
	case small && -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for j := n; j < 0; j++ {
			dst = append(dst, '0')
		}
		dst = digits(dst, 0, k)
	default:
		dst = digits(dst, 0, 1)
		if k > 1 {
			dst = append(dst, '.')
			dst = digits(dst, 1, k)
		}
		dst = append(dst, 'e')
		dst = appendExponent(dst, expDigits, expNeg, shift-1)
	}
	short = len(dst) - start
	if small {
		short = shortestLen(neg, int64(k), int64(n)-int64(k))
	}
	// The client's own spelling is one too: with an exponent too long for
	// shortestLen the canonical text may be a byte longer (a '+').
	return dst, min(short, len(num)), true
}

// shortestLen is the length of the shortest JSON spelling of ±D × 10^x,
// where D is an integer of k significant digits (no trailing zero): plain
// notation (1500, 0.0015, 1.5) or a mantissa with an exponent, the point
// after any of D's digits (15e2, 1.5e3; never "+" in the exponent). No way
// of writing the number is shorter, so a price counted with it never
// exceeds what the client's own spelling of the number would.
func shortestLen(neg bool, k, x int64) int {
	best := k + 1 + expLen(x) // D e x
	switch {
	case x >= 0:
		best = min(best, k+x) // D and x zeros
	case k+x > 0:
		best = min(best, k+1) // a point inside D
	default:
		best = min(best, 2-x) // "0.", zeros, D
	}
	if k >= 2 {
		// d.dd…e with the point after p of D's k digits, 1 ≤ p < k: the
		// exponent runs over x+1 … x+k-1; the shortest is the one nearest
		// zero.
		lo, hi := x+1, x+k-1
		e := lo
		switch {
		case hi < 0:
			e = hi
		case lo <= 0:
			e = 0
		}
		best = min(best, k+2+expLen(e))
	}
	if neg {
		best++
	}
	return int(best)
}

// expLen is the length of an exponent's text: its digits, and "-" when
// negative.
func expLen(e int64) int64 {
	n := int64(1)
	if e < 0 {
		n++
		e = -e
	}
	for e >= 10 {
		e /= 10
		n++
	}
	return n
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// maxSmallExpDigits keeps exponent arithmetic inside int64 with room for
// the shift.
const maxSmallExpDigits = 15

// smallExponent returns ±expDigits + shift when the written exponent has at
// most 15 significant digits.
func smallExponent(expDigits string, expNeg bool, shift int) (int, bool) {
	for len(expDigits) > 0 && expDigits[0] == '0' {
		expDigits = expDigits[1:]
	}
	if len(expDigits) > maxSmallExpDigits {
		return 0, false
	}
	e := 0
	for i := 0; i < len(expDigits); i++ {
		e = e*10 + int(expDigits[i]-'0')
	}
	if expNeg {
		e = -e
	}
	return e + shift, true
}

// appendExponent appends the sign and digits of ±expDigits + delta exactly.
// A body may carry an exponent of any length (1e-99999999999999999999 is a
// valid, tiny number that the validator accepts as an underflow), so the
// large case adds delta to the decimal digit string instead of to an
// integer. There |written exponent| ≥ 10^15 > |delta|, so the sign of the
// result is the sign of the written exponent.
func appendExponent(dst []byte, expDigits string, expNeg bool, delta int) []byte {
	if e, ok := smallExponent(expDigits, expNeg, delta); ok {
		if e >= 0 {
			dst = append(dst, '+')
		}
		return strconv.AppendInt(dst, int64(e), 10)
	}
	for expDigits[0] == '0' {
		expDigits = expDigits[1:]
	}
	if expNeg {
		dst = append(dst, '-')
		delta = -delta // -(E) + d = -(E - d)
	} else {
		dst = append(dst, '+')
	}
	// Magnitude E + delta, digit by digit from the right, into the tail of
	// dst; then strip any leading zero a borrow left.
	start := len(dst)
	dst = append(dst, expDigits...)
	carry := delta
	for j := len(dst) - 1; j >= start && carry != 0; j-- {
		d := int(dst[j]-'0') + carry%10
		carry /= 10
		switch {
		case d < 0:
			d += 10
			carry--
		case d > 9:
			d -= 10
			carry++
		}
		dst[j] = byte('0' + d)
	}
	if carry > 0 { // grew by a digit
		dst = append(dst, 0)
		copy(dst[start+1:], dst[start:])
		dst[start] = byte('0' + carry)
	}
	z := start
	for z < len(dst)-1 && dst[z] == '0' {
		z++
	}
	return append(dst[:start], dst[z:]...)
}
