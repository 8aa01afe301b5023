package sqlenv

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// Dump is a MySQL dump split by database: the CREATE TABLE and INSERT
// statements of each (in MySQL syntax), in file order. Account, LOCK, SET and
// conditional-comment statements are dropped.
type Dump struct {
	Order []string            // databases in file order
	DBs   map[string][]string // statements by database
}

// ReadDump parses a MySQL dump file such as InterCode's ic_spider_dbs.sql.
func ReadDump(path string) (*Dump, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseDump(f)
}

var (
	useRE      = regexp.MustCompile("(?i)^USE\\s+`?([^`;\\s]+)`?")
	createDBRE = regexp.MustCompile("(?i)^CREATE\\s+DATABASE\\s+(?:IF\\s+NOT\\s+EXISTS\\s+)?`?([^`;\\s]+)`?")
)

// ParseDump parses a MySQL dump.
func ParseDump(r io.Reader) (*Dump, error) {
	d := &Dump{DBs: map[string][]string{}}
	cur := ""
	err := splitStatements(r, func(stmt string) error {
		s := strings.TrimSpace(stmt)
		up := strings.ToUpper(firstWords(s, 2))
		switch {
		case createDBRE.MatchString(s):
			name := createDBRE.FindStringSubmatch(s)[1]
			if _, ok := d.DBs[name]; !ok {
				d.DBs[name] = nil
				d.Order = append(d.Order, name)
			}
		case useRE.MatchString(s):
			cur = useRE.FindStringSubmatch(s)[1]
			if _, ok := d.DBs[cur]; !ok {
				d.DBs[cur] = nil
				d.Order = append(d.Order, cur)
			}
		case strings.HasPrefix(up, "CREATE TABLE"), strings.HasPrefix(up, "INSERT INTO"), strings.HasPrefix(up, "CREATE VIEW"):
			if cur == "" {
				return fmt.Errorf("statement before any USE: %.60s", s)
			}
			d.DBs[cur] = append(d.DBs[cur], s)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = f[:n]
	}
	return strings.Join(f, " ")
}

// splitStatements calls fn with each statement of a MySQL script: split at
// semicolons outside quotes, backticks and comments; -- and # comments and
// /* */ comments (MySQL's /*! conditional ones too) are removed.
func splitStatements(r io.Reader, fn func(string) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var b strings.Builder
	var quote rune // ', ", ` or 0
	for {
		c, _, err := br.ReadRune()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if quote != 0 {
			b.WriteRune(c)
			if c == '\\' && quote != '`' {
				n, _, err := br.ReadRune()
				if err == nil {
					b.WriteRune(n)
				}
				continue
			}
			if c == quote {
				// A doubled quote stays inside the literal.
				if n, _, err := br.ReadRune(); err == nil {
					if n == quote {
						b.WriteRune(n)
						continue
					}
					br.UnreadRune()
				}
				quote = 0
			}
			continue
		}
		switch c {
		case '\'', '"', '`':
			quote = c
			b.WriteRune(c)
		case '-':
			// -- starts a comment only before white space or the end;
			// 3--1 is 3 - -1. Peeking consumes nothing: the next - is read next.
			if p, _ := br.Peek(2); len(p) > 0 && p[0] == '-' && (len(p) == 1 || strings.IndexByte(" \t\n\r", p[1]) >= 0) {
				br.ReadString('\n')
				b.WriteRune('\n')
				continue
			}
			b.WriteRune(c)
		case '#':
			br.ReadString('\n')
			b.WriteRune('\n')
		case '/':
			if p, _ := br.Peek(1); len(p) > 0 && p[0] == '*' {
				br.ReadByte()
				prev := rune(0)
				for {
					x, _, err := br.ReadRune()
					if err != nil || (prev == '*' && x == '/') {
						break
					}
					prev = x
				}
				b.WriteRune(' ')
				continue
			}
			b.WriteRune(c)
		case ';':
			if s := strings.TrimSpace(b.String()); s != "" {
				if err := fn(s); err != nil {
					return err
				}
			}
			b.Reset()
		default:
			b.WriteRune(c)
		}
	}
	if s := strings.TrimSpace(b.String()); s != "" {
		return fn(s)
	}
	return nil
}

// ToSQLite rewrites one dump statement in SQLite's dialect: backticks become
// double quotes, MySQL string escapes become SQLite literals, KEY/INDEX lines
// and table options go, AUTO_INCREMENT, UNSIGNED and MySQL collations go, and
// text columns with a case-insensitive MySQL collation (utf8mb4_general_ci,
// the dumps' default) get COLLATE NOCASE so = and ORDER BY compare as MySQL
// does (for ASCII).
func ToSQLite(stmt string, ciDefault bool) string {
	s := rewriteLiterals(stmt)
	up := strings.ToUpper(firstWords(s, 2))
	if !strings.HasPrefix(up, "CREATE TABLE") {
		return s
	}
	open := strings.IndexByte(s, '(')
	closeIdx := matchingParen(s, open)
	if open < 0 || closeIdx < 0 {
		return s
	}
	head, body, tail := s[:open], s[open+1:closeIdx], s[closeIdx+1:]
	if strings.Contains(strings.ToLower(tail), "_ci") {
		ciDefault = true
	}
	var cols []string
	for _, def := range splitTopLevel(body) {
		d := strings.TrimSpace(def)
		u := strings.ToUpper(d)
		switch {
		case strings.HasPrefix(u, "KEY "), strings.HasPrefix(u, "INDEX "), strings.HasPrefix(u, "UNIQUE KEY"),
			strings.HasPrefix(u, "UNIQUE INDEX"), strings.HasPrefix(u, "FULLTEXT"), strings.HasPrefix(u, "SPATIAL"):
			continue
		case strings.HasPrefix(u, "PRIMARY KEY"), strings.HasPrefix(u, "CONSTRAINT"), strings.HasPrefix(u, "FOREIGN KEY"), strings.HasPrefix(u, "UNIQUE"):
			cols = append(cols, stripKeyLengths(d))
			continue
		}
		cols = append(cols, columnToSQLite(d, ciDefault))
	}
	return head + "(\n  " + strings.Join(cols, ",\n  ") + "\n)"
}

var (
	autoIncRE   = regexp.MustCompile(`(?i)\s+AUTO_INCREMENT`)
	unsignedRE  = regexp.MustCompile(`(?i)\s+(UNSIGNED|ZEROFILL)`)
	collateRE   = regexp.MustCompile(`(?i)\s+COLLATE\s+"?([A-Za-z0-9_]+)"?`)
	charsetRE   = regexp.MustCompile(`(?i)\s+(CHARACTER\s+SET|CHARSET)\s+"?[A-Za-z0-9_]+"?`)
	onUpdateRE  = regexp.MustCompile(`(?i)\s+ON\s+UPDATE\s+CURRENT_TIMESTAMP(\(\))?`)
	commentRE   = regexp.MustCompile(`(?i)\s+COMMENT\s+'(?:[^']|'')*'`)
	textTypeRE  = regexp.MustCompile(`(?i)^("[^"]+"|\S+)\s+(tiny|medium|long)?(text|char|varchar|enum|set)\b`)
	keyLengthRE = regexp.MustCompile(`([(,]\s*)"([^"]+)"\s*\(\d+\)`)
)

func columnToSQLite(d string, ciDefault bool) string {
	ci := ciDefault
	if m := collateRE.FindStringSubmatch(d); m != nil {
		ci = strings.HasSuffix(strings.ToLower(m[1]), "_ci")
	}
	d = autoIncRE.ReplaceAllString(d, "")
	d = unsignedRE.ReplaceAllString(d, "")
	d = collateRE.ReplaceAllString(d, "")
	d = charsetRE.ReplaceAllString(d, "")
	d = onUpdateRE.ReplaceAllString(d, "")
	d = commentRE.ReplaceAllString(d, "")
	if ci && textTypeRE.MatchString(d) {
		d += " COLLATE NOCASE"
	}
	return d
}

func stripKeyLengths(d string) string { return keyLengthRE.ReplaceAllString(d, `$1"$2"`) }

// walkUnquoted calls fn for each byte of s from start that lies outside
// quotes ('...', "..." or `...`, a doubled quote escapes), with the parenthesis
// depth after it; fn returns false to stop.
func walkUnquoted(s string, start int, fn func(i, depth int) bool) {
	depth := 0
	var quote byte
	for i := start; i < len(s); i++ {
		c := s[i]
		if quote != 0 {
			if c == quote {
				if i+1 < len(s) && s[i+1] == quote {
					i++
					continue
				}
				quote = 0
			}
			continue
		}
		switch c {
		case '\'', '"', '`':
			quote = c
			continue
		case '(':
			depth++
		case ')':
			depth--
		}
		if !fn(i, depth) {
			return
		}
	}
}

// matchingParen returns the index of the parenthesis closing the one at
// open, or -1.
func matchingParen(s string, open int) int {
	if open < 0 {
		return -1
	}
	end := -1
	walkUnquoted(s, open, func(i, depth int) bool {
		if s[i] == ')' && depth == 0 {
			end = i
			return false
		}
		return true
	})
	return end
}

// splitTopLevel splits a column list or an ORDER BY list at the commas
// outside parentheses and quotes.
func splitTopLevel(s string) []string {
	var out []string
	start := 0
	walkUnquoted(s, 0, func(i, depth int) bool {
		if s[i] == ',' && depth == 0 {
			out = append(out, s[start:i])
			start = i + 1
		}
		return true
	})
	return append(out, s[start:])
}

// rewriteLiterals turns MySQL quoting into SQLite's: `ident` -> "ident",
// 'it\'s' -> 'it”s', "str" (a MySQL string) -> 'str', with MySQL's
// backslash escapes decoded.
func rewriteLiterals(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '`':
			j := strings.IndexByte(s[i+1:], '`')
			if j < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			b.WriteByte('"')
			b.WriteString(strings.ReplaceAll(s[i+1:i+1+j], `"`, `""`))
			b.WriteByte('"')
			i += j + 1
		case '\'', '"':
			var lit strings.Builder
			j := i + 1
			for ; j < len(s); j++ {
				d := s[j]
				if d == '\\' && j+1 < len(s) {
					j++
					switch s[j] {
					case 'n':
						lit.WriteByte('\n')
					case 't':
						lit.WriteByte('\t')
					case 'r':
						lit.WriteByte('\r')
					case '0':
						lit.WriteByte(0)
					case 'Z':
						lit.WriteByte(26)
					case 'b':
						lit.WriteByte('\b')
					default:
						lit.WriteByte(s[j])
					}
					continue
				}
				if d == c {
					if j+1 < len(s) && s[j+1] == c {
						lit.WriteByte(c)
						j++
						continue
					}
					break
				}
				lit.WriteByte(d)
			}
			b.WriteByte('\'')
			b.WriteString(strings.ReplaceAll(lit.String(), "'", "''"))
			b.WriteByte('\'')
			i = j
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
