package canon

// InsertModel appends to dst the request text body with the member
// "model":"<model>" inserted at offsetAfterBrace, the offset just after the
// root '{' that validate.Request.InsertAt reports. Every byte of body is
// copied unchanged: numbers keep their exact text, formatting and key order
// stay as the client wrote them (spec §2.2 rule 3). A comma follows the new
// member unless the root object has no members.
//
// body must be the validated request and must have no model member; the
// result is then a valid request whose model is model.
func InsertModel(dst, body []byte, offsetAfterBrace int, model string) []byte {
	dst = append(dst, body[:offsetAfterBrace]...)
	dst = append(dst, `"model":`...)
	dst = appendString(dst, model)
	rest := body[offsetAfterBrace:]
	i := 0
	for i < len(rest) && (rest[i] == ' ' || rest[i] == '\t' || rest[i] == '\n' || rest[i] == '\r') {
		i++
	}
	if i < len(rest) && rest[i] != '}' {
		dst = append(dst, ',')
	}
	return append(dst, rest...)
}
