// spmd_spec_parse on any text. For every accepted text:
//  - it has at most SPMD_MAX_NDIM dimensions, whose axes read back are
//    valid axis names, none used twice;
//  - parse(to_string(parse(s))) equals parse(s), with the same dimensions,
//    and to_string is a fixed point;
//  - the short form written from the dimensions parses to an equal spec;
//  - the spec built with spmd_spec_create/append from those dimensions
//    equals it and prints the same;
//  - a trailing None does not change equality, a new split dimension does;
//  - accessors past the end fail with SPMD_ERR_OUT_OF_RANGE and write
//    nothing; appending an axis already used, or a dimension past
//    SPMD_MAX_NDIM, fails and leaves the spec as it was.
// For every refused text: SPMD_ERR_INVALID_ARGUMENT, the output untouched,
// and a message from spmd_spec_parse that quotes the text and points at a
// column inside it.
#include "fuzz_common.h"

using fuzz::Dims;

namespace {

std::string short_form(const Dims &dims) {
  std::string s;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (d) s += ", ";
    if (dims[d].empty()) {
      s += "None";
    } else if (dims[d].size() == 1) {
      s += dims[d][0];
    } else {
      s += "(";
      for (size_t i = 0; i < dims[d].size(); ++i) s += (i ? ", " : "") + dims[d][i];
      s += ")";
    }
  }
  return s;
}

spmd_spec *build(const Dims &dims) {
  spmd_spec *b = nullptr;
  FUZZ_CHECK(spmd_spec_create(&b) == SPMD_OK && b != nullptr, "spmd_spec_create failed");
  for (const auto &axes : dims) {
    std::vector<const char *> ptrs;
    for (const auto &a : axes) ptrs.push_back(a.c_str());
    const spmd_status st = spmd_spec_append(b, ptrs.data(), ptrs.size());
    FUZZ_CHECK(st == SPMD_OK, "spmd_spec_append refused a dimension parse accepted");
  }
  return b;
}

void check_refused(spmd_status st, const std::string &text, spmd_spec *out) {
  FUZZ_CHECK(st == SPMD_ERR_INVALID_ARGUMENT, "spmd_spec_parse refused \"%s\" with status %d",
             text.c_str(), (int)st);
  FUZZ_CHECK(out == fuzz::sentinel<spmd_spec>(), "a failed spmd_spec_parse wrote its output");
  fuzz::check_failure(st, "spmd_spec_parse", "'" + text + "'");
  // A syntax error points at a column of the text (1-based, one past the
  // end for "expected more").
  const std::string msg = spmd_last_error();
  const std::string quoted = "'" + text + "': column ";
  const size_t at = msg.find(quoted);
  if (at != std::string::npos) {
    const long column = std::strtol(msg.c_str() + at + quoted.size(), nullptr, 10);
    FUZZ_CHECK(column >= 1 && column <= (long)text.size() + 1,
               "column %ld is outside the text of %zu characters", column, text.size());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz::Bytes in(data, size);
  const std::string text = fuzz::c_text(in.rest());

  spmd_clear_error();
  spmd_spec *spec = fuzz::sentinel<spmd_spec>();
  const spmd_status st = spmd_spec_parse(text.c_str(), &spec);
  if (st != SPMD_OK) {
    check_refused(st, text, spec);
    return 0;
  }

  const Dims dims = fuzz::spec_dims(spec);
  FUZZ_CHECK(dims.size() <= SPMD_MAX_NDIM, "parse accepted %zu dimensions", dims.size());
  std::vector<std::string> seen;
  for (const auto &axes : dims)
    for (const auto &a : axes) {
      FUZZ_CHECK(fuzz::valid_axis_name(a), "parse accepted the axis name \"%s\"", a.c_str());
      for (const auto &b : seen) FUZZ_CHECK(a != b, "parse accepted axis \"%s\" twice", a.c_str());
      seen.push_back(a);
    }

  // JAX's text round trips, and printing again changes nothing.
  const std::string printed = fuzz::spec_string(spec);
  spmd_spec *again = nullptr;
  FUZZ_CHECK(spmd_spec_parse(printed.c_str(), &again) == SPMD_OK,
             "to_string gave \"%s\", which does not parse", printed.c_str());
  FUZZ_CHECK(fuzz::specs_equal(spec, again), "\"%s\" parses to a different spec",
             printed.c_str());
  FUZZ_CHECK(fuzz::spec_dims(again) == dims, "\"%s\" parses to other dimensions",
             printed.c_str());
  FUZZ_CHECK(fuzz::spec_string(again) == printed, "to_string is not a fixed point on \"%s\"",
             printed.c_str());
  spmd_spec_destroy(again);

  // The short form names the same dimensions.
  const std::string brief = short_form(dims);
  spmd_spec *from_short = nullptr;
  FUZZ_CHECK(spmd_spec_parse(brief.c_str(), &from_short) == SPMD_OK,
             "the short form \"%s\" does not parse", brief.c_str());
  FUZZ_CHECK(fuzz::spec_dims(from_short) == dims, "the short form \"%s\" reads back otherwise",
             brief.c_str());
  spmd_spec_destroy(from_short);

  // The structured form is the same spec.
  spmd_spec *built = build(dims);
  FUZZ_CHECK(fuzz::specs_equal(spec, built), "the appended spec differs from \"%s\"",
             text.c_str());
  FUZZ_CHECK(fuzz::spec_string(built) == printed, "the appended spec prints otherwise");

  // Accessors past the end write nothing.
  const size_t ndim = dims.size();
  size_t n = 12345;
  FUZZ_CHECK(spmd_spec_dim_size(spec, ndim, &n) == SPMD_ERR_OUT_OF_RANGE && n == 12345,
             "spmd_spec_dim_size past the last dimension");
  const char *name = fuzz::sentinel<const char>();
  const size_t d = ndim ? text.size() % ndim : 0;
  FUZZ_CHECK(spmd_spec_dim_axis(spec, d, ndim ? dims[d].size() : 0, &name) ==
                     SPMD_ERR_OUT_OF_RANGE &&
                 name == fuzz::sentinel<const char>(),
             "spmd_spec_dim_axis past the last axis");

  // Appending an axis the spec already uses fails, naming it when the
  // spec has room for another dimension, and changes nothing.
  if (!seen.empty()) {
    const char *dup = seen[0].c_str();
    const spmd_status a = spmd_spec_append(built, &dup, 1);
    fuzz::check_failure(a, "spmd_spec_append", ndim < SPMD_MAX_NDIM ? "'" + seen[0] + "'" : "");
    FUZZ_CHECK(fuzz::spec_string(built) == printed, "a failed append changed the spec");
  }

  // Trailing Nones do not count; a new split dimension does. The new name
  // is longer than the text, so the spec cannot use it yet. Past
  // SPMD_MAX_NDIM dimensions an append fails and changes nothing.
  const std::string fresh = "q" + std::string(text.size(), 'q');
  const char *fresh_ptr = fresh.c_str();
  if (ndim + 2 <= SPMD_MAX_NDIM) {
    FUZZ_CHECK(spmd_spec_append(built, nullptr, 0) == SPMD_OK, "appending None failed");
    FUZZ_CHECK(fuzz::specs_equal(spec, built), "a trailing None made \"%s\" unequal",
               printed.c_str());
    FUZZ_CHECK(spmd_spec_append(built, &fresh_ptr, 1) == SPMD_OK, "appending a new axis failed");
    FUZZ_CHECK(!fuzz::specs_equal(spec, built), "a new split dimension left \"%s\" equal",
               printed.c_str());
  } else if (ndim == SPMD_MAX_NDIM) {
    fuzz::check_failure(spmd_spec_append(built, &fresh_ptr, 1), "spmd_spec_append", "");
    FUZZ_CHECK(fuzz::spec_string(built) == printed, "a failed append changed the spec");
  }

  spmd_spec_destroy(built);
  spmd_spec_destroy(spec);
  return 0;
}
