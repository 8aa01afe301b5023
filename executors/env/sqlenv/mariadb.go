package sqlenv

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// DefaultMariaDBDSN reaches a local MariaDB as root over its socket (Debian's
// root authenticates by unix socket: run as root, or set
// CODEFEEDBACK_MARIADB_DSN / Params["dsn"] to an account that may create
// databases and users).
const DefaultMariaDBDSN = "root@unix(/run/mysqld/mysqld.sock)/"

// mariaBackend runs the agent's statements on a real MariaDB server. Each
// dump is loaded once into base databases (cf_<dump hash>_<db>); an
// episode runs on its own copy (one per Env, cfep_<random>) made with CREATE
// TABLE ... LIKE and INSERT ... SELECT, re-made only when the last episode
// ran a statement that could write. The agent's account (one per Env) has
// privileges on that copy only and a per-account MAX_STATEMENT_TIME; the
// gold query runs on the base database in a read-only transaction.
type mariaBackend struct {
	admin    *sql.DB
	agentDB  *sql.DB
	conn     *sql.Conn
	user     string
	copyDB   string
	stmtTime time.Duration

	loaded      map[string]string   // dump path -> hash prefix
	tableCache  map[string][]string // base database -> its tables
	baseDB      string              // the base database the copy was made from
	taskDB      string
	dirty       bool // the episode ran a statement that may write rows
	schemaDirty bool // ... or change tables
}

// MySQL8SQLMode is MySQL 8.0's default sql_mode without ONLY_FULL_GROUP_BY.
const MySQL8SQLMode = "STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"

// MariaDBDSN is the DSN the mariadb backend uses by default.
func MariaDBDSN() string {
	if d := os.Getenv("CODEFEEDBACK_MARIADB_DSN"); d != "" {
		return d
	}
	return DefaultMariaDBDSN
}

func newMariaDB(ctx context.Context, dsn string, stmtTime time.Duration) (*mariaBackend, error) {
	if dsn == "" {
		dsn = MariaDBDSN()
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlenv: mariadb dsn: %w", err)
	}
	cfg.MultiStatements = false
	cfg.InterpolateParams = false
	// MySQL 8's default sql_mode (InterCode's server) but for
	// ONLY_FULL_GROUP_BY: MariaDB's version of it knows no functional
	// dependencies, so it would reject gold queries MySQL 8 answers.
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	if _, ok := cfg.Params["sql_mode"]; !ok {
		cfg.Params["sql_mode"] = "'" + MySQL8SQLMode + "'"
	}
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := admin.PingContext(pctx); err != nil {
		admin.Close()
		return nil, fmt.Errorf("sqlenv: no MariaDB server at %s (start one: .ci/setup test installs and starts mariadb-server): %w", cfg.Addr, err)
	}
	suffix := randomHex(6)
	m := &mariaBackend{admin: admin, user: "cf_ic_" + suffix, copyDB: "cfep_" + suffix, stmtTime: stmtTime, loaded: map[string]string{}}
	pw := randomHex(16)
	secs := int(stmtTime.Seconds())
	if secs < 1 {
		secs = 1
	}
	for _, q := range []string{
		fmt.Sprintf("CREATE USER '%s'@'localhost' IDENTIFIED BY '%s' WITH MAX_STATEMENT_TIME %d", m.user, pw, secs),
		fmt.Sprintf("CREATE USER '%s'@'127.0.0.1' IDENTIFIED BY '%s' WITH MAX_STATEMENT_TIME %d", m.user, pw, secs),
		fmt.Sprintf("CREATE DATABASE `%s`", m.copyDB),
		fmt.Sprintf("GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX, CREATE TEMPORARY TABLES, CREATE VIEW, SHOW VIEW ON `%s`.* TO '%s'@'localhost', '%s'@'127.0.0.1'", m.copyDB, m.user, m.user),
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			m.close()
			return nil, fmt.Errorf("sqlenv: setting up the agent's account: %w", err)
		}
	}
	acfg := cfg.Clone()
	acfg.User, acfg.Passwd, acfg.DBName = m.user, pw, m.copyDB
	acfg.MultiStatements = false
	m.agentDB, err = sql.Open("mysql", acfg.FormatDSN())
	if err != nil {
		m.close()
		return nil, err
	}
	m.agentDB.SetMaxIdleConns(0)
	return m, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// load imports a dump's databases once (marked done in cf_intercode.loaded).
func (m *mariaBackend) load(ctx context.Context, dumpPath string) (string, error) {
	if h, ok := m.loaded[dumpPath]; ok {
		return h, nil
	}
	data, err := os.ReadFile(dumpPath)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:6])
	if _, err := m.admin.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS cf_intercode"); err != nil {
		return "", err
	}
	if _, err := m.admin.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS cf_intercode.loaded (dump CHAR(12) PRIMARY KEY, at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)"); err != nil {
		return "", err
	}
	// One importer per dump across processes (intercode run's workers, two
	// runs): a server-side named lock, then the check again.
	lc, err := m.admin.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer lc.Close()
	var got sql.NullInt64
	if err := lc.QueryRowContext(ctx, "SELECT GET_LOCK(?, 900)", "cf_intercode_load_"+h).Scan(&got); err != nil || got.Int64 != 1 {
		return "", fmt.Errorf("waiting for another import of %s: %v", dumpPath, err)
	}
	defer lc.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK(?)", "cf_intercode_load_"+h)
	var n int
	if err := lc.QueryRowContext(ctx, "SELECT COUNT(*) FROM cf_intercode.loaded WHERE dump = ?", h).Scan(&n); err != nil {
		return "", err
	}
	if n == 0 {
		if err := m.importDump(ctx, string(data), h); err != nil {
			return "", fmt.Errorf("importing %s: %w", dumpPath, err)
		}
		if _, err := lc.ExecContext(ctx, "INSERT IGNORE INTO cf_intercode.loaded (dump) VALUES (?)", h); err != nil {
			return "", err
		}
	}
	m.loaded[dumpPath] = h
	return h, nil
}

// importDump runs a dump's CREATE TABLE and INSERT statements into
// cf_<h>_<db> databases on one connection.
func (m *mariaBackend) importDump(ctx context.Context, data, h string) error {
	d, err := ParseDump(strings.NewReader(data))
	if err != nil {
		return err
	}
	c, err := m.admin.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, q := range []string{"SET FOREIGN_KEY_CHECKS = 0", "SET UNIQUE_CHECKS = 0", "SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO'"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	for _, db := range d.Order {
		base := baseName(h, db)
		if _, err := c.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+base+"`"); err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, "CREATE DATABASE `"+base+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"); err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, "USE `"+base+"`"); err != nil {
			return err
		}
		for _, st := range d.DBs[db] {
			if _, err := c.ExecContext(ctx, st); err != nil {
				return fmt.Errorf("%s: %.80s: %w", db, st, err)
			}
		}
	}
	return nil
}

func baseName(h, db string) string { return "cf_" + h + "_" + strings.ToLower(db) }

func (m *mariaBackend) reset(ctx context.Context, dumpPath, db string) error {
	h, err := m.load(ctx, dumpPath)
	if err != nil {
		return err
	}
	base := baseName(h, db)
	if m.conn != nil {
		m.conn.Close()
		m.conn = nil
	}
	switch {
	case m.baseDB != base || m.schemaDirty:
		if err := m.copyFrom(ctx, base); err != nil {
			return fmt.Errorf("copying %s: %w", db, err)
		}
	case m.dirty:
		// Rows changed but no table did: refill the tables in one
		// transaction (DML only: much cheaper than dropping and creating).
		if err := m.refill(ctx, base); err != nil {
			return fmt.Errorf("restoring %s: %w", db, err)
		}
	}
	m.baseDB, m.dirty, m.schemaDirty = base, false, false
	m.taskDB = db
	c, err := m.agentDB.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connecting as the agent: %w", err)
	}
	m.conn = c
	return nil
}

func (m *mariaBackend) tables(ctx context.Context, c *sql.Conn, base string) ([]string, error) {
	if t, ok := m.tableCache[base]; ok {
		return t, nil
	}
	rows, err := c.QueryContext(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE'", base)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		tables = append(tables, t)
	}
	if len(tables) == 0 {
		return nil, fmt.Errorf("database %s is empty or missing", base)
	}
	if m.tableCache == nil {
		m.tableCache = map[string][]string{}
	}
	m.tableCache[base] = tables
	return tables, rows.Err()
}

// refill puts base's rows back into the copy's tables, in one transaction.
func (m *mariaBackend) refill(ctx context.Context, base string) error {
	return m.perTable(ctx, base, true, []string{"SET FOREIGN_KEY_CHECKS = 0", "START TRANSACTION"},
		"DELETE FROM `%[1]s`.`%[3]s`", "COMMIT")
}

// copyFrom makes the episode database a fresh copy of base.
func (m *mariaBackend) copyFrom(ctx context.Context, base string) error {
	return m.perTable(ctx, base, false, []string{"SET FOREIGN_KEY_CHECKS = 0", "DROP DATABASE IF EXISTS `" + m.copyDB + "`",
		"CREATE DATABASE `" + m.copyDB + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		"CREATE TABLE `%[1]s`.`%[3]s` LIKE `%[2]s`.`%[3]s`", "")
}

// perTable runs head, then per table of base the statement prep
// (formatted with the copy's database, base and the table) and the copy of
// base's rows, then tail (if any), on one admin connection; inTx: a failed
// statement rolls back.
func (m *mariaBackend) perTable(ctx context.Context, base string, inTx bool, head []string, prep, tail string) error {
	c, err := m.admin.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	tables, err := m.tables(ctx, c, base)
	if err != nil {
		return err
	}
	stmts := head
	for _, t := range tables {
		stmts = append(stmts,
			fmt.Sprintf(prep, m.copyDB, base, t),
			fmt.Sprintf("INSERT INTO `%s`.`%s` SELECT * FROM `%s`.`%s`", m.copyDB, t, base, t))
	}
	if tail != "" {
		stmts = append(stmts, tail)
	}
	for _, q := range stmts {
		if _, err := c.ExecContext(ctx, q); err != nil {
			if inTx {
				c.ExecContext(ctx, "ROLLBACK")
			}
			return err
		}
	}
	return nil
}

var (
	readOnlyRE = regexp.MustCompile(`(?is)^\s*(\(\s*)*(select|show|describe|desc|explain|with|use|help)\b`)
	dmlRE      = regexp.MustCompile(`(?is)^\s*(insert|update|delete|replace)\b`)
	myUseRE    = regexp.MustCompile("(?is)^\\s*use\\s+`?([\\w$]+)`?\\s*;?\\s*$")
	showDBsRE  = regexp.MustCompile(`(?is)^\s*show\s+(databases|schemas)\s*;?\s*$`)
)

func (m *mariaBackend) exec(ctx context.Context, q string) (result, error) {
	if m.conn == nil {
		return result{}, errors.New("no episode (Reset first)")
	}
	// The agent's database is named after the task's, as in InterCode.
	if mm := myUseRE.FindStringSubmatch(q); mm != nil {
		if strings.EqualFold(mm[1], m.taskDB) {
			return result{}, nil
		}
	}
	if showDBsRE.MatchString(q) {
		return result{Cols: []string{"Database"}, Rows: [][]any{{m.taskDB}}, HasRows: true}, nil
	}
	if !readOnlyRE.MatchString(q) {
		m.dirty = true
		if !dmlRE.MatchString(q) {
			m.schemaDirty = true // DDL, or anything we cannot classify
		}
	}
	r, timedOut, err := m.query(ctx, m.conn, q)
	if err != nil {
		return result{}, err
	}
	if timedOut {
		// The connection may still be busy: start a new one.
		m.conn.Close()
		if m.conn, err = m.agentDB.Conn(ctx); err != nil {
			return result{}, err
		}
	}
	r.Err = strings.ReplaceAll(r.Err, m.copyDB, m.taskDB)
	return r, nil
}

// query runs one statement; SQL errors are results, connection failures are
// errors. A statement past the time limit is killed by the server
// (MAX_STATEMENT_TIME); the context is a backstop.
func (m *mariaBackend) query(ctx context.Context, c *sql.Conn, q string) (result, bool, error) {
	qctx, cancel := context.WithTimeout(ctx, m.stmtTime+5*time.Second)
	defer cancel()
	rows, err := c.QueryContext(qctx, q)
	if err != nil {
		return queryError(ctx, qctx, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	types, _ := rows.ColumnTypes()
	r := result{Cols: cols, HasRows: len(cols) > 0}
	for rows.Next() {
		raw := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range raw {
			ptrs[i] = &raw[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return result{}, false, err
		}
		row := make([]any, len(cols))
		for i, b := range raw {
			row[i] = convert(b, types[i].DatabaseTypeName())
		}
		r.Rows = append(r.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return queryError(ctx, qctx, err)
	}
	return r, false, nil
}

// queryError sorts a failed statement's error, whether from the query or
// from reading its rows: the server's SQL error and a statement past the
// time limit (qctx done, ctx not) are results, the timed-out flag set for
// the latter; anything else (the connection) is an error.
func queryError(ctx, qctx context.Context, err error) (result, bool, error) {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return result{Err: fmt.Sprintf("%d (%s): %s", me.Number, string(me.SQLState[:]), me.Message)}, false, nil
	}
	if qctx.Err() != nil && ctx.Err() == nil {
		return result{Err: "Query execution was interrupted (max_statement_time exceeded)"}, true, nil
	}
	return result{}, false, err
}

// convert maps a MariaDB text-protocol value to what mysql-connector gives
// Python: ints, floats, Decimal, str, bytes.
func convert(b sql.RawBytes, typ string) any {
	if b == nil {
		return nil
	}
	s := string(b)
	switch typ {
	case "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "YEAR", "UNSIGNED TINYINT", "UNSIGNED SMALLINT",
		"UNSIGNED MEDIUMINT", "UNSIGNED INT", "UNSIGNED BIGINT":
		var n int64
		if _, err := fmt.Sscan(s, &n); err == nil {
			return n
		}
		return s
	case "FLOAT", "DOUBLE", "REAL":
		var f float64
		if _, err := fmt.Sscan(s, &f); err == nil {
			return f
		}
		return s
	case "DECIMAL", "NEWDECIMAL":
		return Decimal(s)
	case "BLOB", "TINYBLOB", "MEDIUMBLOB", "LONGBLOB", "BINARY", "VARBINARY", "BIT", "GEOMETRY":
		return []byte(s)
	}
	return s
}

func (m *mariaBackend) gold(ctx context.Context, dumpPath, db, q string) (result, error) {
	h, err := m.load(ctx, dumpPath)
	if err != nil {
		return result{}, err
	}
	c, err := m.admin.Conn(ctx)
	if err != nil {
		return result{}, err
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "USE `"+baseName(h, db)+"`"); err != nil {
		return result{}, err
	}
	if _, err := c.ExecContext(ctx, fmt.Sprintf("SET SESSION max_statement_time = %d", int(m.stmtTime.Seconds()))); err != nil {
		return result{}, err
	}
	if _, err := c.ExecContext(ctx, "START TRANSACTION READ ONLY"); err != nil {
		return result{}, err
	}
	defer c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	r, _, err := m.query(ctx, c, q)
	return r, err
}

func (m *mariaBackend) close() error {
	if m.conn != nil {
		m.conn.Close()
	}
	if m.agentDB != nil {
		m.agentDB.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+m.copyDB+"`")
	m.admin.ExecContext(ctx, "DROP USER IF EXISTS '"+m.user+"'@'localhost', '"+m.user+"'@'127.0.0.1'")
	return m.admin.Close()
}
