package ledger

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"decisiongateway/shared/contract"
)

// shape is what the executor must know about one statement before running it.
// It is found by a small lexer rather than a parser: the lexer only has to
// tell strings, comments, quoted names, brackets and keywords apart, which is
// cheap on the hot path and needs no SQL grammar.
type shape struct {
	// rows is set for statements that return rows: SELECT, VALUES, PRAGMA,
	// EXPLAIN, WITH … SELECT, and INSERT/UPDATE/DELETE/REPLACE … RETURNING.
	// They run with Query; all others run with Exec. database/sql offers
	// either the rows or the changes count of a statement, never both.
	rows bool
	// returning is set for a RETURNING statement. SQLite returns one row
	// per changed row, so its row count is its rows-affected count.
	returning bool
	// insert is set for INSERT and REPLACE, the statements whose last
	// insert rowid means something.
	insert bool
	// readOnly is set for statements that cannot write (SELECT, VALUES,
	// EXPLAIN, WITH … SELECT): safe to run again when the connection broke
	// before the answer arrived.
	readOnly bool
	// dml is set for INSERT, UPDATE, DELETE and REPLACE (with or without
	// WITH or RETURNING): the statements whose rows-affected count is
	// SQLite's changes(), which a translated batch tests on the server.
	dml bool
	// params is the number of bare ? placeholders.
	params int
}

// errShape is wrapped by every rejection, so callers can tell a malformed
// batch from a database failure.
var errShape = errors.New("malformed statement")

// classify inspects one step's SQL. It rejects text that is empty, holds more
// than one statement, controls the transaction (the executor owns it: a
// step's COMMIT or ROLLBACK would break the batch's atomicity), or uses
// numbered or named parameters (the ABI has positional ? only, and the two
// drivers bind the others differently).
func classify(sql string) (shape, error) {
	var (
		s        shape
		lx       = lexer{src: sql}
		first    string // first keyword of the statement
		verb     string // the statement's own verb, past any WITH clause
		depth    int    // bracket depth
		trigger  bool   // inside CREATE [TEMP] TRIGGER
		body     int    // depth of BEGIN … END (and CASE … END) in a trigger
		ended    bool   // a top-level ; was seen
		position int    // index of the current top-level word
		second   string // second top-level word, to spot CREATE TEMP TRIGGER
	)
	for {
		tok, text, err := lx.next()
		if err != nil {
			return shape{}, fmt.Errorf("%w: %v", errShape, err)
		}
		if tok == tokEOF {
			break
		}
		if ended && tok != tokSemicolon {
			return shape{}, fmt.Errorf("%w: more than one statement in a step", errShape)
		}
		switch tok {
		case tokSemicolon:
			if trigger && body > 0 {
				continue
			}
			if first != "" {
				ended = true
			}
		case tokOpen:
			depth++
		case tokClose:
			depth--
		case tokParam:
			s.params++
		case tokNamedParam:
			return shape{}, fmt.Errorf("%w: parameter %s: use positional ? parameters", errShape, text)
		case tokWord:
			w := strings.ToUpper(text)
			if first == "" {
				first = w
			}
			if trigger {
				switch w {
				case "BEGIN", "CASE":
					if w == "BEGIN" || body > 0 {
						body++
					}
				case "END":
					if body > 0 {
						body--
					}
				}
			}
			if depth == 0 && !trigger {
				position++
				if position == 2 {
					second = w
				}
				if first == "CREATE" && w == "TRIGGER" && (position == 2 ||
					position == 3 && (second == "TEMP" || second == "TEMPORARY")) {
					trigger = true
				}
				if verb == "" && slices.Contains(shapeWords.Verbs, w) {
					verb = w
				}
				if w == "RETURNING" && verb != "" && !slices.Contains(shapeWords.RowVerbs, verb) {
					s.returning = true
				}
			}
		}
	}
	switch {
	case first == "":
		return shape{}, fmt.Errorf("%w: empty statement", errShape)
	case slices.Contains(shapeWords.Transaction, first):
		return shape{}, fmt.Errorf("%w: %s: the executor owns the transaction", errShape, first)
	case first == "WITH":
		s.rows = slices.Contains(shapeWords.RowVerbs, verb)
		s.readOnly = s.rows
	default:
		// PRAGMA returns rows and may write: PRAGMA user_version = 2.
		s.rows = slices.Contains(shapeWords.RowsFirst, first)
		s.readOnly = slices.Contains(shapeWords.ReadOnlyFirst, first)
	}
	if s.returning {
		s.rows = true
	}
	s.insert = slices.Contains(shapeWords.InsertVerbs, verb)
	if first == "WITH" || first == verb {
		// INSERT, UPDATE, DELETE, REPLACE, with or without WITH.
		s.dml = verb != "" && !slices.Contains(shapeWords.RowVerbs, verb)
	}
	return s, nil
}

// shapeWords are the words both hosts' executors go by (shared/contract;
// wrangler-compat/src/sqlshape.js reads the generated copy).
var shapeWords = &contract.SQLShape

type token uint8

const (
	tokEOF token = iota
	tokWord
	tokOther // literals, operators, quoted names
	tokOpen
	tokClose
	tokSemicolon
	tokParam      // bare ?
	tokNamedParam // ?NNN, :name, @name, $name
)

// lexer splits SQL into the few token classes classify needs. Comments and
// whitespace are skipped; strings and quoted identifiers are single tokens, so
// a keyword or ; inside them is never seen.
type lexer struct {
	src string
	pos int
}

func (l *lexer) next() (token, string, error) {
	src := l.src
	for l.pos < len(src) {
		c := src[l.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.pos++
		case c == '-' && l.peek(1) == '-':
			if i := strings.IndexByte(src[l.pos:], '\n'); i >= 0 {
				l.pos += i + 1
			} else {
				l.pos = len(src)
			}
		case c == '/' && l.peek(1) == '*':
			i := strings.Index(src[l.pos+2:], "*/")
			if i < 0 {
				return tokEOF, "", errors.New("unterminated comment")
			}
			l.pos += 2 + i + 2
		default:
			return l.token()
		}
	}
	return tokEOF, "", nil
}

func (l *lexer) token() (token, string, error) {
	src, start := l.src, l.pos
	c := src[start]
	switch {
	case c == '\'' || c == '"' || c == '`':
		if err := l.quoted(c); err != nil {
			return tokEOF, "", err
		}
		return tokOther, src[start:l.pos], nil
	case c == '[':
		i := strings.IndexByte(src[start:], ']')
		if i < 0 {
			return tokEOF, "", errors.New("unterminated [identifier]")
		}
		l.pos += i + 1
		return tokOther, src[start:l.pos], nil
	case c == '(':
		l.pos++
		return tokOpen, "(", nil
	case c == ')':
		l.pos++
		return tokClose, ")", nil
	case c == ';':
		l.pos++
		return tokSemicolon, ";", nil
	case c == '?':
		l.pos++
		if l.pos < len(src) && isDigit(src[l.pos]) {
			l.word()
			return tokNamedParam, src[start:l.pos], nil
		}
		return tokParam, "?", nil
	case (c == ':' || c == '@' || c == '$') && l.pos+1 < len(src) && isWordByte(src[l.pos+1]):
		l.pos++
		l.word()
		return tokNamedParam, src[start:l.pos], nil
	case isWordStart(c):
		l.word()
		return tokWord, src[start:l.pos], nil
	case isDigit(c):
		l.word() // numbers, including 1e5 and 0x1F; '.' is left as an operator
		return tokOther, src[start:l.pos], nil
	}
	l.pos++
	return tokOther, src[start:l.pos], nil
}

// quoted consumes a quoted string or name, where a doubled quote is an
// escaped quote.
func (l *lexer) quoted(q byte) error {
	src := l.src
	for i := l.pos + 1; i < len(src); i++ {
		if src[i] == q {
			if i+1 < len(src) && src[i+1] == q {
				i++
				continue
			}
			l.pos = i + 1
			return nil
		}
	}
	return fmt.Errorf("unterminated %c quote", q)
}

func (l *lexer) word() {
	for l.pos < len(l.src) && isWordByte(l.src[l.pos]) {
		l.pos++
	}
}

func (l *lexer) peek(n int) byte {
	if l.pos+n < len(l.src) {
		return l.src[l.pos+n]
	}
	return 0
}

func isDigit(c byte) bool     { return c >= '0' && c <= '9' }
func isWordStart(c byte) bool { return c == '_' || c >= 0x80 || (c|0x20) >= 'a' && (c|0x20) <= 'z' }
func isWordByte(c byte) bool  { return isWordStart(c) || isDigit(c) || c == '$' }
