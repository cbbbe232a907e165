// Jinja builtins: filters (tojson as Hugging Face defines it), tests, Python str/dict methods,
// string formatting, Markup, and the errors jinja2 raises (sandbox, types, syntax).
// Expected outputs were produced by Python jinja2 3.1.6 in Hugging Face's chat-template
// environment (tools/reference/render_templates.py); the second test re-checks them against
// jinja2 live. nullptr expected: jinja2 raises, so must we.
#include <gtest/gtest.h>

#include "snippet_runner.h"

namespace novaserve {
namespace {

using testing::Snippet;

const std::vector<Snippet>& builtin_snippets() {
  static const std::vector<Snippet> kSnippets = {
      {"dict_literal_in_braces", "{{ {'a': {'b': 1}} }}", "{}", "{'a': {'b': 1}}"},
      {"err_leading_zero_int", "{{ 007 }}", "{}", nullptr},
      {"getattr_prefers_methods", "{{ d.items is defined }}|{{ d['items'] }}|{{ d.get('k') }}",
       "{\"d\": {\"items\": \"I\", \"k\": \"K\"}}", "True|I|K"},
      {"tojson_default",
       "{{ {'b': 1, 'a': [1, 2, {'c': 'é'}], 'd': none, 'e': true, 'f': 1.0, 'g': "
       "'q\"\\n\\u0001<>&'}|tojson }}",
       "{}",
       "{\"b\": 1, \"a\": [1, 2, {\"c\": \"é\"}], \"d\": null, \"e\": true, \"f\": 1.0, \"g\": "
       "\"q\\\"\\n\\u0001<>&\"}"},
      {"tojson_indent",
       "{{ {'b': 1, 'c': [1, {}], 'e': []}|tojson(indent=2) }}|{{ [1]|tojson(indent='\\t') }}|{{ "
       "{'a': 1}|tojson(indent=0) }}",
       "{}",
       "{\n  \"b\": 1,\n  \"c\": [\n    1,\n    {}\n  ],\n  \"e\": []\n}|[\n\t1\n]|{\n\"a\": 1\n}"},
      {"tojson_options",
       "{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}|{{ {'a': [1, 2]}|tojson(separators=(',', "
       "':')) }}|{{ 'é😊'|tojson(ensure_ascii=true) }}|{{ 1e16|tojson }}|{{ x|tojson }}",
       "{\"x\": {\"z\": 1, \"y\": [null, false]}}",
       "{\"a\": 2, \"b\": 1}|{\"a\":[1,2]}|\"\\u00e9\\ud83d\\ude0a\"|1e+16|{\"z\": 1, \"y\": "
       "[null, false]}"},
      {"tojson_context_order", "{{ tools|tojson }}",
       "{\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
       "{\"z\": 1, \"a\": 2}}}]}",
       "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"z\": 1, "
       "\"a\": 2}}}]"},
      {"str_methods",
       "{{ 'a b  c'.split() }}{{ 'a,b'.split(',') }}{{ ' x '.strip() }}{{ 'xyx'.strip('x') }}{{ "
       "'abc'.startswith(('x','a')) }}{{ 'abc'.endswith('bc') }}{{ 'a-b-c'.split('-', 1) }}{{ "
       "'a.b.c'.rsplit('.', 1) }}{{ '  a'.lstrip() }}{{ 'a  '.rstrip() }}",
       "{}", "['a', 'b', 'c']['a', 'b']xyTrueTrue['a', 'b-c']['a.b', 'c']aa"},
      {"str_methods_2",
       "{{ 'abc'.find('c') }}{{ 'abc'.find('z') }}{{ 'abcb'.count('b') }}{{ 'héllo'.find('l') }}{{ "
       "'a b'.replace(' ', '_') }}{{ 'aaa'.replace('a', 'b', 2) }}{{ 'abc'.upper() }}{{ "
       "'ABC'.lower() }}{{ \"it's mine\".title() }}{{ 'aBC'.capitalize() }}{{ "
       "'a\\nb\\r\\nc'.splitlines() }}{{ ','.join(['a','b']) }}",
       "{}", "2-122a_bbbaABCabcIt'S MineAbc['a', 'b', 'c']a,b"},
      {"str_methods_3",
       "{{ 'abc'.removeprefix('a') }}{{ 'abc'.removesuffix('c') }}{{ '12'.isdigit() }}{{ "
       "'ab'.isalpha() }}{{ ' '.isspace() }}{{ 'abc'.zfill(5) }}{{ 'ab'.center(6, '*') }}{{ "
       "'ab'.ljust(4) }}|{{ 'ab'.rjust(4) }}|{{ 'a,b'.partition(',') }}{{ 'abc'.islower() }}{{ "
       "'ABC'.isupper() }}",
       "{}", "bcabTrueTrueTrue00abc**ab**ab  |  ab|('a', ',', 'b')TrueTrue"},
      {"str_format",
       "{{ 'hello {} {}'.format(1, 'x') }}|{{ '{0}{1}{0}|{x}'.format('a', 'b', x=3) }}|{{ "
       "'{:>5}|{:<5}|{:^5}|{:*^7}|{!r}'.format('a','b','c','d','e') }}|{{ "
       "'{:.2f}|{:5d}|{:,}|{:x}|{:.3}'.format(3.14159, 42, 1234567, 255, 1234.5) }}",
       "{}", "hello 1 x|aba|3|    a|b    |  c  |***d***|'e'|3.14|   42|1,234,567|ff|1.23e+03"},
      {"percent_format",
       "{{ '%s-%d' % ('a', 3) }}|{{ '%5.2f|%-4d|%x|%05d|%+d|%%' % (3.14159, 7, 255, 42, 3) }}|{{ "
       "'%(a)s=%(b)r' % {'a': 1, 'b': 'x'} }}|{{ '%s' % none }}|{{ '%.3s' % 'abcdef' }}",
       "{}", "a-3| 3.14|7   |ff|00042|+3|%|1='x'|None|abc"},
      {"dict_methods",
       "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{{ d.keys()|list }}{{ "
       "d.values()|list }}{{ d.get('z', 'dz') }}{{ d.get('z') }}{{ d.items()|length }}",
       "{\"d\": {\"b\": 1, \"a\": 2}}", "b=1;a=2;['b', 'a'][1, 2]dzNone2"},
      {"dict_views_print", "{{ d.items() }}|{{ d.keys() }}|{{ d.values() }}", "{\"d\": {\"a\": 1}}",
       "dict_items([('a', 1)])|dict_keys(['a'])|dict_values([1])"},
      {"filter_trim_default",
       "[{{ '  x  '|trim }}][{{ 'xxaxx'|trim('x') }}][{{ none|default('d') }}][{{ ''|default('d') "
       "}}][{{ ''|default('d', true) }}][{{ x|d('u') }}][{{ none|trim }}]",
       "{}", "[x][a][None][][d][u][None]"},
      {"filter_length_join",
       "{{ [1,2]|length }}{{ 'héllo'|length }}{{ {'a':1}|length }}{{ [1,2]|count }}|{{ "
       "[1,2]|join(', ') }}|{{ [1, none, 'a']|join }}|{{ [{'a':1},{'a':2}]|join(',', "
       "attribute='a') }}",
       "{}", "2512|1, 2|1Nonea|1,2"},
      {"filter_first_last",
       "{{ [1,2,3]|first }}{{ []|first }}{{ 'abc'|first }}{{ [1,2]|last }}{{ {'x':1,'y':2}|first "
       "}}{{ {'x':1,'y':2}|last }}",
       "{}", "1a2xy"},
      {"filter_map_select",
       "{{ [{'a':1},{'a':2}]|map(attribute='a')|list }}{{ [{'a':2},{}]|map(attribute='a', "
       "default=0)|list }}{{ ['a','b']|map('upper')|list }}{{ [1, none, 0, 2]|select|list }}{{ [1, "
       "2, 3, 4]|reject('odd')|list }}{{ [1,2,3]|select('gt', 1)|list }}{{ ['a', 'b']|select('in', "
       "['b'])|list }}",
       "{}", "[1, 2][2, 0]['A', 'B'][1, 2][2, 4][2, 3]['b']"},
      {"filter_selectattr",
       "{{ ms|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }}|{{ "
       "ms|rejectattr('role', 'eq', 'user')|list|length }}|{{ ms|selectattr('tool')|list }}|{{ "
       "ms|selectattr('content', 'defined')|list|length }}",
       "{\"ms\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"assistant\", \"content\": "
       "\"b\"}, {\"role\": \"user\", \"content\": \"c\", \"tool\": 1}]}",
       "['a', 'c']|1|[{'role': 'user', 'content': 'c', 'tool': 1}]|3"},
      {"filter_sort_unique",
       "{{ [3,1,2]|sort }}{{ ['b','A','a']|sort }}{{ ['B','a','C']|sort(case_sensitive=true) }}{{ "
       "[3,1]|sort(reverse=true) }}{{ [{'a':2},{'a':1}]|sort(attribute='a') }}{{ "
       "['b','A','a']|unique|list }}{{ [{'a':'x'},{'a':'X'}]|unique(attribute='a')|list }}{{ "
       "{'b':1,'A':2}|dictsort }}{{ {'b':1,'a':2}|dictsort(by='value') }}{{ "
       "{'b':1,'a':2}|dictsort(reverse=true) }}",
       "{}",
       "[1, 2, 3]['A', 'a', 'b']['B', 'C', 'a'][3, 1][{'a': 1}, {'a': 2}]['b', 'A'][{'a': "
       "'x'}][('A', 2), ('b', 1)][('b', 1), ('a', 2)][('b', 1), ('a', 2)]"},
      {"filter_numbers",
       "{{ 3.7|int }}{{ '42'|int }}{{ 'x'|int }}{{ '3.5'|int }}{{ '3.5'|float }}{{ 'x'|float(1.5) "
       "}}{{ none|int }}{{ true|int }}{{ ' 0x1A '|int(base=16) }}|{{ 2.5|round }}{{ "
       "3.14159|round(2) }}{{ 5|round }}{{ 2.675|round(2) }}{{ 2.5|round(method='ceil') }}{{ "
       "2.5|round(0, 'floor') }}|{{ -3|abs }}{{ -3.5|abs }}",
       "{}", "342033.51.50126|2.03.1452.673.02.0|33.5"},
      {"filter_text",
       "{{ 'hello world-foo(bar'|title }}|{{ \"it's mine\"|title }}|{{ 'aBC'|capitalize }}|{{ "
       "'AbC'|lower }}{{ 'abc'|upper }}|{{ 'a-b-a'|replace('a', 'x') }}{{ 'aaa'|replace('a', 'b', "
       "2) }}{{ none|replace('N', 'n') }}|{{ 5|string ~ 1 }}|{{ 'x'|center(5) }}|{{ 'a b "
       "c'|wordcount }}|{{ '%s-%s'|format(1, 2) }}|{{ 'abc'|reverse }}",
       "{}", "Hello World-Foo(Bar|It's Mine|Abc|abcABC|x-b-xbbanone|51|  x  |3|1-2|cba"},
      {"filter_indent",
       "{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(2, "
       "blank=true) }}|{{ 'a\\nb'|indent('> ') }}|{{ 'a\\nb'|indent }}",
       "{}", "a\n  b\n\n  c|  a\n  b|a\n  \n  b|a\n> b|a\n    b"},
      {"filter_misc",
       "{{ {'a':1}|items|list }}{{ [1,2,3]|sum }}{{ [0.5]|sum(start=1) }}{{ "
       "[{'v':1},{'v':2}]|sum(attribute='v') }}{{ [3,1,2]|min }}{{ ['b','A']|max }}{{ []|max }}{{ "
       "[1,2]|reverse|list }}{{ 'abc'|list }}{{ x|list }}{{ 'upper'|attr('x') is defined }}",
       "{}", "[('a', 1)]61.531b[2, 1]['a', 'b', 'c'][]False"},
      {"markup",
       "{{ 'x'|safe + '<' }}|{{ '<' + 'x'|safe }}|{{ 'a'|safe ~ '<' }}|{{ '<&>\"\\''|escape }}|{{ "
       "'<'|e|e }}|{{ ('x'|safe).strip() + '<' }}|{{ '<'|safe|length }}|{{ '<b>'|safe|tojson }}",
       "{}", "x&lt;|&lt;x|a<|&lt;&amp;&gt;&#34;&#39;|&lt;|x&lt;|1|\"<b>\""},
      {"filter_chain_precedence",
       "{{ -3|abs }}|{{ 'a' ~ 'b'|upper }}|{{ [1,2]|length + 1 }}|{{ 'x' if [1]|length else 'y' }}",
       "{}", "3|aB|3|x"},
      {"tests",
       "{{ x is defined }}{{ none is none }}{{ 'a' is string }}{{ {} is mapping }}{{ [] is "
       "iterable }}{{ 'a' is iterable }}{{ 1 is iterable }}{{ [] is sequence }}{{ {} is sequence "
       "}}{{ 1 is number }}{{ true is number }}{{ true is integer }}{{ 1.0 is float }}{{ 1 is "
       "integer }}{{ true is boolean }}{{ 1 is boolean }}{{ true is true }}{{ 1 is true }}{{ false "
       "is false }}",
       "{}", "FalseTrueTrueTrueTrueTrueFalseTrueTrueTrueTrueFalseTrueTrueTrueFalseTrueFalseTrue"},
      {"tests_2",
       "{{ 1 is equalto 1 }}{{ 1 is eq(2) }}{{ 2 is in [1, 2] }}{{ 3 is odd }}{{ 4 is even }}{{ 9 "
       "is divisibleby 3 }}{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ 1 is ne 2 }}{{ 2 is gt 1 "
       "}}{{ 2 is ge 2 }}{{ 1 is lt 2 }}{{ 'upper' is filter }}{{ 'nope' is test }}{{ x is "
       "undefined }}{{ none is not none }}{{ range is callable }}{{ x is sequence }}",
       "{}", "TrueFalseTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueFalseTrueFalseTrueTrue"},
      {"filter_block",
       "{% filter upper %}abc {{ 'd' }}{% endfilter %}|{% filter trim %}  x  {% endfilter %}", "{}",
       "ABC D|x"},
      {"err_attr_of_undefined", "{{ x.y }}", "{}", nullptr},
      {"err_str_plus_int", "{{ 'x' + 1 }}", "{}", nullptr},
      {"err_none_plus_str", "{{ none + 'a' }}", "{}", nullptr},
      {"err_list_append_sandbox", "{{ [1].append(2) }}", "{}", nullptr},
      {"err_dict_pop_sandbox", "{% set d = {'a': 1} %}{{ d.pop('a') }}", "{}", nullptr},
      {"err_raise_exception", "a{{ raise_exception('boom') }}", "{}", nullptr},
      {"err_unorderable", "{{ 1 < 'a' }}", "{}", nullptr},
      {"err_unpack", "{% for a, b in [[1]] %}{% endfor %}", "{}", nullptr},
      {"err_unknown_filter", "{{ 1|nosuchfilter }}", "{}", nullptr},
      {"err_unknown_test", "{{ 1 is nosuchtest }}", "{}", nullptr},
      {"err_unknown_tag", "{% nosuchtag %}", "{}", nullptr},
      {"err_syntax_unclosed_if", "{% if true %}x", "{}", nullptr},
      {"err_syntax_bad_expr", "{{ 1 + }}", "{}", nullptr},
      {"err_syntax_unclosed_string", "{{ 'abc }}", "{}", nullptr},
      {"err_syntax_unclosed_comment", "{# abc", "{}", nullptr},
      {"err_range_too_big", "{{ range(200000)|length }}", "{}", nullptr},
      {"err_call_undefined", "{{ nosuchmacro() }}", "{}", nullptr},
      {"err_set_attr_non_namespace", "{% set d = {'a': 1} %}{% set d.a = 2 %}", "{}", nullptr},
      {"err_generator_length", "{{ [1]|select|length }}", "{}", nullptr},
      {"err_macro_too_many_args", "{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", "{}", nullptr},
      {"err_macro_unknown_kwarg", "{% macro m(a) %}{% endmacro %}{{ m(b=1) }}", "{}", nullptr},
      {"err_iterate_none", "{% for x in none %}{% endfor %}", "{}", nullptr},
      {"err_in_none", "{{ 'a' in none }}", "{}", nullptr},
      {"err_tojson_undefined", "{{ x|tojson }}", "{}", nullptr},
      {"err_division_by_zero", "{{ 1 / 0 }}", "{}", nullptr},
      {"err_break_outside_loop", "{% break %}", "{}", nullptr},
      {"err_subscript_of_undefined", "{{ messages[0]['content'] }}", "{\"messages\": []}", nullptr},
      {"unknown_filter_in_untaken_branch_is_fine",
       "{% if false %}{{ x|nosuchfilter }}{% endif %}ok{{ 1 if true else x|nosuch }}", "{}", "ok1"},
      {"unsafe_attribute_renders_empty",
       "[{{ [1].append }}][{{ ''.__class__ }}][{{ [1].append is defined }}]", "{}", "[][][False]"},
  };
  return kSnippets;
}

TEST(JinjaBuiltins, EngineMatchesExpected) {
  testing::expect_engine_matches(builtin_snippets());
}

TEST(JinjaBuiltins, ExpectationsMatchJinja2) {
  testing::expect_jinja2_matches(builtin_snippets());
}

}  // namespace
}  // namespace novaserve
