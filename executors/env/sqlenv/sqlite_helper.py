# codefeedback InterCode SQL helper: runs in a Python session in the sandbox.
# Agent statements arrive as JSON strings (never as Python code); each answer
# is one JSON line: {"cols": [...], "rows": [[...]], "error": "...", "has_rows": bool}.
import base64 as _ic_b64
import json as _ic_json
import re as _ic_re
import sqlite3 as _ic_sqlite3
import time as _ic_time

_IC = {"bytes": {}, "conn": None, "db": None}
_IC_MAX_ROWS = 200000


def _ic_build(names):
    for n in names:
        with open("/icdb/%s.sql" % n, encoding="utf-8") as f:
            script = f.read()
        c = _ic_sqlite3.connect("/icdb/%s.sqlite" % n)
        c.executescript(script)
        c.commit()
        c.close()
    print("built", len(names))


def _ic_fresh(db):
    data = _IC["bytes"].get(db)
    if data is None:
        with open("/icdb/%s.sqlite" % db, "rb") as f:
            data = f.read()
        _IC["bytes"][db] = data
    c = _ic_sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    if hasattr(c, "deserialize"):
        c.deserialize(data)
    else:  # Python < 3.11: copy through the backup API
        src = _ic_sqlite3.connect("file:/icdb/%s.sqlite?mode=ro" % db, uri=True)
        src.backup(c)
        src.close()
    return c


def _ic_reset(db, limit=10):
    if _IC["conn"] is not None:
        _IC["conn"].close()
    _IC["conn"], _IC["db"] = _ic_fresh(db), db
    print(_ic_json.dumps({"cols": [], "rows": [], "has_rows": False}))


def _ic_value(v):
    if isinstance(v, bytes):
        return {"b": _ic_b64.b64encode(v).decode()}
    if isinstance(v, float):
        return {"f": repr(v)}
    return v


# A few MySQL statements agents use to explore, answered from SQLite's catalog.
_IC_SHOW_TABLES = _ic_re.compile(r"(?is)^\s*show\s+(full\s+)?tables\s*;?\s*$")
_IC_DESCRIBE = _ic_re.compile(r"(?is)^\s*(?:describe|desc|show\s+columns\s+from|show\s+fields\s+from)\s+`?([\w$]+)`?\s*;?\s*$")
_IC_USE = _ic_re.compile(r"(?is)^\s*use\s+`?([\w$]+)`?\s*;?\s*$")
_IC_SHOW_DBS = _ic_re.compile(r"(?is)^\s*show\s+databases\s*;?\s*$")


def _ic_run(conn, sql, limit):
    m = _IC_USE.match(sql)
    if m:
        if m.group(1).lower() != (_IC["db"] or "").lower():
            return {"error": "Unknown database '%s'" % m.group(1)}
        return {"cols": [], "rows": [], "has_rows": False}
    if _IC_SHOW_DBS.match(sql):
        return {"cols": ["Database"], "rows": [[_IC["db"]]], "has_rows": True}
    if _IC_SHOW_TABLES.match(sql):
        sql = "SELECT name AS Tables_in_%s FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%%' ORDER BY name" % _IC["db"]
    m = _IC_DESCRIBE.match(sql)
    if m:
        cur = conn.execute("PRAGMA table_info(\"%s\")" % m.group(1).replace('"', '""'))
        rows = [[r[1], r[2], "NO" if r[3] else "YES", "PRI" if r[5] else "", r[4], ""] for r in cur.fetchall()]
        if not rows:
            return {"error": "Table '%s.%s' doesn't exist" % (_IC["db"], m.group(1))}
        return {"cols": ["Field", "Type", "Null", "Key", "Default", "Extra"], "rows": rows, "has_rows": True}
    deadline = _ic_time.monotonic() + limit
    conn.set_progress_handler(lambda: 1 if _ic_time.monotonic() > deadline else 0, 10000)
    try:
        cur = conn.execute(sql)
        if cur.description is None:
            return {"cols": [], "rows": [], "has_rows": False, "rowcount": cur.rowcount}
        cols = [d[0] for d in cur.description]
        rows = []
        for r in cur:
            rows.append([_ic_value(v) for v in r])
            if len(rows) >= _IC_MAX_ROWS:
                break
        return {"cols": cols, "rows": rows, "has_rows": True}
    except _ic_sqlite3.OperationalError as e:
        if str(e) == "interrupted":
            return {"error": "Query execution was interrupted (max_statement_time exceeded)"}
        return {"error": str(e)}
    except Exception as e:  # noqa: BLE001 - every SQL error is an observation
        return {"error": str(e)}
    finally:
        conn.set_progress_handler(None, 0)


def _ic_exec(sql, limit=10):
    print(_ic_json.dumps(_ic_run(_IC["conn"], sql, limit)))


def _ic_gold(db, sql, limit=10):
    # The gold query runs on its own pristine copy, never the agent's.
    saved = _IC["db"]
    _IC["db"] = db
    c = _ic_fresh(db)
    try:
        print(_ic_json.dumps(_ic_run(c, sql, limit)))
    finally:
        c.close()
        _IC["db"] = saved
