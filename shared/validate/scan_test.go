package validate

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"decisiongateway/shared/contract"
)

// TestNumberRangeAgreesWithParseFloat checks the digit-only range test
// against strconv.ParseFloat (the definition of "rounds to a finite
// float64") on numbers crowded around the overflow boundary.
func TestNumberRangeAgreesWithParseFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const boundary = "1797693134862315807937289714053034150799341327100378269361737789804449682927647509466490179775872070963302864166928879109465555478519404026306574886715058206819089020007083836762738548458177115317644757302700698555713669596228429148198608349364752927190741684443655107043427115596995080930428801779041744977920"
	nums := []string{"0", "-0", "1e308", "1e309", "1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308", "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792", "1e-400", "4.9e-324", "2e-324"}
	for range 3000 {
		// A prefix of the boundary digits, perturbed in its last digit,
		// with an exponent that puts it near 10^309.
		n := 1 + r.IntN(len(boundary))
		d := []byte(boundary[:n])
		d[n-1] = byte('0' + r.IntN(10))
		if d[0] == '0' {
			d[0] = '1'
		}
		var s string
		switch r.IntN(3) {
		case 0: // integer digits with exponent
			s = string(d) + "e" + strconv.Itoa(309-n+r.IntN(3)-1)
		case 1: // d.ddd e308
			s = string(d[:1]) + "." + string(d[1:]) + "e" + strconv.Itoa(307+r.IntN(3))
			if n == 1 {
				s = string(d) + "e308"
			}
		default: // 0.000ddd with a larger exponent
			s = "0." + strings.Repeat("0", r.IntN(4)) + string(d) + "E+" + strconv.Itoa(309+r.IntN(6))
		}
		if r.IntN(2) == 0 {
			s = "-" + s
		}
		nums = append(nums, s)
	}
	for _, s := range nums {
		_, err := strconv.ParseFloat(s, 64)
		want := err == nil // ParseFloat reports overflow only; underflow is 0, nil
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			t.Fatalf("bad test number %s: %v", s, err)
		}
		var sc scanner
		end := sc.number([]byte(s), 0)
		se := sc.err
		got := se.code == ""
		if se.code != "" && se.code != contract.NumberOutOfRange {
			t.Fatalf("%s: %+v", s, se)
		}
		if got && end != len(s) {
			t.Fatalf("%s: scanned %d bytes", s, end)
		}
		if got != want {
			t.Errorf("%s: finite=%v, ParseFloat says %v (%v)", s, got, want, err)
		}
	}
}
