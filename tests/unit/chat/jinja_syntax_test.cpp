// Jinja syntax and semantics: whitespace control (trim_blocks, lstrip_blocks, -/+), literals and
// printing, operators and precedence, Undefined, slicing, loops, scoping, macros, globals.
// Expected outputs were produced by Python jinja2 3.1.6 in Hugging Face's chat-template
// environment (tools/reference/render_templates.py); the second test re-checks them against
// jinja2 live. nullptr expected: jinja2 raises, so must we.
#include <gtest/gtest.h>

#include "snippet_runner.h"

namespace novaserve {
namespace {

using testing::Snippet;

const std::vector<Snippet>& syntax_snippets() {
  static const std::vector<Snippet> kSnippets = {
      {"lstrip_at_start", "  {% if true %}x{% endif %}", "{}", "x"},
      {"trim_and_lstrip_lines", "a\n  {% if true %}\n  x\n  {% endif %}\nb", "{}", "a\n  x\nb"},
      {"minus_strips_newlines", "a {% if true %} x {%- endif %} b", "{}", "a  x b"},
      {"variable_minus", "a  \n {{- 'v' -}} \n  b", "{}", "avb"},
      {"variable_keeps_newline", "{{ 'a' }}\nb", "{}", "a\nb"},
      {"plus_disables_lstrip", "  {%+ if true %}x{% endif %}", "{}", "  x"},
      {"plus_disables_trim", "{% if true +%}\nx{% endif %}", "{}", "\nx"},
      {"comments", "a {# c #}\nb\n  {# d #}\nc {#- e -#} d", "{}", "a b\ncd"},
      {"raw_block", "{% raw %}{{ x }}{% if %}{% endraw %}|", "{}", "{{ x }}{% if %}|"},
      {"trailing_newline_dropped", "x\n", "{}", "x"},
      {"only_one_trailing_newline_dropped", "x\n\n", "{}", "x\n"},
      {"crlf_normalized", "a\r\nb\rc", "{}", "a\nb\nc"},
      {"set_lines", "{%- set x = 1 -%}\n  {{ x }}\n{%- set y = 2 %}\n{{ y }}", "{}", "12"},
      {"lstrip_not_after_text", "a {% if true %}b{% endif %}", "{}", "a b"},
      {"data_braces", "{ x } {{ '{' }}", "{}", "{ x } {"},
      {"int_literals", "{{ 0x1F }} {{ 0b101 }} {{ 0o17 }} {{ 1_000 }} {{ 00 }}", "{}",
       "31 5 15 1000 0"},
      {"trim_blocks_only_newline", "{% if true %}  \nx{% endif %}|{% if true %}\n\nx{% endif %}",
       "{}", "  \nx|\nx"},
      {"nested_indented_blocks",
       "{%- for m in messages %}\n    {%- if m.role == 'user' %}\n        {{- '<u>' + m.content "
       "}}\n    {%- else %}\n        {{- '<a>' + m.content }}\n    {%- endif %}\n{%- endfor %}\n",
       "{\"messages\": [{\"role\": \"user\", \"content\": \"1\"}, {\"role\": \"assistant\", "
       "\"content\": \"2\"}]}",
       "<u>1<a>2"},
      {"lstrip_mixed_lines",
       "<\n    {% if true %}\n\t {# c #}\n  x {% if true %}y{% endif %}\n    {{ 'v' }}\n{% endif "
       "%}>",
       "{}", "<\n  x y    v\n>"},
      {"generator_partial_consumption",
       "{% set g = [1,2,3]|select %}{{ 2 in g }}{{ g|list }}|{% set r = [1,2]|reverse %}{{ r|list "
       "}}{{ r|list }}|{{ x|items|list }}",
       "{}", "True[3]|[2, 1][]|[]"},
      {"tuple_and_dict_literals",
       "{{ (1,2,2).count(2) }}{{ (1,2).index(2) }}{{ {'a': 1, 'a': 2} }}{{ 'ab' * true }}{{ none "
       "== 0 }}{{ '' == none }}{{ none is sameas none }}{{ [] is sameas [] }}",
       "{}", "21{'a': 2}abFalseFalseTrueFalse"},
      {"print_python_values",
       "{{ none }}|{{ true }}|{{ [1, 'a', none, true, 1.5, \"it's\"] }}|{{ {'a': 1, 'b': [2]} "
       "}}|{{ (1,) }}|{{ () }}|{{ (1, 'x') }}",
       "{}", "None|True|[1, 'a', None, True, 1.5, \"it's\"]|{'a': 1, 'b': [2]}|(1,)|()|(1, 'x')"},
      {"float_repr",
       "{{ 1e20 }} {{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ -0.0 }} {{ "
       "1.5e-7 }} {{ 2.50 }} {{ 1_000.5 }}",
       "{}",
       "1e+20 0.30000000000000004 1e+16 1000000000000000.0 0.0001 1e-05 -0.0 1.5e-07 2.5 1000.5"},
      {"string_literals",
       "{{ 'a' 'b' }}|{{ \"x\\ty\" }}|{{ '\\u00e9\\x41\\101' }}|{{ 'it\\'s' }}|{{ 'a\\qb' }}", "{}",
       "ab|x\ty|éAA|it's|a\\qb"},
      {"repr_escapes", "{{ ['a\\nb', 'q\"', \"s'\", '\\\\'] }}", "{}",
       "['a\\nb', 'q\"', \"s'\", '\\\\']"},
      {"unicode_passthrough", "{{ '你好 😊 é' }}|{{ x }}", "{\"x\": \"ünï ☃\"}", "你好 😊 é|ünï ☃"},
      {"none_from_context", "{{ x }}|{{ x is none }}", "{\"x\": null}", "None|True"},
      {"arithmetic",
       "{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7.5 // 2 }} {{ 2 ** 3 ** 2 }} {{ true + 1 }} {{ "
       "1 / 4 }} {{ 10 / 2 }} {{ 7 % -3 }} {{ -7.5 % 2 }} {{ 2 ** -1 }} {{ 3 * 'ab' }} {{ [1] * 2 "
       "}} {{ -(3) }} {{ +2.5 }}",
       "{}", "3 -4 2 3.0 64 2 0.25 5.0 -2 0.5 0.5 ababab [1, 1] -3 2.5"},
      {"precedence",
       "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 * 3 ~ 4 }} {{ -2 ** 2 }} {{ not 1 == 2 }} {{ 1 if 0 "
       "else 2 if 1 else 3 }}",
       "{}", "7 9 64 4 True 2"},
      {"concat_tilde", "{{ 'a' ~ 1 ~ none ~ true ~ x ~ [1] }}", "{}", "a1NoneTrue[1]"},
      {"comparisons",
       "{{ 1 < 2 < 3 }}{{ 1 < 3 < 2 }}{{ 'a' in 'abc' }}{{ 1 not in [1] }}{{ 1 == 1.0 }}{{ [1] == "
       "[1.0] }}{{ (1,) == [1] }}{{ 'b' > 'a' }}{{ [1, 2] < [1, 3] }}{{ none == none }}{{ x == y "
       "}}{{ 'k' in {'k': 1} }}",
       "{}", "TrueFalseTrueFalseTrueTrueFalseTrueTrueTrueTrueTrue"},
      {"and_or_values",
       "{{ 0 or 'b' }}|{{ 'a' and 'b' }}|{{ none and 1 }}|{{ '' or [] }}|{{ x or 'dflt' }}", "{}",
       "b|b|None|[]|dflt"},
      {"conditional_expr", "{{ 'y' if x else 'n' }}|{{ 1 if false }}|{{ (1 if false) is defined }}",
       "{}", "n||False"},
      {"undefined_semantics",
       "[{{ x }}][{{ x|length }}][{{ x is defined }}][{{ x is undefined }}][{{ x == y }}][{{ "
       "x|list }}][{{ 'a' in x }}][{% for i in x %}{{ i }}{% endfor %}][{{ x|default('d') }}][{{ x "
       "~ 'c' }}]",
       "{}", "[][0][False][True][True][[]][False][][d][c]"},
      {"missing_key_is_undefined",
       "{{ d.missing is defined }}|{{ d['missing'] is defined }}|{{ d.a }}|{{ l[5] is defined "
       "}}|{{ n.x is defined }}",
       "{\"d\": {\"a\": 1}, \"l\": [1], \"n\": null}", "False|False|1|False|False"},
      {"slicing",
       "{{ 'abcdef'[1:3] }}|{{ 'abc'[::-1] }}|{{ [1,2,3,4][-2:] }}|{{ [1,2,3][::2] }}|{{ "
       "'héllo'[1] }}|{{ 'héllo'|length }}|{{ [1,2,3][5:] }}|{{ (1,2,3)[1:] }}|{{ 'abc'[-1] }}|{{ "
       "[1,2,3][:-1] }}|{{ 'hello'[10:1:-2] }}",
       "{}", "bc|cba|[3, 4]|[1, 3]|é|5|[]|(2, 3)|c|[1, 2]|ol"},
      {"indexing",
       "{{ [1,2,3][-1] }}|{{ d.a.b }}|{{ d['a']['b'] }}|{{ [1,2].0 }}|{{ m[0]['role'] }}",
       "{\"d\": {\"a\": {\"b\": 2}}, \"m\": [{\"role\": \"user\"}]}", "3|2|2|1|user"},
      {"loop_variables",
       "{% for x in ['a','b','c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ "
       "loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}[{{ loop.previtem }}|{{ "
       "loop.nextitem }}]{{ loop.cycle('o','e') }}{{ loop.depth }};{% endfor %}",
       "{}", "1032TrueFalse3[|b]o1;2121FalseFalse3[a|c]e1;3210FalseTrue3[b|]o1;"},
      {"loop_else_and_filter",
       "{% for x in [] %}x{% else %}empty{% endfor %}|{% for x in [1,2,3,4] if x is even %}{{ x "
       "}}{{ loop.index }}/{{ loop.length }}{{ loop.last }};{% else %}none{% endfor %}|{% for x in "
       "[1] if x > 5 %}{% else %}filtered{% endfor %}",
       "{}", "empty|21/2False;42/2True;|filtered"},
      {"loop_unpacking",
       "{% for a, b in [[1,2],[3,4]] %}{{ a }}{{ b }}{% endfor %}|{% for k in {'x':1,'y':2} %}{{ k "
       "}}{% endfor %}|{% for k, v in {'x':1}|dictsort %}{{ k }}{{ v }}{% endfor %}|{% for c in "
       "'hé' %}[{{ c }}]{% endfor %}|{% for (a, b), c in [((1, 2), 3)] %}{{ a }}{{ b }}{{ c }}{% "
       "endfor %}",
       "{}", "1234|xy|x1|[h][é]|123"},
      {"loop_controls",
       "{% for i in range(10) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 4 %}{% break "
       "%}{% endif %}{{ i }}{% endfor %}|{% for i in range(3) %}{% for j in range(3) %}{% if j == "
       "1 %}{% break %}{% endif %}{{ i }}{{ j }}{% endfor %}{% endfor %}",
       "{}", "023|001020"},
      {"loop_nested_loop_var",
       "{% for a in [1,2] %}{% for b in [3,4] %}{{ loop.index }}{% endfor %}{{ loop.index }};{% "
       "endfor %}",
       "{}", "121;122;"},
      {"loop_changed",
       "{% for x in [1,1,2,2,1] %}{% if loop.changed(x) %}{{ x }}{% endif %}{% endfor %}", "{}",
       "121"},
      {"generator_once",
       "{% set g = [1,2]|select %}{% for x in g %}{{ x }}{% endfor %}{% for x in g %}{{ x }}{% "
       "endfor %}|{% if []|select %}truthy{% endif %}|{% set h = [1,2,3]|map('string') %}{{ "
       "h|first }}{{ h|list }}",
       "{}", "12|truthy|1['2', '3']"},
      {"scope_loop_does_not_leak",
       "{% set x = 0 %}{% for i in [1,2] %}{{ x }}{% set x = i %}{{ x }}{% endfor %}{{ x }}", "{}",
       "01020"},
      {"scope_if_leaks", "{% if true %}{% set y = 5 %}{% endif %}{{ y }}", "{}", "5"},
      {"scope_fresh_per_iteration",
       "{% for i in [1,2] %}{% if i == 2 %}[{{ x }}]{% endif %}{% set x = i %}{% endfor %}", "{}",
       "[]"},
      {"namespace",
       "{% set ns = namespace(a=1, found=false) %}{% for i in [1,2,3] %}{% if i == 2 %}{% set "
       "ns.found = true %}{% endif %}{% set ns.a = ns.a + i %}{% endfor %}{{ ns.a }}{{ ns.found "
       "}}|{{ namespace({'b': 2}, c=3).b }}|{{ ns }}",
       "{}", "7True|2|<Namespace {'a': 7, 'found': True}>"},
      {"macro_scope",
       "{% set x = 1 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ m() }}|{% for x in "
       "[7] %}{{ m() }}{% endfor %}|{% macro n() %}{% set x = 3 %}{{ x }}{% endmacro %}{{ n() }}{{ "
       "x }}",
       "{}", "2|2|32"},
      {"block_set",
       "{% set x %}  a {{ 1 + 1 }}  {% endset %}[{{ x }}]{% set y | trim | upper %}  b  {% endset "
       "%}[{{ y }}]",
       "{}", "[  a 2  ][B]"},
      {"with_block", "{% with a = 1, b = 2 %}{{ a }}{{ b }}{% endwith %}[{{ a }}]", "{}", "12[]"},
      {"macro_args",
       "{% macro m(a, b=a ~ '!', c=none) %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m(1) }}|{{ m(1, "
       "2) }}|{{ m(1, c=3) }}|{{ m(a='x') }}|{{ m() }}",
       "{}", "11!None|12None|11!3|xx!None|!None"},
      {"macro_varargs_kwargs",
       "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, z=4) }}", "{}",
       "1(2, 3){'z': 4}"},
      {"macro_recursion",
       "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(4) }}",
       "{}", "4321"},
      {"macro_returns_string",
       "{% macro m() %} x {% endmacro %}[{{ m()|trim }}][{{ m()|length }}][{{ m() is string }}]",
       "{}", "[x][3][True]"},
      {"call_block",
       "{% macro box(t) %}[{{ t }}:{{ caller() }}]{% endmacro %}{% call box('a') %}inner{% endcall "
       "%}|{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}{% "
       "call(v) each([1,2]) %}<{{ v }}>{% endcall %}",
       "{}", "[a:inner]|<1><2>"},
      {"globals",
       "{{ range(3)|list }}{{ range(1, 7, 2)|list }}{{ range(3, 0, -1)|list }}{{ range(3)|length "
       "}}{% for i in range(2) %}{{ i }}{% endfor %}|{{ dict(a=1, b=2) }}{{ dict([('a', 1)]) }}|{{ "
       "strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d %H:%M:%S %A %j') }}",
       "{}",
       "[0, 1, 2][1, 3, 5][3, 2, 1]301|{'a': 1, 'b': 2}{'a': 1}|15 Jan 2025|2025-01-15 09:30:00 "
       "Wednesday 015"},
      {"chat_like",
       "{{ bos_token }}{% for m in messages %}{{ '<|' + m['role'] + '|>\\n' + m['content'] | trim "
       "+ eos_token }}{% if loop.last and add_generation_prompt %}<|assistant|>{% endif %}{% "
       "endfor %}",
       "{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"add_generation_prompt\": true, "
       "\"messages\": [{\"role\": \"user\", \"content\": \" hi \"}, {\"role\": \"assistant\", "
       "\"content\": \"yo\"}]}",
       "<s><|user|>\nhi</s><|assistant|>\nyo</s><|assistant|>"},
  };
  return kSnippets;
}

TEST(JinjaSyntax, EngineMatchesExpected) {
  testing::expect_engine_matches(syntax_snippets());
}

TEST(JinjaSyntax, ExpectationsMatchJinja2) {
  testing::expect_jinja2_matches(syntax_snippets());
}

}  // namespace
}  // namespace novaserve
