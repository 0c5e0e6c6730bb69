package abi

import (
	"reflect"
	"testing"
)

// TestAwaitAndResumeRoundTrip: an Await leaves the guest in a Response and
// its result comes back in the Request, each decoded to what was encoded.
func TestAwaitAndResumeRoundTrip(t *testing.T) {
	resp := Response{Await: &Await{State: []byte{1, 2}, Fetch: &FetchRequest{Method: "POST", URL: "https://u.test/v1/service", Body: []byte("{}"), Credential: CredentialUpstream}}}
	got, err := DecodeResponse(AppendResponse(nil, &resp))
	if err != nil || !reflect.DeepEqual(got, resp) {
		t.Fatalf("response: %v\n got %+v\nwant %+v", err, got.Await, resp.Await)
	}
	req := Request{Method: "POST", Path: "/v1/service", Resume: &Resume{State: []byte{1, 2}, AI: &AIResponse{Status: 200, Output: []byte(`{"result":1}`)}}}
	back, err := DecodeRequest(AppendRequest(nil, &req))
	if err != nil || !reflect.DeepEqual(back, req) {
		t.Fatalf("request: %v\n got %+v\nwant %+v", err, back.Resume, req.Resume)
	}
	plain, err := DecodeRequest(AppendRequest(nil, &Request{Method: "GET"}))
	if err != nil || plain.Resume != nil {
		t.Fatalf("a fresh request decoded with a Resume: %v %+v", err, plain.Resume)
	}
}

// TestUnknownCallKindIsRefused: a kind byte this version does not know is a
// corrupt message, not an empty call.
func TestUnknownCallKindIsRefused(t *testing.T) {
	b := AppendResponse(nil, &Response{Status: 200})
	b[len(b)-1] = 9
	if _, err := DecodeResponse(append(b, 0, 0, 0, 0)); err == nil {
		t.Fatal("decoded a Response with call kind 9")
	}
}
