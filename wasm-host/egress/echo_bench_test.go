package egress

import (
	"strconv"
	"strings"
	"testing"

	"decisiongateway/shared/abi"
)

// BenchmarkEchoes is the credential check of one clean answer, a decision
// of each payload size, for keys whose search anchor is a sign, a digit,
// or (letters only) the first letter in either case:
//
//	go test -run '^$' -bench Echoes ./wasm-host/egress
func BenchmarkEchoes(b *testing.B) {
	hs := abi.Headers{{Name: "content-type", Value: "application/json"}, {Name: "x-vendor-request-id", Value: "vrid-123456"}}
	for _, key := range []string{"sk-live/echo+me==", "abcdef0123456789", "Skeletonkeyonlyletters"} {
		for _, size := range []int{300, 4096, 61440} {
			answer := `"q":{"type":"choice","choice":"a","probabilities":{"a":0.25,"b":0.75},"confidence":0.5},`
			body := []byte(`{"model":"m","answers":{` + strings.Repeat(answer, size/len(answer)) + `}}`)
			forms := echoForms(key) // made once per credential, by New
			b.Run(key[:4]+"/"+strconv.Itoa(size), func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				for range b.N {
					if echoes(forms, body, hs) {
						b.Fatal("echo")
					}
				}
			})
		}
	}
}
