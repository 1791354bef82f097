// The op_profile.json reader (json_cursor.{h,cc}, a pull parser) on what a JSON
// text may hold: escapes, \u surrogate pairs (a lone surrogate reads as U+FFFD,
// as in llvm::json), numbers with fractions and exponents (an integer field
// takes any number that is an int64), values nested 1024 deep (deeper fails
// instead of exhausting the stack: llvm::json::parse overflowed the stack on
// 100,000 '[', a fuzz finding), and truncation and syntax errors, each reported
// as one line with its position. make_inputs.py writes the inputs that must not
// end in a newline (split-file's would).
//
// RUN: split-file --no-leading-lines %s %t
// RUN: %python %t/make_inputs.py %t
// RUN: %tfpgo_opt --allow-unregistered-dialect \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%t/valid.json" %t/valid.mlir | FileCheck %s
// RUN: %tfpgo_opt --allow-unregistered-dialect \
// RUN:   --tf-annotate-operations-profile="path-to-profile=%t/deep_1024.json" %t/valid.mlir \
// RUN:   | FileCheck %s --check-prefix=DEEP
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/deep_1025.json" %t/deep_1025.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/deep_object.json" %t/deep_object.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/bad_escape.json" %t/bad_escape.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/short_unicode.json" %t/short_unicode.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/bad_hex.json" %t/bad_hex.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/control.json" %t/control.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/leading_zero.json" %t/leading_zero.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/trailing.json" %t/trailing.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/trunc_string.json" %t/trunc_string.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/trunc_escape.json" %t/trunc_escape.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/trunc_exponent.json" %t/trunc_exponent.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/trunc_fraction.json" %t/trunc_fraction.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/trunc_minus.json" %t/trunc_minus.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/trunc_colon.json" %t/trunc_colon.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/trunc_array.json" %t/trunc_array.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/trunc_object.json" %t/trunc_object.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/trunc_surrogate.json" %t/trunc_surrogate.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/count_fraction.json" %t/count.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/count_tiny.json" %t/count.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/count_huge_exp.json" %t/count.mlir -verify-diagnostics
// RUN: %tfpgo_opt --tf-annotate-operations-profile="path-to-profile=%t/count_int64_overflow.json" %t/count.mlir -verify-diagnostics

// Escaped names match ops; a pair is one code point; exponents are integers.
// From valid.json, tf.D ("exp"): count 4e0 = 4; total_ps 1.6E3 = self_ps 16e+2 =
// 1600; min_ps 4E2 = max_ps 400.0 = 400; first_start_ps 0e5 = 0; durations_ps
// [4e2, 4.0e2, 400, 0.04e4] = 400 four times (mean 1600 / 4 = 400, nearest-rank
// p50 = p95 = 400). The four ops annotated hold 1000 + 1000 + 900 + 1600 = 4500
// ps of self time (shares are of that, not of the document's op_self_ps, 4000),
// so tf.D's share is 1600 / 4500 = 0.355556.
// CHECK-LABEL: func.func @valid
// CHECK: "tf.A"() {profiler_data = {count = 1 : i64
// CHECK: "tf.B"() {profiler_data = {count = 2 : i64
// CHECK: "tf.C"() {profiler_data = {count = 3 : i64
// CHECK: "tf.D"() {profiler_data = {count = 4 : i64, dur = 400 : i64, max = 400 : i64, min = 400 : i64,
// CHECK-SAME: p50 = 400 : i64, p95 = 400 : i64, self = 1600 : i64, share = 3.555560e-01 : f64,
// CHECK-SAME: total = 1600 : i64, ts = 0 : i64}

// A value nested 1024 deep is skipped; the profile's one entry annotates.
// DEEP-LABEL: func.func @valid
// DEEP: "tf.D"() {profiler_data = {count = 7 : i64

//--- valid.mlir
func.func @valid() {
  "tf.A"() : () -> () loc("esc/A\C3\A9\22q\\")
  "tf.B"() : () -> () loc("emoji/\F0\9F\98\80")
  "tf.C"() : () -> () loc("lone/\EF\BF\BDx\EF\BF\BD")
  "tf.D"() : () -> () loc("exp")
  return
}

//--- valid.json
{"format": "tfpgo.op_profile", "version": 2,
 "totals": {"op_self_ps": 4000, "skipped": [[[{"a": [1, -2.5e-3, 0.0E+0, true, false, null, "q\"\\\/"]}]], {}, []]},
 "ignored": "\u00e9\ud83d\ude00\b\f\n\r\t",
 "ops": [
  {"name": "esc\/\u0041\u00E9\"q\\", "op_types": ["T\tab"], "count": 1, "total_ps": 1000, "self_ps": 1000, "min_ps": 1000, "max_ps": 1000, "first_start_ps": 0, "durations_ps": [1000]},
  {"name": "emoji/\ud83d\ude00", "op_types": ["B"], "count": 2, "total_ps": 1000, "self_ps": 1000, "min_ps": 500, "max_ps": 500, "first_start_ps": 0, "durations_ps": [500, 500]},
  {"name": "lone/\ud800x\udc00", "op_types": ["C"], "count": 3, "total_ps": 900, "self_ps": 900, "min_ps": 300, "max_ps": 300, "first_start_ps": 0, "durations_ps": [300, 300, 300]},
  {"name": "exp", "op_types": ["E"], "count": 4e0, "total_ps": 1.6E3, "self_ps": 16e+2, "min_ps": 4E2, "max_ps": 400.0, "first_start_ps": 0e5, "durations_ps": [4e2, 4.0e2, 400, 0.04e4]}
 ]}

//--- make_inputs.py
import sys

HEAD = '{"format": "tfpgo.op_profile", "version": 2, '
ENTRY = '{"name": "exp", "op_types": ["A"], "count": 7, "total_ps": 7, "self_ps": 7, "min_ps": 1, "max_ps": 1, "first_start_ps": 0, "durations_ps": [1, 1, 1, 1, 1, 1, 1]}'
COUNT = HEAD + '"ops": [{"name": "a", "op_types": ["A"], "count": %s, "total_ps": 1, "self_ps": 1, "min_ps": 1, "max_ps": 1, "first_start_ps": 0, "durations_ps": [1]}]}'
FILES = {
    'bad_escape': HEAD + '"ops": [], "x": "a\\qb"}',
    'short_unicode': HEAD + '"ops": [], "x": "\\u12"}',
    'bad_hex': HEAD + '"ops": [], "x": "\\u12G4"}',
    'control': HEAD + '"ops": [], "x": "a\tb"}',
    'leading_zero': HEAD + '"ops": [], "x": 01}',
    'trailing': HEAD + '"ops": []} x',
    'trunc_string': HEAD + '"ops": [{"name": "abc',
    'trunc_escape': HEAD + '"ops": [], "x": "\\',
    'trunc_exponent': HEAD + '"ops": [], "x": 1e',
    'trunc_fraction': HEAD + '"ops": [], "x": 1.',
    'trunc_minus': HEAD + '"ops": [], "x": -',
    'trunc_colon': HEAD + '"ops": [], "x":',
    'trunc_array': HEAD + '"ops": [',
    'trunc_object': HEAD + '"ops": [] ',
    'trunc_surrogate': HEAD + '"ops": [], "x": "\\ud83d\\ude',
    'count_fraction': COUNT % '1.5',
    'count_tiny': COUNT % '1e-1',
    'count_huge_exp': COUNT % '1e400',
    'count_int64_overflow': COUNT % '9223372036854775808',
    'deep_1024': HEAD + '"x": ' + '[' * 1024 + ']' * 1024 + ', "ops": [' + ENTRY + ']}',
    'deep_1025': HEAD + '"x": ' + '[' * 1025 + ']' * 1025 + ', "ops": [' + ENTRY + ']}',
    'deep_object': HEAD + '"ops": [], "x": ' + '{"a": ' * 1025 + '1' + '}' * 1025 + '}',
}
for name, text in FILES.items():
    with open(f'{sys.argv[1]}/{name}.json', 'w', encoding='utf-8') as out:
        out.write(text)

//--- deep_1025.mlir
// expected-error@+1 {{deep_1025.json': not JSON: line 1, column 1075: nesting deeper than 1024}}
module {}

//--- deep_object.mlir
// expected-error@+1 {{deep_object.json': not JSON: line 1, column 6205: nesting deeper than 1024}}
module {}

//--- bad_escape.mlir
// expected-error@+1 {{bad_escape.json': not JSON: line 1, column 65: invalid escape in a string}}
module {}

//--- short_unicode.mlir
// expected-error@+1 {{short_unicode.json': not JSON: line 1, column 65: '\u' needs four hex digits}}
module {}

//--- bad_hex.mlir
// expected-error@+1 {{bad_hex.json': not JSON: line 1, column 65: '\u' needs four hex digits}}
module {}

//--- control.mlir
// expected-error@+1 {{control.json': not JSON: line 1, column 64: control character in a string}}
module {}

//--- leading_zero.mlir
// expected-error@+1 {{leading_zero.json': not JSON: line 1, column 63: expected ',' or '}'}}
module {}

//--- trailing.mlir
// expected-error@+1 {{trailing.json': not JSON: line 1, column 57: unexpected text after the document}}
module {}

//--- trunc_string.mlir
// expected-error@+1 {{trunc_string.json': not JSON: line 1, column 67: unterminated string}}
module {}

//--- trunc_escape.mlir
// expected-error@+1 {{trunc_escape.json': not JSON: line 1, column 64: unterminated string}}
module {}

//--- trunc_exponent.mlir
// expected-error@+1 {{trunc_exponent.json': not JSON: line 1, column 64: expected a digit in an exponent}}
module {}

//--- trunc_fraction.mlir
// expected-error@+1 {{trunc_fraction.json': not JSON: line 1, column 64: expected a digit after '.'}}
module {}

//--- trunc_minus.mlir
// expected-error@+1 {{trunc_minus.json': not JSON: line 1, column 63: expected a digit in a number}}
module {}

//--- trunc_colon.mlir
// expected-error@+1 {{trunc_colon.json': not JSON: line 1, column 61: unexpected end of input}}
module {}

//--- trunc_array.mlir
// expected-error@+1 {{trunc_array.json': not JSON: line 1, column 54: unexpected end of input}}
module {}

//--- trunc_object.mlir
// expected-error@+1 {{trunc_object.json': not JSON: line 1, column 56: unexpected end of input}}
module {}

//--- trunc_surrogate.mlir
// expected-error@+1 {{trunc_surrogate.json': not JSON: line 1, column 71: '\u' needs four hex digits}}
module {}

//--- count.mlir
// expected-error@+1 {{ops[0] ('a'): 'count' must be a non-negative integer}}
module {}
