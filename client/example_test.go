package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"decisiongateway/client"
)

// The examples run against a gateway process TestMain starts
// (main_test.go); DECISION_BASE_URL is its URL with /v1.

func ExampleClient_Decide() {
	c, err := client.New(os.Getenv("DECISION_BASE_URL"), os.Getenv("DECISION_API_KEY"))
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := client.Request{
		State: "a ripe red apple",
		Questions: map[string]client.Question{
			"fruit":   {Type: "choice", Criteria: map[string]string{"apple": "an apple", "pear": "a pear"}},
			"ripe":    {Type: "noul"},
			"quality": {Type: "score", Criteria: []string{"poor", "fair", "good"}},
		},
	}
	d, err := c.Decide(ctx, req)
	var e *client.Error
	if errors.As(err, &e) && e.Uncertain {
		// The deadline passed with an attempt in flight: the same key and
		// request learn its outcome later, without a second charge.
		d, err = c.Recover(context.Background(), e.IdempotencyKey, req)
	}
	if errors.As(err, &e) {
		log.Fatalf("%d %s from %s", e.Status, e.Code, e.Source) // classified by headers
	}
	fmt.Println(d.Answers["fruit"].Choice, *d.Answers["ripe"].Noul, *d.Answers["quality"].Score)
	fmt.Println("credits:", *d.Credits, "replayed:", d.Replayed)
	// Output:
	// apple 0.5 1
	// credits: 3 replayed: false
}

func ExampleClient_Models() {
	c, err := client.New(os.Getenv("DECISION_BASE_URL"), os.Getenv("DECISION_API_KEY"))
	if err != nil {
		log.Fatal(err)
	}
	models, err := c.Models(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range models {
		fmt.Println(m.Name)
	}
	// Output:
	// model-x
	// model-y
}
