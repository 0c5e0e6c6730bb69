// Command decide asks one question through the Go client; README.md shows
// it, and examples_test.go runs it against a real gateway.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"decisiongateway/client"
)

func main() {
	base := os.Getenv("DECISION_BASE_URL")
	if base == "" {
		base = "http://127.0.0.1:8787/v1" // the base URL includes /v1
	}
	c, err := client.New(base, os.Getenv("DECISION_API_KEY"))
	if err != nil {
		log.Fatal(err)
	}
	// The deadline bounds the whole call: every attempt and every wait.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := c.Decide(ctx, client.Request{
		State: "a ripe red apple",
		Questions: map[string]client.Question{
			"fruit": {Type: "choice", Criteria: map[string]string{"apple": "an apple", "pear": "a pear"}},
		},
	})
	if e, ok := err.(*client.Error); ok && e.Uncertain {
		log.Fatalf("outcome unknown; later: c.Recover(ctx, %q, sameRequest)", e.IdempotencyKey)
	} else if err != nil {
		log.Fatal(err) // e.Code is the gateway's X-Service-Error-Code
	}
	credits := "unknown" // no X-Service-Credits is not zero
	if d.Credits != nil {
		credits = fmt.Sprint(*d.Credits)
	}
	fmt.Println("fruit:", d.Answers["fruit"].Choice, "credits:", credits, "request:", d.RequestID)
}
