// Package keys is the console's API key management (spec §3.2, §4.4–4.6):
// GET, POST and DELETE /api/service/keys, for a signed-in session only.
package keys

import (
	"strings"

	"decisiongateway/console/gate"
	"decisiongateway/shared/abi"
	"decisiongateway/shared/accounts"
	"decisiongateway/shared/contract"
	"decisiongateway/shared/jsonw"
	"decisiongateway/shared/platform"
	"decisiongateway/shared/policy"
)

const pathPrefix = "/api/service/keys"

// Handle lists, creates or revokes the signed-in account's keys. Writes
// need the exact console Origin as well as the session.
func Handle(env *platform.Env, req *abi.Request) abi.Response {
	g, resp, ok := gate.Check(env, req, req.Method != "GET" && req.Method != "HEAD")
	if !ok {
		return resp
	}
	switch req.Method {
	case "POST":
		return create(&g, req)
	case "DELETE":
		return revoke(&g, strings.TrimPrefix(req.Path, pathPrefix+"/"))
	}
	return list(&g)
}

func list(g *gate.Gate) abi.Response {
	ks, err := g.Store.ListKeys(g.Session.AccountID)
	if err != nil {
		return gate.Failure(err)
	}
	var w jsonw.Writer
	w.Open('{')
	w.Key("keys")
	w.Open('[')
	for i := range ks {
		writeKey(&w, &ks[i], "")
	}
	w.Close(']')
	w.FieldInt("maxActive", accounts.MaxActiveKeys)
	w.Close('}')
	return policy.JSON(200, w.B)
}

// create answers 201 with the key and its secret: the only time the secret
// is ever shown (the ledger keeps its hash).
func create(g *gate.Gate, req *abi.Request) abi.Response {
	name, ok := gate.StringField(req.Body, "name")
	if !ok {
		return policy.Error(contract.InvalidRequest, `send a JSON object {"name": <string>}`)
	}
	k, secret, err := g.Store.CreateKey(g.Session.AccountID, name)
	if err != nil {
		return gate.Failure(err)
	}
	var w jsonw.Writer
	writeKey(&w, &k, secret)
	return policy.JSON(201, w.B)
}

func revoke(g *gate.Gate, id string) abi.Response {
	if err := g.Store.RevokeKey(g.Session.AccountID, id); err != nil {
		return gate.Failure(err)
	}
	var w jsonw.Writer
	w.Open('{')
	w.FieldString("id", id)
	w.FieldBool("revoked", true)
	w.Close('}')
	return policy.JSON(200, w.B)
}

// writeKey writes one key object. secret is written only when non-empty,
// i.e. in the answer to its creation.
func writeKey(w *jsonw.Writer, k *accounts.Key, secret string) {
	w.Open('{')
	w.FieldString("id", k.ID)
	w.FieldString("name", k.Name)
	w.FieldString("prefix", k.Prefix)
	w.FieldInt("createdAt", k.CreatedAt)
	w.Key("lastUsedAt")
	if k.LastUsedAt == 0 {
		w.Null()
	} else {
		w.Int(k.LastUsedAt)
	}
	if secret != "" {
		w.FieldString("secret", secret)
	}
	w.Close('}')
}
