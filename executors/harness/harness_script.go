package harness

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/codefeedback/codefeedback/internal/strlit"
)

// Judges for Ruby, PHP and Lua: the candidate first (its lines hold), then
// the judge in the same language, every test in its own rescue / try /
// pcall. The tests are the languages' own assertions:
//
//	ruby  assert_equal(f(1, 2), 3)     assert(ok(x))
//	php   assert(f(1, 2) === 3);       assert(f([1]) == [1]);  assert(ok($x));
//	lua   assert(f(1, 2) == 3)         assert(ok(x))
//
// PHP compares with the operator written (=== strict, == loose); Lua
// compares tables deeply (== on tables is identity, never what a test
// means).

// buildRuby: lambdas per test, rescue Exception (so SystemStackError and
// NoMemoryError are test results too), the line from the backtrace.
func buildRuby(b *langBuild) string {
	var w strings.Builder
	w.WriteString(b.code)
	fmt.Fprintf(&w, `
# codefeedback test judge
require 'json'
$__cf_m = %s
$__cf_cap = %d
$__cf_lines = %d
def __cf_rec(kind, o)
  s = JSON.generate(o) rescue JSON.generate(o.transform_values { |v| v.is_a?(String) ? v.scrub : v })
  $stdout.write("#{$__cf_m} #{kind} #{s}\n")
  $stdout.flush
end
def __cf_s(v)
  s = (v.inspect rescue v.to_s).to_s.scrub
  s.length > $__cf_cap ? s[0, $__cf_cap] + '...' : s
end
def __cf_line(e)
  (e.backtrace_locations || []).each do |l|
    return l.lineno if l.path.to_s.end_with?('main.rb') && l.lineno <= $__cf_lines
  end
  (e.backtrace || []).each do |l|
    m = /main\.rb:(\d+)/.match(l)
    return m[1].to_i if m && m[1].to_i <= $__cf_lines
  end
  0
end
def __cf_eq(input, a, e)
  a == e ? { kind: 'pass' } : { kind: 'wrong_answer', input: input, expected: __cf_s(e), actual: __cf_s(a), op: '==' }
end
def __cf_true(input, c)
  c ? { kind: 'pass' } : { kind: 'wrong_answer', input: input, expected: 'true', actual: __cf_s(c), op: '==' }
end
$stdout.write("#{$__cf_m} plan " + %s + "\n")
__cf_rec('load', { ok: 1 })
__cf_cases = [
`, jsonStr(b.marker), b.valueCap(), b.lines, singleQuoted(b.planJSON()))
	b.writeCases(&w, caseForms{quote: singleQuoted,
		eq:   "  -> { __cf_eq(%s, (%s), (%s)) },\n",
		cond: "  -> { __cf_true(%s, (%s)) },\n",
		stmt: "  -> { %s; { kind: 'pass' } },\n"})
	w.WriteString(`]
__cf_cases.each_with_index do |c, i|
  r = begin
    c.call
  rescue Exception => e
    { kind: 'exception', exception: e.class.name, message: e.message.to_s.scrub, line: __cf_line(e) }
  end
  r[:i] = i
  __cf_rec('case', r)
end
__cf_rec('done', { stdout: '' })
`)
	return w.String()
}

// singleQuoted is a single-quoted Ruby or PHP literal (no interpolation):
// only the backslash and the quote are escaped.
func singleQuoted(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

var (
	rePHPOpen  = regexp.MustCompile(`<\?php\b`)
	rePHPClose = regexp.MustCompile(`\?>`)
)

// buildPHP: the candidate (given an opening tag on its first line when it
// has none, so no line moves), then the judge, with warnings and notices
// turned into ErrorException so an undefined index fails a test as it
// would in production code with a strict handler.
func buildPHP(b *langBuild) string {
	code := b.code
	if !rePHPOpen.MatchString(code) {
		code = "<?php " + code
	}
	var w strings.Builder
	w.WriteString(code)
	// A candidate that closes its PHP block leaves the judge as text.
	if o, c := rePHPOpen.FindAllStringIndex(code, -1), rePHPClose.FindAllStringIndex(code, -1); len(c) > 0 && c[len(c)-1][0] > o[len(o)-1][0] {
		w.WriteString("<?php\n")
	}
	fmt.Fprintf(&w, `
// codefeedback test judge
function __cf_rec($kind, $o) {
  echo %s, ' ', $kind, ' ', json_encode($o, JSON_UNESCAPED_SLASHES | JSON_INVALID_UTF8_SUBSTITUTE | JSON_PARTIAL_OUTPUT_ON_ERROR), "\n";
}
function __cf_s($v) {
  $s = is_array($v) || is_object($v) ? json_encode($v, JSON_UNESCAPED_SLASHES | JSON_INVALID_UTF8_SUBSTITUTE | JSON_PARTIAL_OUTPUT_ON_ERROR) : var_export($v, true);
  if (!is_string($s)) { $s = print_r($v, true); }
  return strlen($s) > %d ? substr($s, 0, %[2]d) . '...' : $s;
}
function __cf_line($e) {
  $frames = array_merge([['file' => $e->getFile(), 'line' => $e->getLine()]], $e->getTrace());
  foreach ($frames as $f) {
    if (isset($f['file'], $f['line']) && substr($f['file'], -8) === 'main.php' && $f['line'] <= %d) { return $f['line']; }
  }
  return 0;
}
function __cf_eq($input, $a, $e, $strict) {
  $ok = $strict ? $a === $e : $a == $e;
  return $ok ? ['kind' => 'pass'] : ['kind' => 'wrong_answer', 'input' => $input, 'expected' => __cf_s($e), 'actual' => __cf_s($a), 'op' => $strict ? '===' : '=='];
}
function __cf_true($input, $c) {
  return $c ? ['kind' => 'pass'] : ['kind' => 'wrong_answer', 'input' => $input, 'expected' => 'true', 'actual' => __cf_s($c), 'op' => '=='];
}
echo %[1]s, ' plan ', %[4]s, "\n";
__cf_rec('load', ['ok' => 1]);
set_error_handler(function ($no, $str, $file, $line) { throw new ErrorException($str, 0, $no, $file, $line); });
$__cf_cases = [
`, singleQuoted(b.marker), b.valueCap(), b.lines, singleQuoted(b.planJSON()))
	for _, t := range b.tests {
		switch {
		case t.Actual != "":
			fmt.Fprintf(&w, "  function () { return __cf_eq(%s, (%s), (%s), %v); },\n", singleQuoted(t.Actual), t.Actual, t.Expected, t.Op != "==")
		case t.Cond != "":
			fmt.Fprintf(&w, "  function () { return __cf_true(%s, (%s)); },\n", singleQuoted(t.Cond), t.Cond)
		default:
			fmt.Fprintf(&w, "  function () { %s; return ['kind' => 'pass']; },\n", strings.TrimSuffix(t.Stmt, ";"))
		}
	}
	w.WriteString(`];
foreach ($__cf_cases as $__cf_i => $__cf_c) {
  try { $__cf_r = $__cf_c(); }
  catch (Throwable $e) { $__cf_r = ['kind' => 'exception', 'exception' => get_class($e), 'message' => $e->getMessage(), 'line' => __cf_line($e)]; }
  $__cf_r['i'] = $__cf_i;
  __cf_rec('case', $__cf_r);
}
__cf_rec('done', ['stdout' => '']);
`)
	return w.String()
}

// buildLua: closures per test run under xpcall; the error's line is its
// message's main.lua:N prefix, or the first frame of the candidate in the
// traceback. Locals of the judge live in a do-block so the candidate's
// main chunk keeps its 200-local budget.
func buildLua(b *langBuild) string {
	var w strings.Builder
	w.WriteString(b.code)
	fmt.Fprintf(&w, `
-- codefeedback test judge
do
local M, CAP, LINES = %s, %d, %d
local function js(s)
  s = tostring(s)
  return '"' .. s:gsub('[%%c"\\]', function(c)
    if c == '"' then return '\\"' elseif c == '\\' then return '\\\\' elseif c == '\n' then return '\\n' end
    return string.format('\\u%%04x', c:byte())
  end) .. '"'
end
local function rec(kind, o)
  local parts = {}
  for _, k in ipairs({'i', 'kind', 'input', 'expected', 'actual', 'op', 'exception', 'message', 'line', 'ok', 'stdout'}) do
    local v = o[k]
    if v ~= nil then parts[#parts + 1] = js(k) .. ': ' .. (type(v) == 'number' and string.format('%%d', v) or js(v)) end
  end
  io.stdout:write(M, ' ', kind, ' {', table.concat(parts, ', '), '}\n')
  io.stdout:flush()
end
local function show(v, depth)
  depth = depth or 0
  if type(v) == 'string' then return string.format('%%q', v) end
  if type(v) ~= 'table' or depth > 5 then return tostring(v) end
  local parts, n = {}, #v
  for i = 1, n do parts[#parts + 1] = show(v[i], depth + 1) end
  local keys = {}
  for k in pairs(v) do
    if not (math.type(k) == 'integer' and k >= 1 and k <= n) then keys[#keys + 1] = k end
  end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do parts[#parts + 1] = '[' .. show(k, depth + 1) .. '] = ' .. show(v[k], depth + 1) end
  return '{' .. table.concat(parts, ', ') .. '}'
end
local function cut(s) if #s > CAP then return s:sub(1, CAP) .. '...' end return s end
local function equal(a, e)
  if a == e then return true end
  if type(a) ~= 'table' or type(e) ~= 'table' then return false end
  for k, v in pairs(a) do if not equal(v, e[k]) then return false end end
  for k in pairs(e) do if a[k] == nil then return false end end
  return true
end
local function eq(input, a, e)
  if equal(a, e) then return {kind = 'pass'} end
  return {kind = 'wrong_answer', input = input, expected = cut(show(e)), actual = cut(show(a)), op = '=='}
end
local function truth(input, c)
  if c then return {kind = 'pass'} end
  return {kind = 'wrong_answer', input = input, expected = 'true', actual = cut(show(c)), op = '=='}
end
local function fail(err)
  local msg, line = tostring(err), 0
  local n, rest = msg:match('^[^:]*main%%.lua:(%%d+): (.*)$')
  if n and tonumber(n) <= LINES then line, msg = tonumber(n), rest
  elseif n then msg = rest end
  if line == 0 then
    for m in debug.traceback('', 2):gmatch('main%%.lua:(%%d+):') do
      if tonumber(m) <= LINES then line = tonumber(m) break end
    end
  end
  -- Lua's errors have no types: named after the C API's status, as the
  -- runner names an uncaught one (LUA_ERRMEM or LUA_ERRRUN).
  local name = msg:find('^not enough memory') and 'MemoryError' or 'RuntimeError'
  return {kind = 'exception', exception = name, message = msg, line = line}
end
io.stdout:write(M, ' plan ', %s, '\n')
rec('load', {ok = 1})
local cases = {
`, luaStr(b.marker), b.valueCap(), b.lines, luaStr(b.planJSON()))
	b.writeCases(&w, caseForms{quote: luaStr,
		eq:   "  function() return eq(%s, (%s), (%s)) end,\n",
		cond: "  function() return truth(%s, (%s)) end,\n",
		stmt: "  function() %s; return {kind = 'pass'} end,\n"})
	w.WriteString(`}
for i, c in ipairs(cases) do
  local ok, r = xpcall(c, fail)
  r.i = i - 1
  rec('case', r)
end
rec('done', {stdout = ''})
end
`)
	return w.String()
}

// luaStr is a Lua string literal (decimal escapes for control bytes).
func luaStr(s string) string { return strlit.DoubleQuoted(s, strlit.Decimal) }
