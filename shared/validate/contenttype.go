package validate

import "strings"

// IsJSONContentType reports whether a Content-Type header value announces a
// JSON body: the media type application/json in any letter case, optionally
// followed by parameters. Because the body must be UTF-8 (spec §2.1), a
// charset parameter other than utf-8 is refused rather than ignored; other
// parameters are accepted and ignored. Suffix types such as
// application/merge-patch+json are not the decision request's type.
func IsJSONContentType(v string) bool {
	mt, params, _ := strings.Cut(v, ";")
	if !strings.EqualFold(strings.TrimSpace(mt), "application/json") {
		return false
	}
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		name, val, _ := strings.Cut(p, "=")
		if !strings.EqualFold(strings.TrimSpace(name), "charset") {
			continue
		}
		val = strings.TrimSpace(val)
		if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
			val = val[1 : len(val)-1]
		}
		if !strings.EqualFold(val, "utf-8") && !strings.EqualFold(val, "utf8") {
			return false
		}
	}
	return true
}
